package review_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/selection/sqlitestore"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// The codes no tool answers with, only an operator's channel such as this
// page: a test here must make each appear.
var (
	producedMu sync.Mutex
	produced   = map[envelope.ProblemCode]bool{}
	pageCodes  = []envelope.ProblemCode{envelope.ProblemReviewAccessDenied, envelope.ProblemReviewFormInvalid, envelope.ProblemApprovalDecided}
)

func record(code envelope.ProblemCode) {
	producedMu.Lock()
	defer producedMu.Unlock()
	produced[code] = true
}

// TestMain fails the suite when one of those codes was produced by no test
// (when the whole suite ran).
func TestMain(m *testing.M) {
	code := m.Run()
	if run := flag.Lookup("test.run"); code == 0 && run != nil && run.Value.String() == "" && !testing.Short() {
		for _, c := range pageCodes {
			if !produced[c] {
				fmt.Fprintf(os.Stderr, "FAIL: no test produced %s\n", c)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// harness is a real airlock on the demo API: its MCP tools, called
// in-process, preview the selections the page shows, on a SQLite store.
type harness struct {
	t    *testing.T
	deps *tools.Deps
	c    *client.Client
	api  string
}

// config edits the demo configuration for a test (nil: as it is).
func newHarness(t *testing.T, config func(string) string) *harness {
	t.Helper()
	apiSrv := httptest.NewServer(&fixtures.Server{})
	t.Cleanup(apiSrv.Close)
	doc := string(fixtures.DemoConfig(apiSrv.URL))
	if config != nil {
		doc = config(doc)
	}
	cfg, err := configpkg.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == fixtures.DemoTokenEnv {
			return fixtures.DefaultToken
		}
		return ""
	}
	rt, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	bg, stop := context.WithCancel(context.Background())
	deps, err := tools.New(context.Background(), tools.Config{Runtime: rt, Store: st, Background: bg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stop()
		deps.Engine.Wait()
		st.Close()
	})
	srv, err := mcpserver.NewServer(deps, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "review-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, deps: deps, c: c, api: apiSrv.URL}
}

// reviewDeps are the page's deps as airlock wires them; clock, when set,
// replaces the page's clock.
func (h *harness) reviewDeps(clock upstream.Clock) review.Deps {
	d := review.Deps{Store: h.deps.Store, Engine: h.deps.Engine, Runtime: h.deps.Runtime, Clock: h.deps.Clock}
	if clock != nil {
		d.Clock = clock
	}
	return d
}

// serve serves the page on a loopback test server.
func (h *harness) serve(d review.Deps, opts review.Options) string {
	srv := httptest.NewServer(review.NewHandler(d, opts))
	h.t.Cleanup(srv.Close)
	return srv.URL
}

// call runs a tool and returns its data and problem.
func (h *harness) call(tool string, args map[string]any) (map[string]any, *envelope.Problem) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := h.c.CallTool(ctx, req)
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var env struct {
		Data    map[string]any    `json:"data"`
		Problem *envelope.Problem `json:"problem"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	return env.Data, env.Problem
}

func (h *harness) preview(args map[string]any) map[string]any {
	h.t.Helper()
	if _, ok := args["page_size"]; !ok {
		args["page_size"] = 0
	}
	d, p := h.call("preview_selection", args)
	if p != nil {
		h.t.Fatalf("preview: %s: %s", p.Code, p.Detail)
	}
	return d
}

func (h *harness) approvals(selID string) []*selection.Approval {
	aps, err := h.deps.Store.Approvals(context.Background(), selID)
	if err != nil {
		h.t.Fatal(err)
	}
	return aps
}

var (
	archive     = map[string]any{"type": "archive"}
	pauseAction = map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}
)

// pastDueEU previews pausing collection on eu's past-due subscriptions,
// except disputed ones and those under legal hold: 131 members.
func pastDueEU() map[string]any {
	return map[string]any{
		"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{
			map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"},
			map[string]any{"field": "tags", "op": "contains", "value": "legal_hold", "reason": "legal hold"},
		},
		"action": pauseAction,
	}
}

// browser is an HTTP client with cookies, as a browser on the page would be.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar}}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if m := problemCode.FindStringSubmatch(string(body)); m != nil {
			record(envelope.ProblemCode(m[1]))
		}
	}
	return resp.StatusCode, string(body)
}

var problemCode = regexp.MustCompile(`id="problem-code">([A-Z_]+)<`)

// post submits the decision form as JSON-accepting code would, so that a
// refusal comes back as a problem document.
func (b *browser) post(path string, form url.Values, origin string) (int, *envelope.Problem, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/problem+json, text/html")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		var p envelope.Problem
		if err := json.Unmarshal(body, &p); err != nil {
			b.t.Fatal(err)
		}
		record(p.Code)
		return resp.StatusCode, &p, ""
	}
	return resp.StatusCode, nil, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) form(selID string) url.Values {
	b.t.Helper()
	code, page := b.get("/review/selections/" + selID)
	m := csrfField.FindStringSubmatch(page)
	if code != 200 || m == nil {
		b.t.Fatalf("the selection page has no decision form (%d):\n%s", code, page)
	}
	return url.Values{"csrf": {m[1]}}
}

// section is the part of a page between two markers (the end marker
// excluded; empty end: to the end).
func section(t *testing.T, page, from, to string) string {
	t.Helper()
	i := strings.Index(page, from)
	if i < 0 {
		t.Fatalf("the page has no %q", from)
	}
	rest := page[i:]
	if to == "" {
		return rest
	}
	j := strings.Index(rest, to)
	if j < 0 {
		t.Fatalf("the page has no %q after %q", to, from)
	}
	return rest[:j]
}
