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

func (e *Engine) audit(ctx context.Context, events ...AuditEvent) {
	if e.Store == nil {
		return
	}
	if err := e.Store.Audit(context.WithoutCancel(ctx), events); err != nil && e.Logger != nil {
		e.Logger.Error("could not write the audit trail", "err", err)
	}
	if e.Auditor == nil || e.Auditor.file == nil {
		return
	}
	e.Auditor.mu.Lock()
	defer e.Auditor.mu.Unlock()
	enc := json.NewEncoder(e.Auditor.file)
	for _, ev := range events {
		_ = enc.Encode(ev)
	}
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
