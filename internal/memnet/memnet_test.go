package memnet_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/internal/memnet"
)

// TestNetwork_ServesInsideABubbleWhoseClockMoves: a handler that sleeps
// an hour answers at once in the bubble's time, each server at its own
// host, and the servers and their connections are gone when the test ends
// (synctest.Test fails on a goroutine left behind).
func TestNetwork_ServesInsideABubbleWhoseClockMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n memnet.Network
		late := n.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(time.Hour)
			_, _ = io.WriteString(w, "late")
		}))
		now := n.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "now") }))
		c := &http.Client{Transport: n.Transport()}
		t.Cleanup(c.CloseIdleConnections)
		start := time.Now()
		for _, tc := range []struct{ url, want string }{{late, "late"}, {now, "now"}, {late, "late"}} {
			resp, err := c.Get(tc.url + "/x")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != tc.want {
				t.Fatalf("%s answered %q, want %q", tc.url, b, tc.want)
			}
		}
		if got := time.Since(start); got != 2*time.Hour {
			t.Fatalf("the answers took %v of the bubble's time, want 2h", got)
		}
	})
}

// TestNetwork_RefusesAnAddressNoServerHas: a dial to a host the network
// does not serve fails at once.
func TestNetwork_RefusesAnAddressNoServerHas(t *testing.T) {
	var n memnet.Network
	if _, err := n.DialContext(context.Background(), "tcp", "elsewhere:80"); err == nil {
		t.Fatal("a dial to an unknown host succeeded")
	}
}
