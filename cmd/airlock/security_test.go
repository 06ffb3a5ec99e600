package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

const canaryCredential = "cnry-77d1e0c4-process-credential"

// TestProcess_EchoedCredentialIsNotInStderrAtDebugLevel: a real airlock
// process logging at debug level, in front of an upstream that echoes its
// credential in a 422's field names, in a Link header it follows and in an
// item, writes the credential to no log line, no result and no store page.
func TestProcess_EchoedCredentialIsNotInStderrAtDebugLevel(t *testing.T) {
	t.Parallel()
	api := &fixtures.Server{Token: canaryCredential}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		tok := strings.TrimPrefix(auth, "Bearer ")
		switch q := r.URL.Query(); {
		case q.Get("owner") == "team-echo":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(422)
			fmt.Fprintf(w, `{"errors":[{"field":%q},{"param":%q}],"detail":%q}`, tok, base64.StdEncoding.EncodeToString([]byte(auth)), auth)
		case q.Get("owner") == "team-link" && q.Get("page") == "":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", fmt.Sprintf(`<http://%s/v1/projects?owner=team-link&page=2&access_token=%s>; rel="next"`, r.Host, tok))
			fmt.Fprintf(w, `[{"id":"prj_echo","name":%q,"owner":"team-link","state":"inactive","visibility":"private","last_activity_at":"2026-01-01T00:00:00Z","etag":"e1"}]`, auth)
		case q.Get("owner") == "team-link":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[]`)
		default:
			api.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	cfg, store := filepath.Join(dir, "airlock.yaml"), filepath.Join(dir, "airlock.db")
	if err := os.WriteFile(cfg, fixtures.DemoConfig(up.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serveProcess(t, []string{"AIRLOCK_LOG_LEVEL=debug", fixtures.DemoTokenEnv + "=" + canaryCredential}, "--config", cfg, "--store", store)
	addr, stderr := srv.addr(), srv.log
	c := connect(t, "http://"+addr+"/mcp")
	var results []byte
	for _, owner := range []string{"team-echo", "team-link"} {
		results = append(results, callTool(t, c, "search_all", map[string]any{"resource": "projects", "filter": map[string]any{"owner": owner}})...)
	}
	results = append(results, callTool(t, c, "preview_selection", map[string]any{"resource": "projects", "filter": map[string]any{"owner": "team-link"},
		"action": map[string]any{"type": "archive"}})...)
	c.Close()
	if !strings.Contains(string(results), "[redacted]") {
		t.Fatalf("the item that carried the credential should come back redacted: %s", results)
	}
	if !bytes.Contains(stderr.Bytes(), []byte("level=DEBUG")) {
		t.Fatal("the process did not log at debug level")
	}
	check := func(what string, b []byte) {
		if hits := leaktest.Hits(b, canaryCredential); len(hits) > 0 {
			t.Errorf("the credential is in %s (%v)", what, hits)
		}
	}
	check("the results", results)
	check("stderr", stderr.Bytes())
	for _, f := range []string{store, store + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			check(filepath.Base(f), b)
		}
	}
}

// statusKB reads a field of /proc/PID/status in kB.
func statusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	t.Fatalf("no %s for pid %d", field, pid)
	return 0
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestProcess_256MiBBody_Is413AndTheServerStaysSmall: 256 MiB posted to a
// real airlock process's /mcp and /message, with a Content-Length or
// chunked, are answered 413; the process's peak resident memory grows by
// less than 10 MB over the four requests.
func TestProcess_256MiBBody_Is413AndTheServerStaysSmall(t *testing.T) {
	t.Parallel()
	srv := serveProcess(t, nil, "--demo", "--store", filepath.Join(t.TempDir(), "airlock.db"))
	addr, cmd := srv.addr(), srv.cmd
	pid := cmd.Process.Pid
	resetPeak := func() bool {
		return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	}
	// One ordinary call first, so that what is measured is the body alone.
	c := connect(t, "http://"+addr+"/mcp")
	callTool(t, c, "describe_resources", map[string]any{})
	c.Close()
	peakReset := resetPeak()
	before := statusKB(t, pid, "VmRSS")
	for _, path := range []string{"/mcp", "/message?sessionId=x"} {
		for _, chunked := range []bool{false, true} {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, io.LimitReader(zeroReader{}, 256<<20))
			req.Header.Set("Content-Type", "application/json")
			req.ContentLength = 256 << 20
			if chunked {
				req.ContentLength = -1
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s (chunked %v): want 413, got %v", path, chunked, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s (chunked %v): want 413, got %d", path, chunked, resp.StatusCode)
			}
		}
	}
	after := statusKB(t, pid, "VmRSS")
	grown := after - before
	if peakReset {
		grown = max(grown, statusKB(t, pid, "VmHWM")-before)
	}
	t.Logf("server resident memory: %d kB before, %d kB after, growth %d kB (peak measured: %v)", before, after, grown, peakReset)
	if raceEnabled {
		t.Log("built with -race: its shadow memory makes resident size no measure of the body; the bound is checked by go test without -race")
		return
	}
	if grown > 10*1024 {
		t.Fatalf("the server's resident memory grew by %d kB", grown)
	}
}
