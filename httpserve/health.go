package httpserve

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/airlock-mcp/airlock/selection"
)

// ReadyTimeout bounds the store check of /readyz.
const ReadyTimeout = 2 * time.Second

// readiness is a store that can say whether it is ready: reachable, with
// the schema this airlock knows (both stores are).
type readiness interface {
	Ready(ctx context.Context) error
}

// storeReady finds the readiness check of a store, under the wrappers
// (redaction) that guard it.
func storeReady(s selection.Store) readiness {
	for s != nil {
		if r, ok := s.(readiness); ok {
			return r
		}
		u, ok := s.(interface{ Unwrap() selection.Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}

// HealthHandlers are the probes, by path: /healthz answers 200 while the
// process serves; /readyz answers 200 when the store answers within
// ReadyTimeout and its schema is the one this airlock knows, else 503 (a
// load balancer stops routing to the replica, an orchestrator does not
// restart it). Neither names the store or says more than that.
func HealthHandlers(store selection.Store) map[string]http.Handler {
	ready := storeReady(store)
	return map[string]http.Handler{
		"/healthz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("ok\n"))
		}),
		"/readyz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			var err error
			if ready == nil {
				err = errors.New("no store")
			} else {
				ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
				err = ready.Ready(ctx)
				cancel()
			}
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				why := "not ready: the store's schema is not this airlock's\n"
				if ready == nil || selection.Unavailable(err) || errors.Is(err, context.DeadlineExceeded) {
					why = "not ready: the store is unavailable\n"
				}
				_, _ = w.Write([]byte(why))
				return
			}
			_, _ = w.Write([]byte("ready\n"))
		}),
	}
}
