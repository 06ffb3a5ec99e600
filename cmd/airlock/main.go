// Command airlock is an MCP server that lets AI agents use real HTTP APIs
// without confident, wrong, bulk changes.
//
//	airlock serve --config airlock.yaml            # stdio, for an MCP client
//	airlock serve --config airlock.yaml --http 127.0.0.1:8765
//	airlock serve --demo                           # the built-in demo API
//	airlock init --openapi api.yaml -o airlock.yaml # draft a configuration
//	airlock probe --config airlock.yaml            # check it against the live API
//	airlock check --config airlock.yaml            # validate a configuration
//	airlock demo                                   # a guided tour
//	airlock approve SELECTION                      # an operator approves a write
//	airlock review --listen 127.0.0.1:8766         # the review page
//	airlock audit OPERATION                        # who decided, what was called
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

const usage = `airlock: an MCP server between AI agents and HTTP APIs.

Usage:
  airlock serve (--config FILE | --demo) [--http ADDR [--review] [--max-body BYTES] [--max-streams N]] [--store PATH|URL] [--audit-log FILE] [--allow-origin URL]...
  airlock init (--openapi SPEC | --sample URL) [--base-url URL] [--resource NAME]... [--environment NAME] [-o FILE]
  airlock probe --config FILE [--resource NAME]... [--json] [--max-requests N]
  airlock check --config FILE [--strict]
  airlock contract (--config FILE [--fixtures DIR] | --demo) [--live]
  airlock demo
  airlock approve SELECTION [--reject] [--export csv|json FILE]... [--yes DIGEST] [--store PATH|URL] [--config FILE | --demo] [--audit-log FILE]
  airlock review [--listen 127.0.0.1:8766] [--store PATH|URL] [--config FILE | --demo] [--audit-log FILE]
  airlock audit OPERATION [--json] [--store PATH|URL]

init drafts a configuration (TODO(...) marks what it could not decide);
probe checks every assumption of a configuration against the live API,
read-only, and exits non-zero when one is wrong.

serve speaks MCP over stdio unless --http is given; then it serves streamable
HTTP at /mcp and SSE at /sse. A non-loopback --http address requires
AIRLOCK_HTTP_TOKEN. --review also serves the review page at /review/.
Request bodies over --max-body (default 4 MiB) are answered 413 unread; a
body must arrive within 10 s, headers within 10 s; at most --max-streams
(default 64) event streams are open at once.

approve and review decide outside the agent's channel, on the store the
server uses. approve asks y/N on a terminal; without one it needs --yes
with the selection's digest typed out. A non-loopback review page requires
AIRLOCK_REVIEW_TOKEN (or, with serve --review, AIRLOCK_HTTP_TOKEN); open it
once with ?token=.... Logs go to stderr.

Any number of servers may share a store: a SQLite file on one machine, a
PostgreSQL database (--store postgres://… or AIRLOCK_STORE) for replicas.
AIRLOCK_SECRET (or AIRLOCK_SECRET_FILE) is what cursor and elicitation keys
derive from; AIRLOCK_LEASE_TTL (default 30s) how long a running operation's
lease lasts without renewal.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		err = check(args[1:], stdout, stderr)
	case "demo":
		err = demo(ctx, args[1:], stdout, stderr)
	case "contract":
		err = contract(ctx, args[1:], stdout, stderr)
	case "init":
		err = initCmd(ctx, args[1:], stdout, stderr)
	case "probe":
		err = probe(ctx, args[1:], stdout, stderr)
	case "approve":
		err = approve(ctx, args[1:], stdin, stdout, stderr)
	case "audit":
		err = audit(ctx, args[1:], stdout, stderr)
	case "review":
		err = reviewCmd(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "airlock: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		var ce upstream.ConfigErrors
		if errors.As(err, &ce) {
			fmt.Fprintf(stderr, "airlock: the configuration has %d error(s):\n", len(ce))
			for _, e := range ce {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			return 1
		}
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if errors.Is(err, errDrift) || errors.Is(err, errDecision) || errors.Is(err, errWrong) {
			return 1
		}
		fmt.Fprintf(stderr, "airlock: %v\n", err)
		return 1
	}
	return 0
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("AIRLOCK_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (YAML)")
	demoMode := fs.Bool("demo", false, "serve the built-in demo API")
	httpAddr := fs.String("http", "", "serve streamable HTTP (/mcp) and SSE (/sse) on this address instead of stdio")
	storePath := fs.String("store", "", "the store: a SQLite file or a postgres:// URL (default $AIRLOCK_STORE, else a SQLite file under the user's state directory)")
	withReview := fs.Bool("review", false, "with --http: also serve the operator's review page at /review/")
	auditLog := fs.String("audit-log", "", "also append the audit trail (decisions and external calls) to this file as JSON Lines")
	var origins stringList
	fs.Var(&origins, "allow-origin", "browser origin allowed to call the HTTP transport (repeatable)")
	maxBody := fs.Int64("max-body", tools.DefaultMaxBodyBytes, "with --http: the largest request body in bytes; a larger one is answered 413")
	maxStreams := fs.Int("max-streams", tools.DefaultMaxStreams, "with --http: the most event streams (sessions listening) open at once; past it, 503")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *maxBody <= 0 || *maxStreams <= 0 {
		return errors.New("--max-body and --max-streams must be positive")
	}
	// Everything written to stderr passes through the redactor, which
	// learns the upstream credentials when the configuration is loaded.
	red := envelope.NewRedactor(os.Getenv("AIRLOCK_HTTP_TOKEN"), os.Getenv("AIRLOCK_REVIEW_TOKEN"))
	logger := newLogger(red.Writer(stderr))
	var cfgBytes []byte
	getenv := os.Getenv
	switch {
	case *demoMode && *configPath != "":
		return errors.New("use --config or --demo, not both")
	case *demoMode:
		api := httptest.NewUnstartedServer(&fixtures.Server{})
		api.Start()
		defer api.Close()
		logger.Info("demo API started", "url", api.URL)
		cfgBytes = fixtures.DemoConfig(api.URL)
		getenv = demoEnv
	case *configPath != "":
		b, err := os.ReadFile(*configPath)
		if err != nil {
			return fmt.Errorf("read config: %w", err)
		}
		cfgBytes = b
	default:
		return errors.New("serve needs --config FILE or --demo")
	}
	deps, err := buildDeps(ctx, cfgBytes, getenv, logger, red)
	if err != nil {
		return err
	}
	if *withReview && *httpAddr == "" {
		return errors.New("--review needs --http: the review page is served over HTTP")
	}
	if *auditLog != "" {
		f, err := openAuditLog(*auditLog)
		if err != nil {
			return err
		}
		defer f.Close()
		deps.Auditor = selection.NewAuditor(f)
	}
	// Operations outlive the call that started them, not the server.
	background, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	closeStore, err := attachStore(ctx, background, deps, *storePath, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	mcpSrv, err := tools.NewServer(deps)
	if err != nil {
		return err
	}
	if *httpAddr == "" {
		stdio := server.NewStdioServer(mcpSrv)
		stdio.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
		logger.Info("serving MCP over stdio")
		if err := stdio.Listen(ctx, stdin, stdout); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	token := os.Getenv("AIRLOCK_HTTP_TOKEN")
	addr, loopback, err := bindAddr(*httpAddr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	if !loopback && token == "" {
		return errors.New("--http binds a non-loopback address: set AIRLOCK_HTTP_TOKEN so that clients must present a bearer token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	opts := tools.HTTPOptions{Token: token, AllowedOrigins: origins, Logger: logger, MaxBodyBytes: *maxBody, MaxStreams: *maxStreams}
	if *withReview {
		opts.Extra = map[string]http.Handler{review.Prefix: review.NewHandler(reviewDeps(deps), review.Options{Token: token})}
		logger.Info("serving the review page", "url", "http://"+ln.Addr().String()+"/review/")
	}
	h := tools.NewHTTPHandler(mcpSrv, opts)
	logger.Info("serving MCP over HTTP", "mcp", "http://"+ln.Addr().String()+"/mcp", "sse", "http://"+ln.Addr().String()+"/sse",
		"max_body_bytes", *maxBody)
	return serveHTTP(ctx, ln, h, logger)
}

// serveHTTP serves h on ln until ctx is done, then shuts down gracefully.
// The server bounds header time, idle connections and header size (see
// tools.NewHTTPServer); the server's own errors go to logger.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	hs := tools.NewHTTPServer(h, logger)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// demoEnv supplies the demo credential unless the environment sets one.
func demoEnv(k string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	if k == fixtures.DemoTokenEnv {
		return fixtures.DefaultToken
	}
	return ""
}

// buildDeps initializes a configuration; red, when set, learns its
// credentials (nil: the runtime makes its own redactor).
func buildDeps(ctx context.Context, cfgBytes []byte, getenv func(string) string, logger *slog.Logger, red *envelope.Redactor) (*tools.Deps, error) {
	cfg, err := upstream.ParseConfig(cfgBytes)
	if err != nil {
		return nil, err
	}
	rt, err := cfg.Initialize(ctx, upstream.Options{Logger: logger, Getenv: getenv, Redactor: red})
	if err != nil {
		return nil, err
	}
	return tools.NewDeps(rt, logger), nil
}

func check(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "configuration file (YAML)")
	strict := fs.Bool("strict", false, "treat warnings (an unset credential, an expired alias) as errors")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *configPath == "" {
		return errors.New("check needs --config FILE")
	}
	if b, err := os.ReadFile(*configPath); err == nil {
		if todos := upstream.FindTodos(b); len(todos) > 0 {
			return todos // a draft's open decisions, before what they stand in for
		}
	}
	cfg, err := upstream.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	// Build the runtime as serve would (contracts, schemas, templates),
	// with placeholders for what the environment lacks: those are warnings.
	if _, err := cfg.Initialize(context.Background(), upstream.Options{Getenv: cfg.Placeholders(os.Getenv), WithoutCredentials: true}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "configuration ok: environment %q, %d upstream(s), %d resource(s), %d action(s)\n", cfg.Environment, len(cfg.Upstreams), len(cfg.Resources), len(cfg.Actions))
	for _, line := range cfg.Summary(os.Getenv) {
		fmt.Fprintln(stdout, "  "+line)
	}
	warnings := append(cfg.EnvWarnings(os.Getenv), cfg.Warnings(time.Now())...)
	for _, w := range warnings {
		fmt.Fprintln(stdout, "warning: "+w)
	}
	if *strict && len(warnings) > 0 {
		return fmt.Errorf("%d warning(s) with --strict", len(warnings))
	}
	return nil
}

// bindAddr is the address to listen on for a --http or --listen value: an
// address without a host (":8765") binds loopback, never every interface.
// loopback says whether the address is a loopback one.
func bindAddr(addr string) (string, bool, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false, err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), tools.IsLoopback(host), nil
}
