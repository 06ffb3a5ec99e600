package tools

import (
	"context"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/internal/signing"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/scancache"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// Deps are what the tools need. Build them with NewDeps.
type Deps struct {
	Runtime *upstream.Runtime
	Logger  *slog.Logger
	Clock   upstream.Clock
	Scans   *scancache.Cache
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
	// Secret, when set before UseStore, is what every signing key derives
	// from (cursors, elicitation state, review form tokens): processes
	// given the same secret accept each other's. Without it each key is
	// generated once and kept in the store, which shares it with every
	// process using that store.
	Secret []byte
	// Options choose the tools offered (see Enabled).
	Options Options
	// ProgressInterval is how often a call that asked for progress reports
	// it, on Clock, whether or not its work moved (DefaultProgressInterval
	// when zero).
	ProgressInterval time.Duration
	// Redactor removes the credentials from every tool result, log record,
	// stored document and audit line (NewDeps takes the runtime's).
	Redactor *redact.Redactor
	// Tasks, when set before NewServer, lets the long tools answer with a
	// task (see NewTasks); it needs the store and the HTTP transport.
	Tasks *Tasks
	// Metrics, when set before NewServer and UseStore, counts tool calls
	// and what the engine does (see NewMetrics).
	Metrics *Metrics
	// Tracing, when set before NewServer, makes a span of each tool call.
	Tracing *Tracing
}

// NewDeps fills the defaults: a wall clock, a fresh cursor key and a scan
// cache that keeps frozen scans for 15 minutes.
func NewDeps(rt *upstream.Runtime, logger *slog.Logger) *Deps {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var red *redact.Redactor
	if rt != nil {
		red = rt.Redactor
	}
	if red == nil {
		red = redact.New()
	}
	return &Deps{
		Runtime:  rt,
		Redactor: red,
		Logger:   slog.New(red.Handler(logger.Handler())),
		Clock:    upstream.WallClock,
		Scans:    scancache.New(15*time.Minute, 64, 256<<20, upstream.WallClock),
		Cursors:  NewCursorKey(),
	}
}

// UseStore attaches the store, builds the commit engine, keeps frozen
// scans in the store and takes the cursor key and the key that seals the
// upstream's continuations in those scans from the secret or the store, so
// that cursors outlive a restart and continue on any process sharing the
// store. background is the context operations run in after a
// commit call returns. Everything written to the store, and to the
// auditor's file, passes through the deps' redactor.
func (d *Deps) UseStore(ctx, background context.Context, s selection.Store) error {
	s = selection.Redacting(s, d.Redactor)
	d.Auditor = d.Auditor.WithRedactor(d.Redactor)
	d.Store = s
	d.Engine = &selection.Engine{Store: s, Runtime: d.Runtime, Clock: d.Clock, Logger: d.Logger, Background: background, Auditor: d.Auditor}
	if d.Metrics != nil {
		d.Engine.Observer = d.Metrics
	}
	key, err := d.key(ctx, "cursor_key")
	if err != nil {
		return err
	}
	d.Cursors = cursorKeyFrom(key)
	if d.Scans != nil {
		// The upstream's continuations in the frozen scans the store
		// keeps are sealed, with a key every process sharing the store
		// (or the secret) derives.
		key, err := d.key(ctx, "scan_state_key")
		if err != nil {
			return err
		}
		box, err := signing.NewBox(key)
		if err != nil {
			return err
		}
		d.Scans.Share(s, d.Runtime, d.Logger, box)
	}
	return nil
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

// Specs returns every tool.
func (d *Deps) Specs() []Spec {
	return []Spec{DescribeResources(d), SearchAll(d), PreviewSelection(d), GetSelection(d), CommitBulkAction(d), GetOperation(d)}
}

// ToolsListTTL is the freshness hint of tools/list for clients of protocol
// 2026-07-28: the list changes only when the configuration does.
const ToolsListTTL = 5 * time.Minute

// Version is airlock's version, reported to MCP clients.
var Version = "0.1.0"

// NewServer assembles the MCP server with every tool registered.
func NewServer(d *Deps) (*server.MCPServer, error) {
	opts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions(Instructions),
		server.WithToolFilter(scopeFilter),
		// The tools change only with the configuration (a restart), but
		// which ones a caller sees may depend on who asks: private.
		server.WithMethodCacheHints(mcp.MethodToolsList, ToolsListTTL.Milliseconds(), mcp.CacheScopePrivate),
	}
	if d.Tasks != nil {
		opts = append(opts, d.Tasks.serverOptions()...)
	}
	if d.Tracing != nil {
		opts = append(opts, server.WithToolHandlerMiddleware(d.Tracing.toolMiddleware))
	}
	if d.Metrics != nil {
		opts = append(opts, server.WithToolHandlerMiddleware(d.Metrics.toolMiddleware))
	}
	srv := server.NewMCPServer("airlock", Version, opts...)
	if d.Tasks != nil {
		d.Tasks.srv = srv
	}
	if err := d.register(srv); err != nil {
		return nil, err
	}
	return srv, nil
}

// register adds the enabled tools to srv.
func (d *Deps) register(srv *server.MCPServer) error {
	if d.Memory == nil {
		d.Memory = NewProblemMemory(d.Clock, time.Minute)
	}
	if d.Memory.Fingerprint == nil && d.Runtime != nil {
		d.Memory.Fingerprint = d.Runtime.CredentialFingerprint
	}
	specs, err := d.Enabled()
	if err != nil {
		return err
	}
	if d.Tasks != nil {
		specs = d.Tasks.wrap(specs)
	}
	return Register(srv, RegisterOptions{Logger: d.Logger, Memory: d.Memory, Redactor: d.Redactor}, specs...)
}

// Instructions are sent to clients at initialization: the rules an agent
// must follow to read airlock's answers correctly.
const Instructions = `airlock answers every call with an envelope. Rules:
- Treat an empty or short list as proof of absence only when complete is true.
- When complete is false, read incomplete_reasons and follow continuation (next_cursor, retry_after, restart, narrow_query); never invent a cursor.
- A partial answer may support a read-only, bounded investigation, never a bulk change.
- Surface incomplete_reasons to the user before asking to act on a result.
- Writes go preview_selection -> show the manifest, effect and exclusions to the user -> commit_bulk_action with the selection_id, digest and the same action. Never approve on the user's behalf.
- On error, problem.next_action says what to do. A text answer omits members at their defaults: empty lists, continuation none, status (from complete).`
