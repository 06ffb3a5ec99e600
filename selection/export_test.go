package selection

import (
	"context"

	"github.com/airlock-mcp/airlock/upstream"
)

// Exported for the external tests that need a real store (the stores
// import this package).
var (
	Streamable   = streamable
	AppendRecord = appendRecord
)

// RememberCategories records sel's group values as approved for a, as a
// commit under an approval does.
func (e *Engine) RememberCategories(ctx context.Context, sel *Selection, a *upstream.Action) error {
	return e.rememberCategories(ctx, sel, a)
}
