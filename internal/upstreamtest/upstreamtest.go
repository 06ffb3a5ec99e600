// Package upstreamtest builds the runtimes that tests of the packages
// beside upstream (write, probe) start from. It is for tests only, and
// sends no request itself: the tests' runtimes do.
package upstreamtest

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
)

// Demo starts the fixture API and initializes the demo configuration; a
// request to a route the fixture does not serve fails the test.
func Demo(t *testing.T) (*fixtures.Server, *upstream.Runtime) {
	t.Helper()
	srv := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, Runtime(t, fixtures.DemoConfig(ts.URL), Getenv)
}

// Getenv holds the fixture API's tokens: the demo token, and an admin
// token for every other credential.
func Getenv(k string) string {
	if k == fixtures.DemoTokenEnv {
		return fixtures.DefaultToken
	}
	return "admin-token"
}

// Runtime initializes a configuration reading its credentials from getenv.
func Runtime(t *testing.T, yaml []byte, getenv func(string) string) *upstream.Runtime {
	t.Helper()
	cfg, err := config.Parse(yaml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
