package upstream

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
)

func runtimeFor(t *testing.T, yaml []byte) *Runtime {
	t.Helper()
	return runtimeWith(t, yaml, func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return "admin-token"
	})
}

// runtimeWith initializes a configuration reading its credentials from
// getenv.
func runtimeWith(t *testing.T, yaml []byte, getenv func(string) string) *Runtime {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := Initialize(context.Background(), cfg, Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

type collect struct{ ids []string }

func (c *collect) Add(it *Item) error { c.ids = append(c.ids, it.ID); return nil }

func scanAll(t *testing.T, r *Resource, filter map[string]any, b Budget) (*collect, Outcome, error) {
	t.Helper()
	sink := &collect{}
	s := r.NewScan(ScanSpec{Filter: filter, Sink: sink, RequestID: "test"})
	if b.Deadline == 0 {
		b.Deadline = 30 * time.Second
	}
	if b.MaxPages == 0 {
		b.MaxPages = 10000
		b.PagesLimitSource = "airlock"
	}
	err := s.Run(context.Background(), b)
	return sink, s.Outcome(), err
}
