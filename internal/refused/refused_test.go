package refused

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestAddr_RefusesAndCannotBeTaken(t *testing.T) {
	addr := Addr(t)
	for range 3 {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("a connection to %s was accepted", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another listener took %s", addr)
	}
}
