package dialect

import (
	"encoding/base64"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// lastKey is how the cursor dialect derives the next cursor from the last
// item when the upstream hands out none (Stripe's starting_after: the
// last id; etcd's range key: the last key made exclusive).
type lastKey struct {
	path      string
	exclusive string
	base64    bool
}

// of reads the cursor from the last item.
func (k lastKey) of(item any) (string, error) {
	v, ok := jsonvalue.GetID(item, k.path)
	if !ok {
		return "", transport.BadResponse("the last item has no %s to continue from", config.DisplayPath(k.path))
	}
	if k.exclusive != config.CursorNulSuffix {
		return v, nil
	}
	b := []byte(v)
	if k.base64 {
		var err error
		if b, err = base64.StdEncoding.DecodeString(v); err != nil {
			return "", transport.BadResponse("the last item's %s is not base64 as declared", config.DisplayPath(k.path))
		}
	}
	// The smallest key after the last one: its bytes and a NUL byte.
	b = append(b, 0)
	if k.base64 {
		return base64.StdEncoding.EncodeToString(b), nil
	}
	return string(b), nil
}

// AbsentZero reports whether the upstream omits the member at path when it
// holds its zero value, and doc does not hold it.
func AbsentZero(p config.PaginationConfig, doc any, path string) bool {
	if path == "" || !slices.Contains(p.AbsentMeansZero, path) {
		return false
	}
	_, ok := jsonvalue.Get(doc, path)
	return !ok
}
