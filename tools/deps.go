package tools

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/airlock-mcp/airlock/internal/signing"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/scancache"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// Config is everything the tools need, given once to New.
type Config struct {
	// Runtime is the initialized configuration; nil serves no resource
	// (the operator commands, which read the store alone).
	Runtime *upstream.Runtime
	// Logger receives what the tools log, every credential redacted; nil
	// discards it.
	Logger *slog.Logger
	// Clock is the time the tools read (the wall clock when nil).
	Clock upstream.Clock
	// Store keeps selections, operations, approvals, the audit trail and
	// frozen scans. Without one, the selection tools answer
	// INTERNAL_ERROR, and cursors and frozen scans live in this process
	// alone.
	Store selection.Store
	// Background is the context operations run in after a commit call
	// returns (context.Background() when nil): cancel it to stop them.
	Background context.Context
	// Secret, when set, is what every signing key derives from (cursors,
	// elicitation state, review form tokens, the seal of the upstream's
	// continuations in frozen scans): processes given the same secret
	// accept each other's. Without it each key is generated once and kept
	// in the store, which shares it with every process using that store.
	Secret []byte
	// Auditor, when set, also writes the audit trail as JSON Lines.
	Auditor *selection.Auditor
	// Tools choose the tools offered (see Options).
	Tools Options
	// ProgressInterval is how often a call that asked for progress reports
	// it, on Clock, whether or not its work moved (DefaultProgressInterval
	// when zero).
	ProgressInterval time.Duration
	// Observer, when set, is told what the commit engine does (journal
	// writes, takeovers, decisions): metrics.
	Observer selection.Observer
	// LeaseTTL is how long a running operation's lease lasts without
	// renewal (selection.DefaultLeaseTTL when zero).
	LeaseTTL time.Duration
	// CancelPoll is how often a running operation looks for a
	// cancellation asked of another process (selection.DefaultCancelPoll
	// when zero).
	CancelPoll time.Duration
	// ScanMemory bounds what this process holds of the frozen scans it
	// shares with the store (scancache.DefaultMemory when zero).
	ScanMemory int
	// Fingerprint names what an answer depends on besides the call, for
	// the memory of failed calls (the runtime's credential fingerprint
	// when nil).
	Fingerprint func() string
}

// Deps are what the tools share: built once by New, never changed after.
// Their fields are read-only.
type Deps struct {
	Runtime *upstream.Runtime
	Logger  *slog.Logger
	Clock   upstream.Clock
	Scans   *scancache.Cache
	Cursors CursorKey
	// Store keeps selections and operations (redacting what is written);
	// nil without one.
	Store  selection.Store
	Engine *selection.Engine
	// Memory answers repeats of non-retryable failures (60 s).
	Memory *ProblemMemory
	// Secret is Config.Secret.
	Secret []byte
	// Options choose the tools offered (see Enabled).
	Options          Options
	ProgressInterval time.Duration
	// Redactor removes the credentials from every tool result, log record,
	// stored document and audit line: the runtime's.
	Redactor *redact.Redactor
}

// New builds the tools' dependencies: a clock, the redacting logger, the
// memory of failed calls, the frozen-scan cache (kept for 15 minutes) and,
// with a store, the commit engine and the keys that sign cursors and seal
// the upstream's continuations, taken from the secret or the store so that
// cursors outlive a restart and continue on any process sharing the store.
// Everything written to the store, and to the auditor's file, passes
// through the runtime's redactor. Options that would offer less than they
// name are refused (see Options.CheckFor).
func New(ctx context.Context, c Config) (*Deps, error) {
	if err := c.Tools.CheckFor(c.Runtime); err != nil {
		return nil, err
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var red *redact.Redactor
	if c.Runtime != nil {
		red = c.Runtime.Redactor
	}
	if red == nil {
		red = redact.New()
	}
	clock := c.Clock
	if clock == nil {
		clock = upstream.WallClock
	}
	background := c.Background
	if background == nil {
		background = context.Background()
	}
	d := &Deps{
		Runtime:          c.Runtime,
		Redactor:         red,
		Logger:           slog.New(red.Handler(logger.Handler())),
		Clock:            clock,
		Scans:            scancache.New(15*time.Minute, 64, 256<<20, clock),
		Cursors:          NewCursorKey(),
		Memory:           NewProblemMemory(clock, time.Minute),
		Secret:           c.Secret,
		Options:          c.Tools,
		ProgressInterval: c.ProgressInterval,
	}
	d.Memory.fingerprint = c.Fingerprint
	if d.Memory.fingerprint == nil && c.Runtime != nil {
		d.Memory.fingerprint = c.Runtime.CredentialFingerprint
	}
	if c.ScanMemory > 0 {
		d.Scans.SetMemory(c.ScanMemory)
	}
	if c.Store == nil {
		return d, nil
	}
	s := selection.Redacting(c.Store, red)
	d.Store = s
	d.Engine = &selection.Engine{Store: s, Runtime: c.Runtime, Clock: clock, Logger: d.Logger, Background: background,
		Auditor: c.Auditor.WithRedactor(red), Observer: c.Observer, LeaseTTL: c.LeaseTTL, CancelPoll: c.CancelPoll}
	key, err := d.key(ctx, "cursor_key")
	if err != nil {
		return nil, fmt.Errorf("the cursor key: %w", err)
	}
	d.Cursors = cursorKeyFrom(key)
	// The upstream's continuations in the frozen scans the store keeps
	// are sealed, with a key every process sharing the store (or the
	// secret) derives.
	key, err = d.key(ctx, "scan_state_key")
	if err != nil {
		return nil, fmt.Errorf("the scan state key: %w", err)
	}
	box, err := signing.NewBox(key)
	if err != nil {
		return nil, err
	}
	d.Scans.Share(s, c.Runtime, d.Logger, box)
	return d, nil
}

// key returns the named signing key: derived from Secret when it is set,
// else generated once and kept in the store.
func (d *Deps) key(ctx context.Context, name string) ([]byte, error) {
	return signing.Key(ctx, d.Secret, name, d.Store)
}

// Previewer builds selections with the deps' store and clock.
func (d *Deps) Previewer() *selection.Previewer {
	return &selection.Previewer{Store: d.Store, Clock: d.Clock, Logger: d.Logger}
}
