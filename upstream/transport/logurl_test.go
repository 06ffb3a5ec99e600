package transport

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/internal/memnet"
)

// lockedBuffer is a bytes.Buffer safe for the client's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestClientLogs_URLsWithoutTheirQueryAtEveryLevel: a request whose URL
// carries a cursor (base64 of a query holding a key) is logged, by the
// client and by the retry library under it, at debug level and as the
// error of a timed-out attempt, with its scheme, host and path only.
func TestClientLogs_URLsWithoutTheirQueryAtEveryLevel(t *testing.T) {
	bubble(t, testClientLogsURLsWithoutTheirQuery)
}

func testClientLogsURLsWithoutTheirQuery(t *testing.T, n *memnet.Network) {
	var logs lockedBuffer
	c, base := memClient(t, n, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			time.Sleep(300 * time.Millisecond)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[]`))
	}), "timeout: 100ms\nretries: 1", Options{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	cursor := url.QueryEscape(base64.StdEncoding.EncodeToString([]byte("api_key=k9Rz%2BQw%2F7x&page=2&mark=~~~???")))
	for _, q := range []string{"cursor=" + cursor, "cursor=" + cursor + "&slow=1"} {
		_, _ = c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/v1/items?"+q+"#frag"), Idempotent: true})
	}
	out := logs.String()
	for _, bad := range []string{"/v1/items?", "cursor=", cursor[:12], "#frag"} {
		if strings.Contains(out, bad) {
			t.Fatalf("the logs hold %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{`"level":"ERROR"`, `"msg":"retrying request"`, `"msg":"performing request"`, base + "/v1/items"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the logs lack %s:\n%s", want, out)
		}
	}
}

// TestWithoutQueries_CutsEveryURLsQueryAndNothingElse: every URL in a
// text loses its query and fragment, wherever it stands (quoted in an
// error, after a method), and the rest of the text is kept.
func TestWithoutQueries_CutsEveryURLsQueryAndNothingElse(t *testing.T) {
	for in, want := range map[string]string{
		`Get "https://api.example.com/v1/items?cursor=abc%2B": context deadline exceeded`: `Get "https://api.example.com/v1/items": context deadline exceeded`,
		"GET http://127.0.0.1:8080/x?a=1 then https://h/y#f?z, done?":                     "GET http://127.0.0.1:8080/x then https://h/y done?",
		"no url? here=1": "no url? here=1",
		"":               "",
	} {
		if got := withoutQueries(in); got != want {
			t.Errorf("withoutQueries(%q) = %q, want %q", in, got, want)
		}
	}
	u := mustURL(t, "https://user:pw@api.example.com/v1/a%2Fb?cursor=x#y")
	if got := logURL(u); got != "https://api.example.com/v1/a%2Fb" {
		t.Errorf("logURL = %q", got)
	}
}
