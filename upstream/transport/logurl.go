package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// URLs are logged without their query or fragment, at every level: a next
// link's query can hold the credential inside an encoded cursor (base64 of
// the request's own query), which no redactor can be trusted to see in
// every encoding. The scheme, host and path say which request it was.

// logURL is u as airlock logs it: scheme, host and path.
func logURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return v.String()
}

// withoutQueries returns s with the query and the fragment of every URL in
// it removed (a URL runs from its scheme's "://" to a space, a quote or an
// angle bracket).
func withoutQueries(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + 3
		for end < len(s) && !endsURL(s[end]) {
			end++
		}
		if cut := strings.IndexAny(s[i:end], "?#"); cut >= 0 {
			b.WriteString(s[:i+cut])
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

func endsURL(c byte) bool {
	return c <= ' ' || c >= 0x7f || strings.IndexByte("\"'<>`", c) >= 0
}

// withoutQueryError is err with the query of any URL its text quotes
// removed (a *url.Error quotes the whole URL). It wraps err, so that
// errors.Is and errors.As still see the cause.
func withoutQueryError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := withoutQueries(msg); clean != msg {
		return &queryless{msg: clean, err: err}
	}
	return err
}

type queryless struct {
	msg string
	err error
}

func (q *queryless) Error() string { return q.msg }
func (q *queryless) Unwrap() error { return q.err }

// requestLogger is the logger retryablehttp writes to (it logs each
// attempt's URL at debug level and a failed attempt's, in its error too,
// at error level): every value it is given is logged without the query of
// any URL in it.
type requestLogger struct{ l *slog.Logger }

func (r requestLogger) Error(msg string, kv ...any) { r.log(slog.LevelError, msg, kv) }
func (r requestLogger) Warn(msg string, kv ...any)  { r.log(slog.LevelWarn, msg, kv) }
func (r requestLogger) Info(msg string, kv ...any)  { r.log(slog.LevelInfo, msg, kv) }
func (r requestLogger) Debug(msg string, kv ...any) { r.log(slog.LevelDebug, msg, kv) }

func (r requestLogger) log(level slog.Level, msg string, kv []any) {
	ctx := context.Background()
	if !r.l.Enabled(ctx, level) {
		return
	}
	out := make([]any, len(kv))
	for i, v := range kv {
		switch x := v.(type) {
		case string:
			out[i] = withoutQueries(x)
		case *url.URL:
			out[i] = logURL(x)
		case time.Duration, int, int64, bool, float64:
			out[i] = v
		case slog.Attr:
			if x.Value.Kind() == slog.KindString {
				x.Value = slog.StringValue(withoutQueries(x.Value.String()))
			}
			out[i] = x
		case error:
			out[i] = withoutQueries(x.Error())
		case fmt.Stringer:
			out[i] = withoutQueries(x.String())
		default:
			out[i] = withoutQueries(fmt.Sprint(v))
		}
	}
	r.l.Log(ctx, level, withoutQueries(msg), out...)
}
