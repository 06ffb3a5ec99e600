package write

import (
	"net/url"
	"testing"

	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/internal/configtest"
)

// TestFormEncodedWrite_SendsItsFieldsEncodedOnceAndItsQueryApart: a
// MediaWiki edit is POST /api.php?action=edit&pageid={{id}} with its text
// in a form body; the id goes into the query as one value, the body's
// values are form-encoded once, whatever they hold.
func TestFormEncodedWrite_SendsItsFieldsEncodedOnceAndItsQueryApart(t *testing.T) {
	y := configtest.Lines(
		"environment: test",
		"upstreams:",
		"  wiki:",
		"    base_url: http://127.0.0.1:1/w",
		"resources:",
		"  pages:",
		"    upstream: wiki",
		"    list: {path: /api.php, params: {action: query, list: allpages}, items: query.allpages}",
		"    pagination: {dialect: continue_object, page_size_param: aplimit}",
		"    get: {path: \"/api.php?action=query&prop=info&pageids={{id}}\", item: query.pages.0}",
		"    id_field: pageid",
		"    version_field: lastrevid",
		"    fields: {pageid: {type: integer}, lastrevid: {type: integer}, text: {type: string}}",
		"actions:",
		"  set_text:",
		"    resource: pages",
		"    request:",
		"      method: POST",
		"      path: \"/api.php?action=edit&format=json&pageid={{id}}\"",
		"      encoding: form",
		"      body: {text: \"{{params.text}}\", summary: \"airlock {{operation_id}}\", baserevid: \"{{version}}\", bot: true}",
		"    params: {type: object, required: [text], properties: {text: {type: string}}}",
		"    conditional: reread",
		"    effect: [{field: text, to: \"{{params.text}}\"}]",
	)
	a := actionFrom(t, string(y), "set_text")
	req, err := Request(a, template.Vars{ID: "12&action=delete", Version: "7", OperationID: "op_1",
		Params: map[string]any{"text": "a & b = c\n[[Category:X, \"y\"]] Ünïcode"}}, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.Path != "/w/api.php" || req.URL.Query().Get("pageid") != "12&action=delete" || req.URL.Query().Get("action") != "edit" {
		t.Errorf("url = %s, want the id as one pageid value", req.URL)
	}
	if ct := req.Header.Get("Content-Type"); ct != FormContentType {
		t.Errorf("content type = %q", ct)
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{"text": {"a & b = c\n[[Category:X, \"y\"]] Ünïcode"}, "summary": {"airlock op_1"}, "baserevid": {"7"}, "bot": {"true"}}
	if form.Encode() != want.Encode() {
		t.Errorf("form = %v, want %v", form, want)
	}
}
