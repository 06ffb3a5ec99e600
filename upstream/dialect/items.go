package dialect

import (
	"encoding/json"

	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// ItemDecoder decodes raw items one after another, each strictly: a member
// named twice is left out of the item and named in its dups.
type ItemDecoder struct{}

// Item returns it decoded when it is raw, else as it is. dups lists the
// members it names twice (dotted paths within the item).
func (ItemDecoder) Item(it any) (v any, dups []string, err error) {
	raw, ok := it.(json.RawMessage)
	if !ok {
		return it, nil, nil
	}
	v, dups, err = jsonvalue.DecodeRecord(raw)
	if err != nil {
		return nil, nil, transport.BadResponse("the body is not valid JSON")
	}
	return v, dups, nil
}

// ItemValue is an item decoded, for the dialects that read the first or
// the last of a page (a keyset cursor, an overlap check, sort values); a
// member it names twice is absent from it, so that nothing reads it.
func ItemValue(it any) any {
	v, _, err := ItemDecoder{}.Item(it)
	if err != nil {
		return nil
	}
	return v
}

// IsObject reports whether an item, raw or decoded, is a JSON object.
func IsObject(it any) bool {
	switch x := it.(type) {
	case map[string]any:
		return true
	case json.RawMessage:
		return len(x) > 0 && x[0] == '{'
	}
	return false
}
