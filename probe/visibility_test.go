package probe

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// restrictedPeer answers as WordPress does an anonymous reader: n posts,
// every one published, and 400 for a status the credential may not ask
// for (refuse) while it answers ?status=publish.
func restrictedPeer(t *testing.T, n int, refuse bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if s := q.Get("status"); s != "" && s != "publish" {
			if refuse {
				writeJSON(w, 400, map[string]any{"code": "rest_invalid_param", "message": "Invalid parameter(s): status", "data": map[string]any{"status": 400}})
			} else {
				writeJSON(w, 200, map[string]any{"total": 0, "items": []any{}})
			}
			return
		}
		off, _ := strconv.Atoi(q.Get("offset"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		items := []any{}
		for i := off; i < min(off+limit, n); i++ {
			items = append(items, map[string]any{"id": fmt.Sprint(i + 1), "status": "publish"})
		}
		writeJSON(w, 200, map[string]any{"total": n, "items": items})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func restrictedResource(t *testing.T, base, extra string) *upstream.Resource {
	t.Helper()
	y := fmt.Sprintf(`environment: test
upstreams:
  wp: {base_url: %q}
resources:
  posts:
    upstream: wp
    list: {path: /posts}
    pagination: {dialect: offset, page_size: 50}
    id_field: id
    fields:
      id: {type: string}
      status: {type: string, enum: [publish, future, draft, pending, private]}
    filters:
      status: {param: status}
%s`, base, extra)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rt.Resources["posts"]
}

// TestProbe_ARestrictedViewIsNamedWithTheDeclarationItNeeds: a filter value
// the upstream refuses for this credential while it answers another, or
// declared values a whole list of many items never holds, is a view of
// part of the collection: probe says so and proposes visibility.restricted
// with only the values seen. A resource that declares its view is OK; a
// small list whose values are missing says nothing.
func TestProbe_ARestrictedViewIsNamedWithTheDeclarationItNeeds(t *testing.T) {
	declared := "    visibility: {restricted: anonymous readers see published posts only, only: {status: [publish]}}\n"
	for _, tc := range []struct {
		name     string
		n        int
		refuse   bool
		extra    string
		status   string
		evidence []string
	}{
		{"refused_values", 30, true, "", Wrong, []string{"the upstream refuses status=future", "4 of 5 declared values of status (future, draft, pending, private) appear in none of the 30 items"}},
		{"values_never_seen_in_many_items", 150, false, "", Wrong, []string{"4 of 5 declared values of status"}},
		{"declared", 30, true, declared, OK, []string{"the resource declares its restricted view"}},
		{"few_items_and_nothing_refused", 30, false, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := restrictedResource(t, restrictedPeer(t, tc.n, tc.refuse), tc.extra)
			rep := CheckAssumptions(t.Context(), r, Options{MaxRequests: 60})
			c := checkNamed(rep, "visibility.status")
			if c.Status != tc.status {
				t.Fatalf("visibility.status = %+v; want %q\n%+v", c, tc.status, rep.Checks)
			}
			for _, want := range tc.evidence {
				if !strings.Contains(c.Evidence, want) {
					t.Errorf("evidence %q lacks %q", c.Evidence, want)
				}
			}
			if tc.status == Wrong && !strings.Contains(c.Hint, `visibility: {restricted: "the credential sees only status publish", only: {status: [publish]}}`) {
				t.Errorf("hint %q; want the declaration", c.Hint)
			}
		})
	}
}
