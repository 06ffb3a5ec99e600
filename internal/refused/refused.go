// Package refused gives tests a loopback address that refuses
// connections for as long as the test runs.
//
// The usual trick, listening on port 0 and closing the listener, leaves a
// port any other test running at the same time can take: the "refused"
// address then answers, and a test of a refused connection fails for no
// fault of the code under test. Here the port stays bound, by a socket
// that never listens, until the test ends: the kernel refuses every
// connection to it, and no one else can bind it.
package refused

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// Addr returns "127.0.0.1:PORT", bound and never listening until t ends.
func Addr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("refused: socket: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("refused: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatalf("refused: getsockname: %v", err)
	}
	in, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		t.Fatalf("refused: bound to %T", sa)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(in.Port))
}
