package mcpserver

import (
	"github.com/airlock-mcp/airlock/httpserve"

	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// boundedServer serves a bare MCP server through the HTTP transport with
// opts, on the server httpserve.NewServer builds.
func boundedServer(t *testing.T, opts HTTPOptions) *httptest.Server {
	t.Helper()
	h := handler(server.NewMCPServer("airlock-test", "1"), nil, opts)
	hs := httptest.NewUnstartedServer(h)
	hs.Config = httpserve.NewServer(h, nil)
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

// zeros is an endless body that costs its sender no memory.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// procStatusKB reads a field of /proc/self/status in kB.
func procStatusKB(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status on this system: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestHTTP_HugeBody_Is413WithoutGrowingMemory: a 256 MiB body posted to
// /mcp or /message, announced or chunked, is answered 413 after at most
// the limit was read, and the process's resident memory (its peak, where
// the kernel can reset it) grows by less than 10 MB.
func TestHTTP_HugeBody_Is413WithoutGrowingMemory(t *testing.T) {
	hs := boundedServer(t, HTTPOptions{})
	const size = 256 << 20
	for _, tc := range []struct {
		path    string
		chunked bool
	}{{"/mcp", false}, {"/mcp", true}, {"/message?sessionId=x", false}, {"/message?sessionId=x", true}} {
		name := tc.path + " content-length"
		if tc.chunked {
			name = tc.path + " chunked"
		}
		t.Run(name, func(t *testing.T) {
			runtime.GC()
			debug.FreeOSMemory()
			peakReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
			before := procStatusKB(t, "VmRSS")
			req, _ := http.NewRequest(http.MethodPost, hs.URL+tc.path, io.LimitReader(zeros{}, size))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.ContentLength = size
			if tc.chunked {
				req.ContentLength = -1
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("want a 413 answer, got %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("want 413, got %d", resp.StatusCode)
			}
			after := procStatusKB(t, "VmRSS")
			grown := after - before
			if peakReset {
				grown = max(grown, procStatusKB(t, "VmHWM")-before)
			}
			t.Logf("resident memory grew by %d kB (peak measured: %v)", grown, peakReset)
			if raceEnabled {
				t.Log("built with -race: its shadow memory makes resident size no measure of the body; the bound is checked by go test without -race")
				return
			}
			if grown > 10*1024 {
				t.Fatalf("a rejected body grew resident memory by %d kB", grown)
			}
		})
	}
	t.Run("a body within the limit is served", func(t *testing.T) {
		if code := post(t, hs.URL+"/mcp", nil, ""); code != http.StatusOK {
			t.Fatalf("initialize: %d", code)
		}
	})
}

// TestHTTP_MaxBodyIsConfigurable: the limit is the option's, and the 413
// says what it is.
func TestHTTP_MaxBodyIsConfigurable(t *testing.T) {
	t.Parallel()
	hs := boundedServer(t, HTTPOptions{Options: httpserve.Options{MaxBodyBytes: 100}})
	resp, err := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(strings.Repeat(" ", 101)+"{}"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "100-byte limit") {
		t.Fatalf("want 413 naming the limit, got %d %q", resp.StatusCode, body)
	}
	if code := post(t, hs.URL+"/mcp", nil, ""); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("the 170-byte initialize is over a 100-byte limit: %d", code)
	}
}

// rawRequest opens a connection and writes s; the caller reads the answer.
func rawRequest(t *testing.T, addr, s string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
	return c
}

// answerOf reads an HTTP answer from c and then waits for the server to
// close the connection. The read deadline only keeps a broken server from
// hanging the suite.
func answerOf(t *testing.T, c net.Conn) (status int, closed bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, isClosed(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.StatusCode, isClosed(err)
}

// isClosed reports a read that ended because the peer closed (not
// because the suite's safety deadline passed).
func isClosed(err error) bool {
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestHTTP_TricklingClients_AreCutOff: fifty clients that announce a body
// and send one byte of it are answered 408 and disconnected once the body
// timeout passes; a client that never finishes its headers is
// disconnected by the header timeout.
func TestHTTP_TricklingClients_AreCutOff(t *testing.T) {
	t.Parallel()
	hs := boundedServer(t, HTTPOptions{Options: httpserve.Options{BodyTimeout: 300 * time.Millisecond}})
	addr := hs.Listener.Addr().String()
	var wg sync.WaitGroup
	results := make(chan string, 50)
	for i := 0; i < 50; i++ {
		c := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, closed := answerOf(t, c)
			results <- fmt.Sprintf("%d/%v", status, closed)
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r != "408/true" {
			t.Fatalf("a trickling body: want 408 and a closed connection, got %s", r)
		}
	}

	if s := httpserve.NewServer(http.NotFoundHandler(), nil); s.ReadHeaderTimeout != httpserve.DefaultHeaderTimeout || s.IdleTimeout != httpserve.DefaultIdleTimeout || s.WriteTimeout != 0 {
		t.Fatalf("the server's bounds: header %v, idle %v, write %v (event streams need none)", s.ReadHeaderTimeout, s.IdleTimeout, s.WriteTimeout)
	}
	h := handler(server.NewMCPServer("airlock-test", "1"), nil, HTTPOptions{})
	slow := httptest.NewUnstartedServer(h)
	slow.Config = httpserve.NewServer(h, nil)
	slow.Config.ReadHeaderTimeout = 300 * time.Millisecond
	slow.Start()
	t.Cleanup(slow.Close)
	addr = slow.Listener.Addr().String()
	c := rawRequest(t, addr, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\n")
	if _, closed := answerOf(t, c); !closed {
		t.Fatal("a client that never finishes its headers must be disconnected")
	}
}

// TestHTTP_EventStreams_NeedASessionAndAreCapped: GET /mcp without a
// session opens no stream; past the cap, a new stream is refused 503
// until one closes.
func TestHTTP_EventStreams_NeedASessionAndAreCapped(t *testing.T) {
	t.Parallel()
	hs := boundedServer(t, HTTPOptions{Options: httpserve.Options{MaxStreams: 2}})
	resp, err := http.Get(hs.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /mcp without a session: want 405 (no stream), got %d", resp.StatusCode)
	}
	open := func() *http.Response {
		t.Helper()
		resp, err := http.Get(hs.URL + "/sse")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	for i := 0; i < 2; i++ {
		r := open()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i, r.StatusCode)
		}
		streams = append(streams, r)
	}
	third := open()
	third.Body.Close()
	if third.StatusCode != http.StatusServiceUnavailable || third.Header.Get("Retry-After") == "" {
		t.Fatalf("past the cap: want 503 with Retry-After, got %d", third.StatusCode)
	}
	streams[0].Body.Close()
	for deadline := time.Now().Add(20 * time.Second); ; {
		r := open()
		if r.StatusCode == http.StatusOK {
			r.Body.Close()
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("a closed stream must free its place")
		}
		time.Sleep(20 * time.Millisecond)
	}
	streams[1].Body.Close()
}
