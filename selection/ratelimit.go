package selection

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
)

// rateLimited pauses the run for the upstream's wait (a 429's Retry-After,
// 5 s without one), or stops it when the wait is longer than a run pauses.
func (r *run) rateLimited(wait time.Duration) {
	if wait <= 0 {
		wait = 5 * time.Second
	}
	maxPause := r.e.MaxRateLimitPause
	if maxPause == 0 {
		maxPause = 2 * time.Minute
	}
	if wait > maxPause {
		r.stop(fmt.Sprintf("rate limited: the upstream asked to wait %d s, longer than airlock pauses an operation", int(wait.Seconds())))
		return
	}
	r.mu.Lock()
	if until := r.e.Clock.Now().Add(wait); until.After(r.pauseUntil) {
		r.pauseUntil = until
	}
	r.mu.Unlock()
}

func (r *run) pauseForRateLimit(ctx context.Context) {
	r.mu.Lock()
	until := r.pauseUntil
	r.mu.Unlock()
	clock.Sleep(r.e.Clock, until.Sub(r.e.Clock.Now()), ctx.Done())
}
