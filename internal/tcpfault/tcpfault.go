// Package tcpfault is a TCP proxy for tests that fakes a network peer's
// faults: every connection it carries can be cut at once, and new ones
// refused for a while, as a database server that restarts or a network
// that drops does. It is for tests only.
package tcpfault

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards connections from its address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu           sync.Mutex
	conns        map[net.Conn]bool
	refuseUntil  time.Time
	cuts, refuse int
}

// Start listens on a loopback port and forwards each connection to
// target; it stops when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection the proxy carries, in both directions.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
	p.cuts++
}

// Refuse cuts every connection and closes the new ones at once for d, as
// a server that is down: a client's connect fails.
func (p *Proxy) Refuse(d time.Duration) {
	p.mu.Lock()
	p.refuseUntil = time.Now().Add(d)
	p.mu.Unlock()
	p.Cut()
}

// Counts reports how many times connections were cut and how many new
// ones were refused.
func (p *Proxy) Counts() (cuts, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts, p.refuse
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		refusing := time.Now().Before(p.refuseUntil)
		if refusing {
			p.refuse++
		}
		p.mu.Unlock()
		if refusing {
			_ = c.Close()
			continue
		}
		go p.forward(c)
	}
}

func (p *Proxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}
