// Package upstreams starts real third-party HTTP APIs for tests (json-server,
// PocketBase, Debian's docker-registry, Django REST Framework, PostGraphile
// over PostgreSQL, Debian's WordPress and Redmine over MariaDB, Debian's
// etcd, SAP CAP (@sap/cds over better-sqlite3), PouchDB Server
// (express-pouchdb over an in-memory pouchdb) and dynalite (DynamoDB's API,
// in memory, optionally behind sigv4verify.mjs, which checks every request's
// AWS signature with AWS's JavaScript signer), each HTTP API optionally
// behind a credential) and an OpenID
// provider (oidc-provider, for the outbound credential and the
// authorization suites), seeds them deterministically, and reads their
// ground truth directly over HTTP, or from their SQLite file or PostgreSQL
// or MariaDB database.
//
// It must never import anything of airlock's: its truth is what the
// upstream itself holds, read by code that shares nothing with the code under
// test.
//
// The whole suite runs only when AIRLOCK_TEST_REAL_UPSTREAMS=1, so that a
// plain `go test ./...` stays fast. A missing tool (node, interop/node_modules,
// the PocketBase module download, /usr/bin/docker-registry, Debian's
// python3-django, python3-djangorestframework and python3-django-filters,
// PostgreSQL, php with mysqli, mbstring and xml, Debian's wordpress, the
// mysql client, MariaDB, etcd, Debian's redmine, redmine-mysql and thin)
// skips the test, unless AIRLOCK_REQUIRE_INTEROP=1
// turns the skip into a failure.
package upstreams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment variables that decide whether the suite runs and whether a
// missing tool is a failure.
const (
	EnableEnv  = "AIRLOCK_TEST_REAL_UPSTREAMS"
	RequireEnv = "AIRLOCK_REQUIRE_INTEROP"
)

// startTimeout bounds how long a server may take to answer its first
// request.
const startTimeout = 60 * time.Second

// maxBody bounds every response body the harness reads.
const maxBody = 64 << 20

// Enabled skips the test unless AIRLOCK_TEST_REAL_UPSTREAMS=1.
func Enabled(t testing.TB) {
	t.Helper()
	if os.Getenv(EnableEnv) != "1" {
		t.Skipf("skipping the real-upstream suite (json-server, PocketBase, docker-registry, Django REST Framework, PostGraphile, WordPress, MediaWiki, etcd, SAP CAP, Redmine, PouchDB Server, dynalite): set %s=1 to run it", EnableEnv)
	}
}

// missing skips the test for a missing tool, or fails it when
// AIRLOCK_REQUIRE_INTEROP=1.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires the real-upstream suite", reason, RequireEnv)
	}
	t.Skipf("skipping: %s (set %s=1 to make this a failure)", reason, RequireEnv)
}

// interopDir is the absolute path of the module's interop/ directory,
// whatever the test's working directory.
func interopDir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the upstreams package's source")
	}
	return filepath.Dir(filepath.Dir(file))
}

// Record is one upstream record as the upstream serves it (JSON-decoded,
// numbers as float64).
type Record map[string]any

// ID is the record's "id" as a string: a string as it is, a number in
// decimal ("" when absent or neither). A record without "id" answers its
// "_id" (CouchDB's documents).
func (r Record) ID() string {
	key := "id"
	if _, ok := r[key]; !ok {
		key = "_id"
	}
	switch id := r[key].(type) {
	case string:
		return id
	case float64:
		return strconv.FormatFloat(id, 'f', -1, 64)
	}
	return ""
}

// IDs returns the ids of the records for which keep is true (every record
// when keep is nil), sorted.
func IDs(recs []Record, keep func(Record) bool) []string {
	out := []string{}
	for _, r := range recs {
		if keep == nil || keep(r) {
			out = append(out, r.ID())
		}
	}
	sort.Strings(out)
	return out
}

// freePort returns a port that was free on 127.0.0.1 a moment ago. A
// server that loses the race exits, and start tries another port.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a started server whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProcess starts the command that argv builds for a port, in dir, with
// env added to the environment, waits until ready answers true, and stops
// the process when the test ends. A process that exits before it is ready
// (a port taken in the meantime) is tried again on another port, at most
// three times.
func startProcess(t testing.TB, name, dir string, argv func(port int) []string, ready func(ctx context.Context, base string) bool, env ...string) (base string, proc *process) {
	t.Helper()
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		port := freePort(t)
		p, err := spawn(t, name, dir, argv(port), env)
		if err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		base = "http://127.0.0.1:" + strconv.Itoa(port)
		err = p.waitReady(t.Context(), base, ready)
		if err == nil {
			return base, p
		}
		lastErr = err
		exited := false
		select {
		case <-p.done:
			exited = true // by itself: probably the port; try another
		default:
		}
		p.stop()
		if !exited {
			break
		}
	}
	t.Fatalf("%s did not become ready: %v", name, lastErr)
	return "", nil
}

func spawn(t testing.TB, name, dir string, args, env []string) (*process, error) {
	logFile, err := os.CreateTemp(t.TempDir(), name+"-*.log")
	if err != nil {
		return nil, fmt.Errorf("create log file: %w", err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(append(os.Environ(), "NO_UPDATE_NOTIFIER=1"), env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("run %q: %w", args[0], err)
	}
	p := &process{name: name, cmd: cmd, log: logFile.Name(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p, nil
}

// stop kills the process and its children and waits for it
// (idempotent). The children go first, while the process still holds
// their ids: php -S forks workers (PHP_CLI_SERVER_WORKERS) that would
// outlive it, still listening.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	for _, pid := range childPIDs(p.cmd.Process.Pid) {
		if c, err := os.FindProcess(pid); err == nil {
			_ = c.Kill()
		}
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// childPIDs lists a process's children from Linux's /proc (none
// elsewhere, or when the kernel does not say).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func (p *process) waitReady(ctx context.Context, base string, ready func(context.Context, string) bool) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before answering; its log:\n%s", p.name, p.err, p.tail())
		default:
		}
		reqCtx, reqCancel := context.WithTimeout(ctx, 2*time.Second)
		ok := ready(reqCtx, base)
		reqCancel()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s gave no answer within %s; its log:\n%s", p.name, startTimeout, p.tail())
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail is the end of the process's log, for failure messages.
func (p *process) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// answersOK is a readiness probe: GET path answers 200.
func answersOK(path string) func(context.Context, string) bool {
	return func(ctx context.Context, base string) bool {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		return resp.StatusCode == http.StatusOK
	}
}

// httpError is a response with an unexpected status.
type httpError struct {
	method, url string
	status      int
	body        string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.method, e.url, e.status, e.body)
}

// call sends one request with a JSON body (when body is not nil) and
// returns the response's headers and body. A status other than want is an
// error carrying the body.
func call(ctx context.Context, method, url string, header http.Header, body any, want int) (http.Header, []byte, error) {
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case []byte:
			rd = bytes.NewReader(b)
		default:
			enc, err := json.Marshal(body)
			if err != nil {
				return nil, nil, fmt.Errorf("encode body: %w", err)
			}
			rd = bytes.NewReader(enc)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: read body: %w", method, url, err)
	}
	if len(b) > maxBody {
		return nil, nil, fmt.Errorf("%s %s: body larger than %d bytes", method, url, maxBody)
	}
	if resp.StatusCode != want {
		return resp.Header, b, &httpError{method: method, url: url, status: resp.StatusCode, body: string(truncate(b, 500))}
	}
	return resp.Header, b, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// parallel runs fn for every index in [0, n) with at most workers at once
// and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  int
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= n || first != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// isHTTPStatus reports whether err is an unexpected status equal to code.
func isHTTPStatus(err error, code int) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == code
}

// Response is an upstream's answer to a request a test sends directly.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %q: %v", truncate(r.Body, 200), err)
	}
}

// NextLink is the target of the Link header's rel="next" ("" when none).
func (r Response) NextLink() string { return nextLink(r.Header.Get("Link")) }

// get sends a GET and returns whatever status the upstream answers.
func get(t testing.TB, url string, header http.Header) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), http.MethodGet, url, header, nil, http.StatusOK)
	var he *httpError
	switch {
	case err == nil:
		return Response{Status: http.StatusOK, Header: hdr, Body: b}
	case errors.As(err, &he):
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	t.Fatalf("GET %s: %v", url, err)
	return Response{}
}

// send sends a request with a JSON body and returns whatever status the
// server answers.
func send(t testing.TB, method, url string, body any) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), method, url, nil, body, http.StatusOK)
	var he *httpError
	switch {
	case err == nil:
		return Response{Status: http.StatusOK, Header: hdr, Body: b}
	case errors.As(err, &he):
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	t.Fatalf("%s %s: %v", method, url, err)
	return Response{}
}
