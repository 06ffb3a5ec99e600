package transport

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// DefaultMaxRetryAfter is the longest wait airlock takes from an upstream
// (upstreams.NAME.max_retry_after overrides it): a Retry-After or a rate
// limit reset further off, absurd or too long to read as a number, is read
// as this. It is what airlock then refrains from calling the upstream for,
// and what it tells the agent to wait.
const DefaultMaxRetryAfter = time.Hour

// defaultRateLimitWait is how long airlock refrains from calling an
// upstream that rate-limited it without saying for how long.
const defaultRateLimitWait = 5 * time.Second

// maxWait is the longest wait a parse yields: a delta-seconds too long for
// a Duration (or for an int64) is this, never a short wait and never no
// wait at all.
const maxWait = time.Duration(math.MaxInt64)

// parseRetryAfter reads one Retry-After value (RFC 9110, section 10.2.3):
// delta-seconds of any length, or an HTTP-date in any of the three forms
// RFC 9110 section 5.6.7 admits (IMF-fixdate, RFC 850, asctime), dated
// against now. ok is false when the value is neither (empty, negative,
// fractional, a word): no signal. Seconds too many to hold are a very
// long wait (maxWait), never no signal; a date in the past is a wait of
// zero.
func parseRetryAfter(v string, now time.Time) (wait time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if allDigits(v) {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil || s > uint64(maxWait/time.Second) {
			// Only a value out of range fails once every byte is a digit.
			return maxWait, true
		}
		return time.Duration(s) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// RetryAfter reads how long the upstream asked to wait: Retry-After (see
// parseRetryAfter), else GitHub-style x-ratelimit-reset (epoch seconds)
// when x-ratelimit-remaining is 0. It returns zero when there is no such
// signal, and otherwise a whole number of seconds, at least one (rounded
// up), unbounded: a client bounds it by its upstream's max_retry_after.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if d, ok := parseRetryAfter(h.Get("Retry-After"), now); ok {
		return wholeSeconds(d)
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); allDigits(v) {
			s, err := strconv.ParseInt(v, 10, 64)
			if err != nil || s-now.Unix() >= int64(maxWait/time.Second) {
				return wholeSeconds(maxWait)
			}
			return wholeSeconds(time.Unix(s, 0).Sub(now))
		}
	}
	return 0
}

// wholeSeconds rounds a wait up to whole seconds, at least one: the unit
// retry_after_seconds speaks in, so that the wait airlock keeps and the
// wait it tells are the same.
func wholeSeconds(d time.Duration) time.Duration {
	if r := d % time.Second; r > 0 {
		if d > maxWait-time.Second {
			return maxWait.Truncate(time.Second)
		}
		d += time.Second - r
	}
	return max(d, time.Second)
}

// WaitSeconds is a wait in whole seconds, rounded up (never less than the
// wait): what retry_after_seconds says for it.
func WaitSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	s := d / time.Second
	if d%time.Second != 0 {
		s++
	}
	return int(min(s, math.MaxInt32))
}

// retryAfter is the upstream's wait as this client takes it: read from
// the answer's headers, bounded by max_retry_after; zero when it named
// none.
func (c *Client) retryAfter(h http.Header) time.Duration {
	return min(RetryAfter(h, c.clock.Now()), c.maxRetryAfter)
}

// throttled reports whether an error answer is a rate limit: a 429, or an
// answer one of the upstream's throttling declarations matches (its status,
// and the body member's value ending with the declared text).
func (c *Client) throttled(status int, body []byte) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	return answerMatches(c.throttling, status, body)
}

// answerMatches reports whether one of the declared error answers
// (throttling, conflicts) matches an answer: its status, and the body
// member's value ending with the declared text. A body that is not one
// strict JSON document matches no declaration that names a member.
func answerMatches(rules []config.ThrottlingConfig, status int, body []byte) bool {
	var doc any
	decoded := false
	for _, t := range rules {
		if t.Status != status {
			continue
		}
		if t.Member == "" {
			return true
		}
		if !decoded {
			decoded = true
			var err error
			if doc, err = jsonvalue.Decode(body); err != nil {
				// Not one strict JSON document: the member is not read.
				return false
			}
		}
		if v, ok := jsonvalue.Get(doc, t.Member); ok {
			if s, ok := v.(string); ok && strings.HasSuffix(s, t.Match) {
				return true
			}
		}
	}
	return false
}

// declaresThrottling reports whether some throttling declaration names
// status (a 429 needs none).
func (c *Client) declaresThrottling(status int) bool {
	for _, t := range c.throttling {
		if t.Status == status {
			return true
		}
	}
	return false
}

// peekBody reads an answer's body, up to the size bound, for the retry
// policy, and puts it back for the caller to read again.
func (c *Client) peekBody(resp *http.Response) []byte {
	b, _ := readBody(resp, c.maxBody)
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	return b
}

// throttlingRules copies an upstream's throttling declarations.
func throttlingRules(cfg *config.UpstreamConfig) []config.ThrottlingConfig {
	return append([]config.ThrottlingConfig(nil), cfg.Throttling...)
}
