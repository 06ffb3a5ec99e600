package selection

import (
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
)

// ErrUnavailable marks a store error that says the store could not be
// reached or stopped answering for a while (a connection refused or cut, a
// server restarting, a database busy): the same call may succeed once it
// is back. A store may wrap its errors with it; Unavailable also
// recognizes the drivers' own errors without importing them.
var ErrUnavailable = errors.New("the store is unavailable")

// Unavailable reports whether err says the store is unreachable or
// restarting rather than that the call itself is wrong: a connection
// refused, reset or closed, a timeout, a PostgreSQL SQLSTATE of class 08
// (connection exception), 57P01–57P03 (the server is shutting down or
// starting), 53300 (too many connections) or 40001/40P01 (serialization,
// deadlock), a pgconn error it says is safe to retry, or SQLite's busy and
// locked codes.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		code := state.SQLState()
		switch {
		case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03", code == "53300", code == "40001", code == "40P01":
			return true
		}
		return false
	}
	var retry interface{ SafeToRetry() bool }
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true
	}
	var sqliteCode interface{ Code() int }
	if errors.As(err, &sqliteCode) {
		switch sqliteCode.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, io.ErrUnexpectedEOF, io.EOF, net.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	// pgx says a connection it had to drop is "conn closed" without a
	// type of its own.
	return strings.Contains(err.Error(), "conn closed")
}

// Waits between attempts at a store that is unavailable: doubling from
// storeRetryMin up to storeRetryMax.
const (
	storeRetryMin = 50 * time.Millisecond
	storeRetryMax = 2 * time.Second
)

// retryUnavailable calls f until it succeeds or fails with an error that
// is not Unavailable, while keep (when set) says the caller may go on and
// budget lasts, waiting on c between attempts. It returns f's last error.
func retryUnavailable(c clock.Clock, budget time.Duration, keep func() bool, f func() error) error {
	wait := storeRetryMin
	deadline := c.Now().Add(budget)
	for {
		err := f()
		if err == nil || !Unavailable(err) || (keep != nil && !keep()) || !c.Now().Add(wait).Before(deadline) {
			return err
		}
		clock.Sleep(c, wait, nil)
		wait = min(wait*2, storeRetryMax)
	}
}
