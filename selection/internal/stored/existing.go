package stored

import (
	"errors"
	"fmt"
)

// ErrNoStore is the error of opening, without creating it, a store that
// does not exist or holds no airlock schema.
var ErrNoStore = errors.New("no airlock store")

// ExistingSchema is what an open without migration accepts: exactly the
// schema this airlock knows. A newer schema is a NewerSchemaError; an older
// one is refused too, since only a server (which migrates on start) may
// change a store's schema.
func ExistingSchema(store string, have, known int) error {
	switch {
	case have == 0:
		return fmt.Errorf("%w at %s: it has no airlock schema", ErrNoStore, store)
	case have > known:
		return &NewerSchemaError{Store: store, Version: have, Known: known}
	case have < known:
		return fmt.Errorf("the store %s has schema version %d, older than this airlock's (%d): start this airlock's serve on it once to migrate it", store, have, known)
	}
	return nil
}
