package selection_test

// Tests of the fixture API's shortcuts (the benchmarks measure against it):
// list answers come from a list shared by the requests that see the same
// version of a stored collection, and a write's answer copies the record
// without a JSON round trip. Neither may change what the fixture answers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// items cuts a continue page's metadata off.
func items(answer string) string {
	if i := strings.Index(answer, `"metadata"`); i >= 0 {
		return answer[:i]
	}
	return answer
}

// serveOnce answers one GET as the server would over HTTP.
func serveOnce(api *fixtures.Server, path, token string) string {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return fmt.Sprintf("%d %s %s %s", rec.Code, rec.Header().Get("X-Visibility"), rec.Header().Get("Link"), rec.Body.String())
}

// TestFixtureLists_AnswerLikeAFreshServer: after every kind of mutation, a
// server that served the collection before answers every list request
// exactly as a new server holding the same records answers it first.
func TestFixtureLists_AnswerLikeAFreshServer(t *testing.T) {
	t.Parallel()
	warm := &fixtures.Server{OnUnknownRoute: func(m, p string) { t.Errorf("fixture: unexpected %s %s", m, p) }}
	datasets := map[string]string{fixtures.DatasetSubscriptions: "sub_00010", fixtures.DatasetServiceAccounts: "sa_00010", fixtures.DatasetProjects: "proj_0010"}
	// The first 150 records of each data set (hidden service accounts
	// among them): more than a list of 100 holds, and a match for every
	// filter the queries use (checked below), so no comparison is of
	// empty lists.
	const n = 150
	warm.SetCollection(fixtures.DatasetSubscriptions, fixtures.NewCollection(fixtures.Subscriptions()[:n]))
	warm.SetCollection(fixtures.DatasetServiceAccounts, fixtures.NewCollection(fixtures.ServiceAccounts()[:n]))
	warm.SetCollection(fixtures.DatasetProjects, fixtures.NewCollection(fixtures.Projects()[:n]))
	for _, q := range []string{"/x/offset/subscriptions?limit=50&status=past_due", "/x/offset/subscriptions?limit=10&tags=vip",
		"/x/offset/service_accounts?limit=50&owner=none", "/x/cursor/projects?limit=50&state=active,inactive"} {
		if got := serveOnce(warm, q, fixtures.DefaultAdminToken); !strings.Contains(got, `"id"`) {
			t.Fatalf("%s matches nothing in the first %d records: %.300s", q, n, got)
		}
	}
	if a, o := serveOnce(warm, "/x/offset/service_accounts?limit=100", fixtures.DefaultAdminToken),
		serveOnce(warm, "/x/offset/service_accounts?limit=100", fixtures.DefaultToken); a == o {
		t.Fatal("no service account among the first records is hidden from the ordinary token")
	}
	// The reference is a new server holding copies of the records, made
	// once per check; before each of its answers a request with a filter
	// no other uses makes sure it does not answer from a list it kept.
	var ref *fixtures.Server
	fresh := func(path, token string) string {
		ds := strings.Split(strings.Split(path, "?")[0], "/")[3]
		serveOnce(ref, "/x/offset/"+ds+"?limit=1&no_such_field=1", fixtures.DefaultAdminToken)
		return serveOnce(ref, path, token)
	}
	queries := []string{
		"/x/offset/%s?limit=100", "/x/cursor/%s?limit=7", "/x/cursor/%s?limit=5&starting_after=%s", "/x/cursor_next/%s?limit=9",
		"/x/offset/%s?limit=11&offset=20", "/x/page/%s?perPage=13&page=3", "/x/link/%s?per_page=6&page=2",
		"/x/continue/%s?limit=8", "/x/offset/%s?limit=50&status=past_due", "/x/offset/%s?limit=50&owner=none",
		"/x/cursor/%s?limit=50&state=active,inactive", "/x/offset/%s?limit=10&tags=vip", "/x/offset/%s?limit=100",
	}
	tokens := []string{fixtures.DefaultAdminToken, fixtures.DefaultToken, fixtures.DefaultToken, fixtures.DefaultAdminToken}
	check := func(step string) {
		t.Helper()
		ref = &fixtures.Server{}
		for ds := range datasets {
			ref.SetCollection(ds, fixtures.NewCollection(warm.Collection(ds).All()))
		}
		for ds, after := range datasets {
			for _, q := range queries {
				path := strings.Replace(q, "%s", ds, 1)
				path = strings.Replace(path, "%s", after, 1)
				for _, tok := range tokens {
					if strings.HasPrefix(path, "/x/continue/") {
						// Continue tokens number snapshots per server:
						// compare the items only.
						got, want := serveOnce(warm, path, tok), fresh(path, tok)
						if items(got) != items(want) {
							t.Fatalf("%s: %s (%s):\nserved %.300s\nfresh  %.300s", step, path, tok, got, want)
						}
						continue
					}
					got, want := serveOnce(warm, path, tok), fresh(path, tok)
					if got != want {
						t.Fatalf("%s: %s (%s):\nserved %.300s\nfresh  %.300s", step, path, tok, got, want)
					}
				}
			}
		}
	}
	// Each check starts and ends with a data set's main list: a shared
	// list kept past a change would show first thing after it.
	check("first")
	check("again")
	subs := warm.Collection(fixtures.DatasetSubscriptions)
	subs.Update("sub_00012", func(r fixtures.Record) { r["status"] = "past_due"; r["tags"] = []any{"vip", "new"} })
	check("after an update")
	subs.Insert(3, fixtures.Record{"id": "sub_00010a", "status": "active", "tags": []any{}})
	check("after an insert")
	subs.Delete("sub_00011")
	check("after a delete")
	subs.Move("sub_00002", 40)
	check("after a move")
	sas := warm.Collection(fixtures.DatasetServiceAccounts)
	sas.Update("sa_00017", func(r fixtures.Record) { r["_hidden"] = false })
	check("after unhiding")
	warm.SetCollection(fixtures.DatasetProjects, fixtures.NewCollection(fixtures.Projects()[:40]))
	check("after replacing a collection")
}

// TestFixtureWrites_AnswerTheRecordsJSONRoundTrip: a write answers the
// written record as its JSON round trip (numbers as float64 and so on),
// whatever values the record holds.
func TestFixtureWrites_AnswerTheRecordsJSONRoundTrip(t *testing.T) {
	t.Parallel()
	api := &fixtures.Server{}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	sas := api.Collection(fixtures.DatasetServiceAccounts)
	values := []any{
		nil, true, "plain", "<b>&amp;</b> \u2028 é", "bad \xff utf-8", 7, int64(1 << 60), 9007199254740993, 0.1, 1e21, math.Copysign(0, -1),
		[]any{1, "x", nil, []any{}}, map[string]any{"k": 2, "n": map[string]any{}}, []string{"a", "b"}, json.Number("12.50"),
		map[string]any{"\xff": 1}, []any(nil), map[string]any(nil),
	}
	for i, v := range values {
		id := sas.IDs()[i]
		sas.Update(id, func(r fixtures.Record) { r["extra"] = v; r["_internal"] = "x" })
		body, _ := json.Marshal(map[string]any{"owner": map[string]any{"team": "t", "n": 1.5}})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/v1/service_accounts/"+id+"/owner", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+fixtures.DefaultAdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		rec, _ := sas.Get(id)
		clone := rec.Clone()
		for k := range clone {
			if strings.HasPrefix(k, "_") {
				delete(clone, k)
			}
		}
		want, _ := json.Marshal(clone)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			t.Fatalf("value %#v: answered %d %s, want %s", v, resp.StatusCode, got, want)
		}
	}
}
