package probe

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// nullDocs are 60 documents whose owner is "ann", null, or absent.
func nullDocs() []map[string]any {
	var out []map[string]any
	for i := range 60 {
		d := map[string]any{"id": fmt.Sprint(i + 1)}
		switch i % 3 {
		case 0:
			d["owner"] = "ann"
		case 1:
			d["owner"] = nil
		}
		out = append(out, d)
	}
	return out
}

// mangoMatch evaluates the selectors airlock sends, as CouchDB does: a
// bare null or $eq null is present and null only, $exists false absent.
func mangoMatch(d map[string]any, sel map[string]any) bool {
	for k, v := range sel {
		switch k {
		case "$and", "$or":
			any1 := false
			for _, s := range v.([]any) {
				m := mangoMatch(d, s.(map[string]any))
				if k == "$and" && !m {
					return false
				}
				any1 = any1 || m
			}
			if k == "$or" && !any1 {
				return false
			}
			continue
		}
		got, present := d[strings.ReplaceAll(k, `\.`, ".")]
		op, isOp := v.(map[string]any)
		if !isOp {
			op = map[string]any{"$eq": v}
		}
		for o, want := range op {
			switch o {
			case "$exists":
				if present != want.(bool) {
					return false
				}
			case "$eq":
				if !present || got != want {
					return false
				}
			case "$gt":
				// the list's own scope: every document
			default:
				return false
			}
		}
	}
	return true
}

func nullPeer(t *testing.T) string {
	t.Helper()
	docs := nullDocs()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var keep func(map[string]any) bool
		var skip, limit int
		switch r.URL.Path {
		case "/db/_find":
			var body struct {
				Selector map[string]any `json:"selector"`
				Skip     int            `json:"skip"`
				Limit    int            `json:"limit"`
			}
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
			keep = func(d map[string]any) bool { return mangoMatch(d, body.Selector) }
			skip, limit = body.Skip, body.Limit
		case "/odata/Accounts":
			q := r.URL.Query()
			skip, _ = strconv.Atoi(q.Get("$skip"))
			limit, _ = strconv.Atoi(q.Get("$top"))
			// This service reads eq null as present and null only.
			switch f := q.Get("$filter"); f {
			case "":
				keep = func(map[string]any) bool { return true }
			case "owner eq null":
				keep = func(d map[string]any) bool { v, ok := d["owner"]; return ok && v == nil }
			case "owner eq 'ann'":
				keep = func(d map[string]any) bool { return d["owner"] == "ann" }
			default:
				writeJSON(w, 400, map[string]any{"error": "unsupported " + f})
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		var out []any
		for _, d := range docs {
			if keep(d) {
				out = append(out, d)
			}
		}
		page := []any{}
		if skip < len(out) {
			page = out[skip:min(skip+limit, len(out))]
		}
		writeJSON(w, 200, map[string]any{"docs": page, "value": page})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestProbe_AnExpressionWhoseNullIsPresentAndNullOnlyIsWrong: airlock's
// null is absent or null. An expression language whose null the upstream
// reads as present and null only (a service's OData eq null, Mango's bare
// null) hides the absent ones from every filtered answer: probe names it;
// the Mango selector airlock builds selects both, and is OK.
func TestProbe_AnExpressionWhoseNullIsPresentAndNullOnlyIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name, list, pagination, status string
	}{
		{"odata_eq_null", `{path: /odata/Accounts, items: value, expression: {param: $filter, language: odata}}`,
			`{dialect: offset, offset_param: $skip, page_size_param: $top, total: none, page_size: 10}`, Wrong},
		{"mango", `{path: /db/_find, method: POST, items: docs, body: {selector: {_id: {$gt: null}}}, expression: {param: selector, language: mango}}`,
			`{dialect: offset, offset_param: skip, page_size_param: limit, total: none, page_size: 10}`, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			y := fmt.Sprintf("environment: test\nupstreams:\n  api: {base_url: %q}\nresources:\n  accounts:\n    upstream: api\n    list: %s\n    pagination: %s\n    id_field: id\n    fields: {id: {type: string}, owner: {type: string, nullable: true}}\n    filters:\n      owner: {expression: owner}\n",
				nullPeer(t), tc.list, tc.pagination)
			cfg, err := config.Parse([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep := CheckAssumptions(t.Context(), rt.Resources["accounts"], Options{MaxRequests: 80})
			c := checkNamed(rep, "filters.owner.expression_null")
			if c.Status != tc.status {
				t.Fatalf("filters.owner.expression_null = %+v; want %s\n%+v", c, tc.status, rep.Checks)
			}
			if tc.status == Wrong && (!strings.Contains(c.Evidence, "airlock's own check of the whole list finds 40; 20 are left out") || !strings.Contains(c.Hint, "absent or null")) {
				t.Errorf("evidence %q, hint %q", c.Evidence, c.Hint)
			}
		})
	}
}
