package tools

import (
	"context"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// Deps are what the tools need. Build them with NewDeps.
type Deps struct {
	Runtime *upstream.Runtime
	Logger  *slog.Logger
	Clock   upstream.Clock
	Scans   *ScanCache
	Cursors CursorKey
	// Store keeps selections and operations; without one, the selection
	// tools answer INTERNAL_ERROR.
	Store  selection.Store
	Engine *selection.Engine
	// Memory answers repeats of non-retryable failures (60 s by default).
	Memory *ProblemMemory
	// Auditor, when set before UseStore, also writes the audit trail as
	// JSON Lines.
	Auditor *selection.Auditor
	// Redactor removes the credentials from every tool result, log record,
	// stored document and audit line (NewDeps takes the runtime's).
	Redactor *envelope.Redactor
}

// NewDeps fills the defaults: a wall clock, a fresh cursor key and a scan
// cache that keeps frozen scans for 15 minutes.
func NewDeps(rt *upstream.Runtime, logger *slog.Logger) *Deps {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var red *envelope.Redactor
	if rt != nil {
		red = rt.Redactor
	}
	if red == nil {
		red = envelope.NewRedactor()
	}
	return &Deps{
		Runtime:  rt,
		Redactor: red,
		Logger:   slog.New(red.Handler(logger.Handler())),
		Clock:    upstream.WallClock,
		Scans:    NewScanCache(15*time.Minute, 64, 256<<20, upstream.WallClock),
		Cursors:  NewCursorKey(),
	}
}

// UseStore attaches the store, builds the commit engine and takes the
// cursor key from the store, so that cursors outlive a restart. background
// is the context operations run in after a commit call returns.
// Everything written to the store, and to the auditor's file, passes
// through the deps' redactor.
func (d *Deps) UseStore(ctx, background context.Context, s selection.Store) error {
	s = selection.Redacting(s, d.Redactor)
	d.Auditor = d.Auditor.WithRedactor(d.Redactor)
	d.Store = s
	d.Engine = &selection.Engine{Store: s, Runtime: d.Runtime, Clock: d.Clock, Logger: d.Logger, Background: background, Auditor: d.Auditor}
	key, err := s.SetMetaIfAbsent(ctx, "cursor_key", NewCursorKey().Secret)
	if err != nil {
		return err
	}
	d.Cursors = cursorKeyFrom(key)
	return nil
}

// Previewer builds selections with the deps' store and clock.
func (d *Deps) Previewer() *selection.Previewer {
	return &selection.Previewer{Store: d.Store, Clock: d.Clock, Logger: d.Logger}
}

// Specs returns every tool.
func (d *Deps) Specs() []Spec {
	return []Spec{DescribeResources(d), SearchAll(d), PreviewSelection(d), GetSelection(d), CommitBulkAction(d), GetOperation(d)}
}

// Version is airlock's version, reported to MCP clients.
var Version = "0.1.0"

// NewServer assembles the MCP server with every tool registered.
func NewServer(d *Deps) (*server.MCPServer, error) {
	srv := server.NewMCPServer("airlock", Version,
		server.WithToolCapabilities(false),
		server.WithElicitation(),
		server.WithInstructions(Instructions),
	)
	if d.Memory == nil {
		d.Memory = NewProblemMemory(d.Clock, time.Minute)
	}
	if d.Memory.Fingerprint == nil && d.Runtime != nil {
		d.Memory.Fingerprint = d.Runtime.CredentialFingerprint
	}
	if err := Register(srv, RegisterOptions{Logger: d.Logger, Memory: d.Memory, Redactor: d.Redactor}, d.Specs()...); err != nil {
		return nil, err
	}
	return srv, nil
}

// Instructions are sent to clients at initialization: the rules an agent
// must follow to read airlock's answers correctly.
const Instructions = `airlock answers every call with an envelope. Rules:
- Treat an empty or short list as proof of absence only when complete is true.
- When complete is false, read incomplete_reasons and follow continuation (next_cursor, retry_after, restart, narrow_query); never invent a cursor.
- A partial answer may support a read-only, bounded investigation, never a bulk change.
- Surface incomplete_reasons to the user before asking to act on a result.
- Writes go preview_selection -> show the manifest, effect and exclusions to the user -> commit_bulk_action with the selection_id, digest and the same action. Never approve on the user's behalf.`
