package write

import (
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// actionFrom is the action name of a configuration the test writes.
func actionFrom(t *testing.T, yaml, name string) *upstream.Action {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := rt.Actions[name]
	if a == nil {
		t.Fatalf("the configuration has no action %s", name)
	}
	return a
}
