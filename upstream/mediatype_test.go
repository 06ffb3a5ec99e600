package upstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/configtest"
)

// TestJSONMediaTypes_ADeclaredTypeIsReadAsJSONAndNoOther: DynamoDB answers
// application/x-amz-json-1.0. Declared in json_media_types, its answers
// are read; undeclared, or beside another type the upstream did not
// declare, they stay a changed content type.
func TestJSONMediaTypes_ADeclaredTypeIsReadAsJSONAndNoOther(t *testing.T) {
	ctype := "application/x-amz-json-1.0"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write([]byte(`[{"id":"a"},{"id":"b"}]`))
	}))
	t.Cleanup(srv.Close)
	scan := func(extra string) ([]string, error) {
		rt := runtimeWith(t, configtest.OneUpstream(srv.URL, extra), func(string) string { return "t" })
		// One page without a Link header: read, its end unproven.
		sink, _, err := scanAll(t, rt.Resources["items"], nil, Budget{MaxPages: 5})
		return sink.ids, err
	}
	ids, err := scan("json_media_types: [application/x-amz-json-1.0]")
	if err != nil || !strings.HasPrefix(strings.Join(ids, ","), "a,b") {
		t.Fatalf("declared: %v %v", ids, err)
	}
	changed := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "UPSTREAM_CONTENT_TYPE_CHANGED") && strings.Contains(err.Error(), ctype)
	}
	if _, err := scan(""); !changed(err) {
		t.Fatalf("undeclared: want a changed content type naming %s, got %v", ctype, err)
	}
	ctype = "application/x-amz-json-1.1"
	if _, err := scan("json_media_types: [application/x-amz-json-1.0]"); !changed(err) {
		t.Fatalf("another version: want a changed content type, got %v", err)
	}
	ctype = "application/x-amz-json-1.0; charset=utf-8"
	if _, err := scan("json_media_types: [application/x-amz-json-1.0]"); err != nil {
		t.Fatalf("with a charset: %v", err)
	}
}

// TestJSONMediaTypes_EachBadTypeIsNamed: a type with parameters, without
// a subtype, or in another case is refused with its index.
func TestJSONMediaTypes_EachBadTypeIsNamed(t *testing.T) {
	_, err := config.Parse(configtest.OneUpstream("http://127.0.0.1:1", "json_media_types: [application/x-amz-json-1.0, \"application/json; charset=utf-8\", json, Application/X-Amz-Json-1.1]"))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, i := range []string{"1", "2", "3"} {
		if !strings.Contains(err.Error(), "upstreams.api.json_media_types."+i+": must be a media type") {
			t.Errorf("index %s not named in:\n%v", i, err)
		}
	}
	if strings.Contains(err.Error(), "json_media_types.0") {
		t.Errorf("a good type refused:\n%v", err)
	}
}
