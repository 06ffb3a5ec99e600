package mcpserver

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
)

var keyPattern = regexp.MustCompile(`^airlock-[0-9a-f]{32}$`)

// wire renders the requests the fixture saw: method, path, sorted query,
// the headers that carry meaning (never the credential or the request id),
// and the body.
func wire(t *testing.T, reqs []fixtures.RecordedRequest) []byte {
	t.Helper()
	var b strings.Builder
	for _, r := range reqs {
		q := url.Values(r.Query)
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+q.Get(k))
		}
		line := r.Method + " " + r.Path
		if len(parts) > 0 {
			line += "?" + strings.Join(parts, "&")
		}
		fmt.Fprintln(&b, line)
		if r.Accept != "" {
			fmt.Fprintln(&b, "  Accept: "+r.Accept)
		}
		if r.ContentType != "" {
			fmt.Fprintln(&b, "  Content-Type: "+r.ContentType)
		}
		if r.IdempotencyKey != "" {
			if !keyPattern.MatchString(r.IdempotencyKey) {
				t.Fatalf("idempotency key %q is not derived from (operation, target)", r.IdempotencyKey)
			}
			fmt.Fprintln(&b, "  Idempotency-Key: airlock-<sha256(operation, target)>")
		}
		if r.IfMatch != "" {
			fmt.Fprintln(&b, "  If-Match: "+r.IfMatch)
		}
		if len(r.Body) > 0 {
			fmt.Fprintln(&b, "  body: "+string(r.Body))
		}
	}
	if b.Len() == 0 {
		return []byte("(nothing sent)\n")
	}
	return []byte(b.String())
}

// TestIntentsMapToExactWireRequests: every parameter that widens or
// changes an effect (page sizes, filters, versions, conditions, keys) is on
// the wire explicitly, and a mode the operator did not choose sends nothing.
func TestIntentsMapToExactWireRequests(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		run  func(h *harness)
	}{
		{"search-inactive-projects", func(h *harness) {
			h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0})
		}},
		{"search-ownerless-service-accounts-two-pages", func(h *harness) {
			h.call("search_all", map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "max_items": 0, "max_pages": 2})
		}},
		{"search-past-due-subscriptions-in-eu", func(h *harness) {
			h.call("search_all", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "max_items": 0})
		}},
		{"pause-collection-on-one-subscription", func(h *harness) {
			p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{"sub_00076"}, "action": pauseAction})
			h.operation(h.call("commit_bulk_action", commitArgsFor(p, "execute", nil)).data["operation_id"])
		}},
		{"archive-one-project", func(h *harness) {
			p := h.call("preview_selection", map[string]any{"resource": "projects", "ids": []any{"proj_0004"}, "action": archive})
			h.approveAsOperator(p.data["selection_id"])
			h.operation(h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": archive, "mode": "execute"}).data["operation_id"])
		}},
		{"assign-owner-to-one-service-account", func(h *harness) {
			p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": []any{"sa_00002"}, "action": assignOwner})
			h.operation(h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": assignOwner, "mode": "execute"}).data["operation_id"])
		}},
		{"dry-run-writes-nothing", func(h *harness) {
			p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{"sub_00076"}, "action": pauseAction})
			h.api.ResetLog()
			h.operation(h.call("commit_bulk_action", commitArgsFor(p, "dry_run", nil)).data["operation_id"])
		}},
		{"commit-without-a-chosen-mode-sends-nothing", func(h *harness) {
			p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "ids": []any{"sub_00076"}, "action": pauseAction})
			h.api.ResetLog()
			a := commitArgsFor(p, "", nil)
			delete(a, "mode")
			r := h.call("commit_bulk_action", a)
			if problemCode(r) != envelope.ProblemInvalidArguments || fieldsOf(r.env.Problem)["mode"] == "" || r.env.Problem.StateChanged != envelope.StateNone {
				t.Fatalf("a commit without a mode must be refused, naming mode: %s", r.raw)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.run(h)
			golden(t, "testdata/wire/"+tc.name+".golden", wire(t, h.api.Requests()))
		})
	}
}
