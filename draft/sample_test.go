package draft

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestDraftFromSample_ReadsTheWholeListItDescribes: a draft made from one
// live page of each pagination dialect names that dialect, and, when it
// needs no decision, is a configuration that reads the whole list to a
// proven end: 120 of 120, complete. What the sample could not show (the
// parameter that takes a next cursor) is a TODO that stops the draft from
// running.
func TestDraftFromSample_ReadsTheWholeListItDescribes(t *testing.T) {
	const n = 120
	api := &fixtures.Server{}
	api.SetCollection(fixtures.DatasetSubscriptions, fixtures.SyntheticSubscriptions(n, nil))
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	getenv := func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return ""
	}
	for _, tc := range []struct{ dialect, pagination, todo string }{
		{fixtures.DialectCursor, "dialect: cursor, has_more: has_more, cursor_param: starting_after", ""},
		{fixtures.DialectLink, "dialect: link", ""},
		{fixtures.DialectOffset, "dialect: offset, offset_param: offset", ""},
		{fixtures.DialectPage, "dialect: page, page_param: page", ""},
		{fixtures.DialectContinue, "dialect: continue", ""},
		{fixtures.DialectCursorNext, "next_cursor: response_metadata.next_cursor", "the query parameter that takes the next cursor"},
	} {
		t.Run(tc.dialect, func(t *testing.T) {
			d, err := FromSample(t.Context(), srv.URL+"/x/"+tc.dialect+"/"+fixtures.DatasetSubscriptions,
				SampleOptions{Options: Options{Environment: "test", Resources: []string{"subscriptions"}}, CredentialEnv: fixtures.DemoTokenEnv, Getenv: getenv})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(d.YAML), tc.pagination) {
				t.Fatalf("the draft does not say %q:\n%s", tc.pagination, d.YAML)
			}
			if strings.Contains(string(d.YAML), fixtures.DefaultToken) {
				t.Fatal("the draft holds the credential's value")
			}
			cfg, err := upstream.ParseConfig(d.YAML)
			var rt *upstream.Runtime
			if err == nil {
				rt, err = cfg.Initialize(t.Context(), upstream.Options{Getenv: getenv})
			}
			if tc.todo != "" {
				var errs upstream.ConfigErrors
				if len(d.TODOs) != 1 || !strings.Contains(d.TODOs[0], tc.todo) || !errors.As(err, &errs) || !strings.Contains(err.Error(), tc.todo) {
					t.Fatalf("TODOs %v, error %v; want the draft refused for %q", d.TODOs, err, tc.todo)
				}
				return
			}
			if err != nil || len(d.TODOs) > 0 {
				t.Fatalf("TODOs %v, error %v\n%s", d.TODOs, err, d.YAML)
			}
			s := rt.Resources["subscriptions"].NewScan(upstream.ScanSpec{RequestID: "t"})
			if err := s.Run(t.Context(), upstream.Budget{MaxPages: 100, Deadline: time.Minute}); err != nil {
				t.Fatal(err)
			}
			if o := s.Outcome(); !o.ScanComplete || o.Matched != n {
				t.Fatalf("the drafted configuration read %d of %d, complete %v (%v)", o.Matched, n, o.ScanComplete, o.Reasons)
			}
		})
	}
}
