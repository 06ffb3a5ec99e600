package transport

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestStoppedBeforeTheRequestWasWritten_IsReportedAsNotSent: a write whose
// connection was still being set up (here a TLS handshake the peer never
// answers) when airlock stopped or timed out never left airlock, so it is
// known-unsent rather than unknown, and a later run may send it.
func TestStoppedBeforeTheRequestWasWritten_IsReportedAsNotSent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		// Accepts connections and never says a word: the handshake hangs.
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	base := "https://" + ln.Addr().String()

	for _, tc := range []struct {
		name  string
		extra string
		stop  func() (context.Context, context.CancelFunc)
		want  FailureKind
	}{
		{"cancelled", "", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, FailCanceled},
		{"timed out", "timeout: 200ms", func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, FailTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, base, tc.extra, Options{})
			ctx, cancel := tc.stop()
			defer cancel()
			_, err := c.Do(ctx, Request{Method: http.MethodPost, URL: mustURL(t, base+"/items"), Body: []byte(`{}`)})
			he := asHTTPError(t, err)
			if he.Kind != tc.want {
				t.Errorf("kind = %d, want %d", he.Kind, tc.want)
			}
			if he.Attempts != 1 {
				t.Errorf("attempts = %d, want 1", he.Attempts)
			}
			if he.Sent {
				t.Error("Sent = true for a request that never got past the connection's setup")
			}
		})
	}
}
