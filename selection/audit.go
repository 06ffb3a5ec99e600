package selection

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Auditor appends audit events to the store and, optionally, to a JSON
// Lines file. Events never hold a credential or a sensitive field: they are
// built from ids, digests, method, path template, status and durations.
type Auditor struct {
	mu   sync.Mutex
	file io.Writer
}

// NewAuditor writes events also to w (nil for the store only).
func NewAuditor(w io.Writer) *Auditor { return &Auditor{file: w} }

// maxAuditBacklog bounds the audit lines an engine keeps while its store
// is unavailable: past it (hours of an outage at full speed) the oldest
// are dropped, and the log says how many.
const maxAuditBacklog = 100000

// audit writes events to the store, trying an unavailable store again for
// a while. What the store still refuses is kept, in order, and written
// before the next events (or by FlushAudit): an audit line is never
// dropped because the store stumbled. The JSON Lines file receives the
// events once the store has them.
func (e *Engine) audit(ctx context.Context, events ...AuditEvent) {
	if e.Store == nil {
		return
	}
	e.auditMu.Lock()
	defer e.auditMu.Unlock()
	pending := append(e.auditBacklog, events...)
	e.auditBacklog = nil
	if len(pending) == 0 {
		return
	}
	err := retryUnavailable(e.Clock, e.storeWait(), nil, func() error {
		return e.Store.Audit(context.WithoutCancel(ctx), pending)
	})
	if err != nil {
		if over := len(pending) - maxAuditBacklog; over > 0 {
			e.logger().Error("the audit trail's backlog is full: the oldest lines are dropped", "dropped", over)
			pending = pending[over:]
		}
		e.auditBacklog = pending
		e.logger().Error("could not write the audit trail: its lines are kept and written once the store answers", "kept", len(pending), "err", err)
		return
	}
	if e.Auditor == nil || e.Auditor.file == nil {
		return
	}
	e.Auditor.mu.Lock()
	defer e.Auditor.mu.Unlock()
	enc := json.NewEncoder(e.Auditor.file)
	for _, ev := range pending {
		_ = enc.Encode(ev)
	}
}

// FlushAudit writes the audit lines kept while the store was unavailable
// and reports how many are still kept.
func (e *Engine) FlushAudit(ctx context.Context) int {
	e.audit(ctx)
	e.auditMu.Lock()
	defer e.auditMu.Unlock()
	return len(e.auditBacklog)
}

// Audit records events: tools call it for the decisions they see (who
// previewed, who asked to commit).
func (e *Engine) Audit(ctx context.Context, events ...AuditEvent) { e.audit(ctx, events...) }

// call records one external call of an operation. The record is queued
// with the journal and written before the operation reports its status.
func (r *run) call(method, path, target string, status int, d time.Duration, reqID string) {
	r.j.record(AuditEvent{At: r.e.Clock.Now(), Kind: AuditCall, OperationID: r.op.ID, SelectionID: r.op.SelectionID,
		Digest: r.op.Digest, Event: "request", Method: method, PathTemplate: path, TargetID: target, Status: status,
		DurationMS: d.Milliseconds(), RequestID: reqID, Principal: r.op.Principal.Recorded()})
}
