package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// TestInitDraft_IsRefusedByCheckUntilEachTODOIsResolved: init writes what
// it could not decide as TODO, check refuses the file naming the line, and
// the file runs once a person has decided.
func TestInitDraft_IsRefusedByCheckUntilEachTODOIsResolved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "airlock.yaml")
	spec := filepath.Join("..", "..", "draft", "testdata", "json-server.openapi.yaml")
	var out, errb bytes.Buffer
	if code := run([]string{"init", "--openapi", spec, "-o", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "2 decision(s) left as TODO") {
		t.Errorf("init does not list what is left to decide: %s", errb.String())
	}
	if code := run([]string{"init", "--openapi", spec, "-o", path}, nil, &out, &errb); code == 0 {
		t.Error("init overwrote an existing file")
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "unresolved TODO") || !strings.Contains(errb.String(), "line ") {
		t.Fatalf("check of a draft with TODOs: exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(path)
	resolved := strings.NewReplacer(`"TODO(name this deployment, e.g. prod or staging)"`, "test",
		`"TODO(the API's base URL; the document names no server)"`, "http://127.0.0.1:1").Replace(string(b))
	if err := os.WriteFile(path, []byte(resolved), 0o600); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("check of the resolved draft: exit %d: %s", code, errb.String())
	}
}

// TestProbe_ExitsNonZeroOnlyWhenAnAssumptionIsWrong runs probe against the
// demo API with the demo configuration (ok) and with a wrong items path.
func TestProbe_ExitsNonZeroOnlyWhenAnAssumptionIsWrong(t *testing.T) {
	api := httptest.NewServer(&fixtures.Server{})
	t.Cleanup(api.Close)
	t.Setenv(fixtures.DemoTokenEnv, fixtures.DefaultToken)
	path := filepath.Join(t.TempDir(), "demo.yaml")
	cfg := string(fixtures.DemoConfig(api.URL))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"probe", "--config", path, "--resource", "subscriptions"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("probe of the demo configuration: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "pagination.end") {
		t.Errorf("probe does not report the end check:\n%s", out.String())
	}
	broken := strings.Replace(cfg, "/v1/subscriptions, items: items", "/v1/subscriptions, items: records", 1)
	if broken == cfg {
		t.Fatal("the demo configuration has no subscriptions items path to break")
	}
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"probe", "--config", path, "--resource", "subscriptions"}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), "WRONG") || !strings.Contains(out.String(), "list.items") {
		t.Fatalf("probe of a wrong items path: exit %d\n%s", code, out.String())
	}
}

// tasksDoc is an Asana-shaped document: the list's offset is a token the
// API returns, and the answer schema does not say where.
const tasksDoc = `openapi: 3.0.0
info: {title: Tasks, version: "1"}
paths:
  /tasks:
    get:
      operationId: getTasks
      parameters:
        - {name: limit, in: query, description: "Results per page. The number of objects to return per page. The value must be between 1 and 100.", schema: {type: integer}}
        - {name: offset, in: query, description: "Offset token. An offset to the next page returned by the API. A pagination request will return an offset token, which can be used as an input parameter to the next request.", schema: {type: string}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {data: {type: array, items: {$ref: "#/components/schemas/Task"}}}}
  /tasks/{task_gid}:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {data: {$ref: "#/components/schemas/Task"}}}
  /projects:
    get:
      parameters: [{name: limit, in: query, schema: {type: integer}}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {data: {type: array, items: {type: object, properties: {gid: {type: string}}}}}}}}}
components:
  schemas:
    Task:
      type: object
      properties:
        gid: {type: string}
        name: {type: string}
        completed: {type: boolean}
`

// tasksAPI answers as Asana does: {data, next_page: {offset, path, uri}},
// next_page null on the last page.
func tasksAPI(t *testing.T, n int) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		task := func(i int) map[string]any {
			return map[string]any{"gid": strconv.Itoa(1000 + i), "name": "task " + strconv.Itoa(i), "completed": i%2 == 0}
		}
		if gid, ok := strings.CutPrefix(r.URL.Path, "/tasks/"); ok {
			i, _ := strconv.Atoi(gid)
			_ = json.NewEncoder(w).Encode(map[string]any{"data": task(i - 1000)})
			return
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit == 0 {
			limit = 20
		}
		from := 0
		if off := r.URL.Query().Get("offset"); off != "" {
			b, _ := base64.RawURLEncoding.DecodeString(off)
			from, _ = strconv.Atoi(string(b))
		}
		var data []any
		for i := from; i < min(from+limit, n); i++ {
			data = append(data, task(i))
		}
		body := map[string]any{"data": data, "next_page": nil}
		if from+limit < n {
			off := base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(from + limit)))
			body["next_page"] = map[string]any{"offset": off, "path": "/tasks?limit=" + strconv.Itoa(limit) + "&offset=" + off, "uri": srv.URL + "/tasks?offset=" + off}
		}
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestInitResourceThenProbeFix_LeavesAFileCheckAndProbeAccept: the focused
// path of the README. init --resource drafts only the list named, the
// dialect the document establishes (a cursor: its offset is a token the
// API returns) and a TODO for what it does not say (where the answer holds
// the token); check refuses that; probe --fix finds it on the live API and
// writes it with its evidence, keeping the user's own comments; check and
// probe then accept the file.
func TestInitResourceThenProbeFix_LeavesAFileCheckAndProbeAccept(t *testing.T) {
	srv := tasksAPI(t, 23)
	dir := t.TempDir()
	spec := filepath.Join(dir, "tasks.yaml")
	if err := os.WriteFile(spec, []byte(tasksDoc), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "airlock.yaml")
	var out, errb bytes.Buffer
	if code := run([]string{"init", "--openapi", spec, "--resource", "/tasks", "--environment", "test", "--base-url", srv.URL, "-o", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("init: exit %d: %s", code, errb.String())
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "  projects:") || !strings.Contains(string(b), "dialect: cursor, cursor_param: offset, next_cursor: \"TODO(") {
		t.Fatalf("init --resource /tasks drafted:\n%s", b)
	}
	if !strings.Contains(errb.String(), "1 decision(s) left as TODO") {
		t.Errorf("init: %s", errb.String())
	}
	if err := os.WriteFile(path, append([]byte("# my own note, kept\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "unresolved TODO") {
		t.Fatalf("check of the draft: exit %d: %s", code, errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"probe", "--config", path, "--fix"}, nil, &out, &errb); code != 0 {
		t.Fatalf("probe --fix: exit %d\n%s%s", code, out.String(), errb.String())
	}
	fixed, _ := os.ReadFile(path)
	for _, want := range []string{"# my own note, kept\n", "next_cursor: next_page.offset", "# probe --fix: a walk at page size"} {
		if !strings.Contains(string(fixed), want) {
			t.Errorf("the fixed file lacks %q:\n%s", want, fixed)
		}
	}
	errb.Reset()
	if code := run([]string{"check", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("check of the fixed file: exit %d: %s\n%s", code, errb.String(), fixed)
	}
	out.Reset()
	if code := run([]string{"probe", "--config", path}, nil, &out, &errb); code != 0 {
		t.Fatalf("probe of the fixed file: exit %d\n%s", code, out.String())
	}
}
