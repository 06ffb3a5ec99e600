// Package memnet serves HTTP over an in-memory network, for tests: each
// connection is a net.Pipe, so a test inside a testing/synctest bubble
// talks to its fake upstreams without a socket, and the bubble's clock
// moves whenever every end waits (a socket's read is not a wait the
// bubble can see: over a real one, its time would never move). It is for
// tests only, and never opens a socket.
package memnet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
)

// TB is what Serve needs of a test: *testing.T, *testing.B and
// pgregory.net/rapid's *T all have it.
type TB interface {
	Helper()
	Cleanup(func())
}

// Network is a set of in-memory HTTP servers, each at its own host name.
// Its zero value is ready; it is safe for concurrent use. Servers started
// inside a synctest bubble run their goroutines in the bubble.
type Network struct {
	mu    sync.Mutex
	hosts map[string]*listener
}

// Serve serves h until the test ends, and returns its base URL; the test's
// cleanup waits for the handlers that still run, and closes the server
// and every connection to it. The URL names a
// loopback address (a configuration accepts plain http only to one) on a
// low port no server listens on: a client that forgot the network's
// DialContext is refused instead of reaching something real.
func (n *Network) Serve(t TB, h http.Handler) string {
	t.Helper()
	n.mu.Lock()
	if n.hosts == nil {
		n.hosts = map[string]*listener{}
	}
	host := fmt.Sprintf("127.0.0.1:%d", len(n.hosts)+1)
	l := &listener{conns: make(chan net.Conn), closed: make(chan struct{}), host: host}
	n.hosts[host] = l
	n.mu.Unlock()
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		// Shutdown waits for the handlers still running (a bubble's
		// time moves for them while it does); none may outlive the test.
		_ = srv.Shutdown(context.Background())
		<-done
	})
	return "http://" + host
}

// DialContext connects to the server at addr (host:port, as Serve's URL
// names it); an address no server has is refused.
func (n *Network) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.hosts[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, &net.OpError{Op: "dial", Net: "memnet", Err: fmt.Errorf("no server at %s", addr)}
	}
	return l.dial(ctx)
}

// Transport is a new transport whose connections go to the network's
// servers.
func (n *Network) Transport() *http.Transport {
	return &http.Transport{DialContext: n.DialContext}
}

// listener hands the server end of each dialed pipe to Accept.
type listener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	host   string
}

func (l *listener) dial(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, &net.OpError{Op: "dial", Net: "memnet", Err: net.ErrClosed}
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *listener) Addr() net.Addr { return addr(l.host) }

type addr string

func (addr) Network() string  { return "memnet" }
func (a addr) String() string { return string(a) }
