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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/httpguard"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/scancache"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

const usage = `airlock: an MCP server between AI agents and HTTP APIs.

Usage: airlock COMMAND [flags]

Serving
  serve      serve MCP over stdio, or streamable HTTP and SSE with --http
  demo       a guided tour against the built-in demo API, through a real MCP client

Describing an API
  init       draft a configuration from an OpenAPI document or a live sample
  probe      check every assumption of a configuration against the live API
  check      validate a configuration
  schema     print the configuration's JSON Schema, for editors
  contract   check recorded answers (and, with --live, the API) against the decision-field contracts

Deciding, outside the agent's channel
  approve    approve or reject a selection at a terminal
  review     serve the review page
  audit      who decided, and which calls an operation made

  version    print the version, the commit and the Go version (also: airlock --version)

Run 'airlock COMMAND --help' for a command's flags. Every flag is spelled
--name (a single dash works too). Exit status: 0 done, 1 failed or refused,
2 a wrong command line (nothing was done).

Environment
  AIRLOCK_STORE          the store when --store is not given: a SQLite file or a postgres:// URL
  AIRLOCK_SECRET         (or AIRLOCK_SECRET_FILE) what cursor, elicitation and form keys derive from
  AIRLOCK_LEASE_TTL      how long a running operation's lease lasts without renewal (default 30s)
  AIRLOCK_SHUTDOWN_GRACE how long a stopping serve waits for running operations (default 30s)
  AIRLOCK_HTTP_TOKEN     the bearer token of serve --http (off loopback, this or OAuth is required)
  AIRLOCK_METRICS_TOKEN  the bearer token of serve --metrics (off loopback, this or OAuth is required)
  AIRLOCK_OAUTH_ISSUER   (and _RESOURCE, _AUDIENCE, _REQUIRED_SCOPES, _JWKS_URL, _GROUPS_CLAIM, _SKEW)
                         serve --http as an OAuth resource server: see airlock serve --help
  AIRLOCK_REVIEW_TOKEN   the token of the review page (required off loopback)
  AIRLOCK_LOG_LEVEL      the default of --log-level (debug, info, warn, error)
  OTEL_EXPORTER_OTLP_ENDPOINT  (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) send traces there over OTLP/HTTP
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	ctx, stop := signalContext(stderr)
	defer stop()
	name, rest := args[0], args[1:]
	if name == "help" && len(rest) > 0 {
		// airlock help serve is airlock serve --help.
		name, rest = rest[0], []string{"--help"}
	}
	var err error
	switch name {
	case "serve":
		err = serve(ctx, rest, stdin, stdout, stderr)
	case "check":
		err = check(rest, stdout, stderr)
	case "demo":
		err = demo(ctx, rest, stdout, stderr)
	case "contract":
		err = contract(ctx, rest, stdout, stderr)
	case "schema":
		err = schemaCmd(rest, stdout)
	case "init":
		err = initCmd(ctx, rest, stdout, stderr)
	case "probe":
		err = probe(ctx, rest, stdout, stderr)
	case "approve":
		err = approve(ctx, rest, stdin, stdout, stderr)
	case "audit":
		err = audit(ctx, rest, stdout, stderr)
	case "review":
		err = reviewCmd(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		err = versionCmd(rest, stdout)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "airlock: unknown command %q\n\n%s", name, usage)
		return exitUsage
	}
	return exitCode(err, name, stderr)
}

// signalContext is done at the first SIGINT or SIGTERM: a command stops
// what it does and cleans up (serve waits for its running operations, for
// --shutdown-grace at most). A second signal ends the process at once,
// waiting for nothing: the leases of the operations still running expire,
// and a restart or another process takes them over.
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "airlock: a second signal: exiting now, without waiting for running operations")
			os.Exit(exitFailure)
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			cancel()
		})
	}
}

// exitCode prints what err says, unless it was printed already, and
// returns the exit status it stands for.
func exitCode(err error, name string, stderr io.Writer) int {
	var ue *usageError
	var ce config.Errors
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "airlock %s: %s\nRun 'airlock %s --help' for usage.\n", name, ue.msg, name)
		return exitUsage
	case errors.As(err, &ce):
		fmt.Fprintf(stderr, "airlock: the configuration has %d error(s):\n", len(ce))
		for _, e := range ce {
			fmt.Fprintf(stderr, "  %s\n", e.Error())
		}
	case errors.Is(err, errDrift), errors.Is(err, errDecision), errors.Is(err, errWrong):
		// printed already
	default:
		fmt.Fprintf(stderr, "airlock: %v\n", err)
	}
	return exitFailure
}

const serveAbout = `Serve MCP over stdio (for an MCP client that starts airlock), or, with --http,
streamable HTTP at /mcp and SSE at /sse. A non-loopback --http address requires
AIRLOCK_HTTP_TOKEN, which clients send as Authorization: Bearer, or OAuth:
--oauth-issuer and --oauth-resource make airlock a resource server that accepts
JWT access tokens of that issuer for that resource (airlock:read offers the
read tools, airlock:write adds preview and commit) and serves its metadata at
/.well-known/oauth-protected-resource. --review also serves the review page at
/review/. Request bodies over --max-body are answered 413 unread; headers and
bodies must arrive within 10 s.

Any number of servers may share a store: a SQLite file on one machine, a
PostgreSQL database (--store postgres://… or AIRLOCK_STORE) for replicas, with
the same AIRLOCK_SECRET. Logs go to standard error (or --log-file), never to
standard output, which belongs to MCP over stdio.`

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "serve (--config FILE | --demo) [--http ADDR [--review]] [flags]", serveAbout)
	configPath := fs.String("config", "", "the configuration `FILE` (YAML)")
	demoMode := fs.Bool("demo", false, "serve the built-in demo API")
	configOrDemo := fs.String("config-or-demo", "", "the configuration `FILE`, or the built-in demo API when FILE is empty: for a host that passes a setting left blank as an empty value (an MCP Bundle)")
	httpAddr := fs.String("http", "", "serve streamable HTTP (/mcp) and SSE (/sse) on `ADDR` (host:port) instead of stdio")
	storePath := fs.String("store", "", "the `STORE`: a SQLite file or a postgres:// URL (default $AIRLOCK_STORE, else a SQLite file under the user's state directory)")
	withReview := fs.Bool("review", false, "with --http: also serve the operator's review page at /review/")
	auditLog := fs.String("audit-log", "", "also append the audit trail (decisions and external calls) to `FILE` as JSON Lines")
	var origins stringList
	fs.Var(&origins, "allow-origin", "a browser `ORIGIN` allowed to call the HTTP transport (repeatable)")
	maxBody := fs.Int64("max-body", httpserve.DefaultMaxBodyBytes, "with --http: the largest request body, in `BYTES`; a larger one is answered 413")
	maxStreams := fs.Int("max-streams", httpserve.DefaultMaxStreams, "with --http: the most event streams (sessions listening) open at once, `N`; past it, 503")
	scanMemory := fs.Int("scan-memory", scancache.DefaultMemory, "the most memory, in `BYTES`, this process holds of the frozen scans search_all cursors continue (the store keeps them all)")
	metricsAddr := fs.String("metrics", "", "with --http: serve Prometheus metrics at /metrics, and the probes, on `ADDR` (host:port; a host-less :port binds loopback; off loopback, $"+envMetricsToken+" or OAuth is required)")
	readOnly := fs.Bool("read-only", false, "offer no write tool (neither preview_selection nor commit_bulk_action)")
	graceFlag := fs.String("shutdown-grace", os.Getenv(envShutdownGrace), "on SIGINT or SIGTERM, wait this `DURATION` for running operations before cancelling them; a second signal exits at once (default $"+envShutdownGrace+", else 30s)")
	only := fs.String("tools", "", "offer only these tools, a comma-separated `LIST` of names")
	exclude := fs.String("exclude-tools", "", "never offer these tools, a comma-separated `LIST` of names")
	var logOpts logOptions
	logOpts.register(fs)
	var oauthOpts oauthOptions
	oauthOpts.register(fs)
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	if err := oauthOpts.check(*httpAddr != ""); err != nil {
		return err
	}
	grace, err := shutdownGrace(*graceFlag)
	if err != nil {
		return err
	}
	if isSet(fs, "config-or-demo") {
		if *demoMode || *configPath != "" {
			return usagef("use --config-or-demo alone, without --config or --demo")
		}
		*configPath, *demoMode = *configOrDemo, *configOrDemo == ""
	}
	switch {
	case *maxBody <= 0 || *maxStreams <= 0 || *scanMemory <= 0:
		return usagef("--max-body, --max-streams and --scan-memory must be positive")
	case *demoMode && *configPath != "":
		return usagef("use --config or --demo, not both")
	case !*demoMode && *configPath == "":
		return usagef("needs --config FILE or --demo")
	case *metricsAddr != "" && *httpAddr == "":
		return usagef("--metrics needs --http")
	case *withReview && *httpAddr == "":
		return usagef("--review needs --http: the review page is served over HTTP")
	}
	toolOpts := tools.Options{ReadOnly: *readOnly, Tools: splitList(*only), ExcludeTools: splitList(*exclude)}
	if err := toolOpts.Check(); err != nil {
		return usagef("%s", dashedToolFlags(err.Error()))
	}
	var addr string
	var loopback bool
	if *httpAddr != "" {
		var err error
		if addr, loopback, err = bindAddr(*httpAddr); err != nil {
			return usagef("--http %q: %v", *httpAddr, err)
		}
	}
	token := os.Getenv("AIRLOCK_HTTP_TOKEN")
	if *httpAddr != "" && !loopback && token == "" && !oauthOpts.set() {
		return errors.New("--http binds a non-loopback address: set AIRLOCK_HTTP_TOKEN, or --oauth-issuer and --oauth-resource, so that clients must present a bearer token")
	}
	metricsToken := os.Getenv(envMetricsToken)
	if *metricsAddr != "" {
		_, metricsLoopback, err := bindAddr(*metricsAddr)
		if err != nil {
			return usagef("--metrics %q: %v", *metricsAddr, err)
		}
		if !metricsLoopback && metricsToken == "" && !oauthOpts.set() {
			return errors.New("--metrics binds a non-loopback address: set " + envMetricsToken + ", or --oauth-issuer and --oauth-resource, so that scrapers must present a bearer token")
		}
	}
	// Everything logged passes through the redactor, which learns the
	// upstream credentials when the configuration is loaded.
	red := redact.New(os.Getenv("AIRLOCK_HTTP_TOKEN"), os.Getenv("AIRLOCK_REVIEW_TOKEN"), metricsToken)
	logger, closeLog, err := logOpts.open(stderr, red)
	if err != nil {
		return err
	}
	defer closeLog()
	demoURL := ""
	getenv := os.Getenv
	if *demoMode {
		api := httptest.NewUnstartedServer(&fixtures.Server{})
		api.Start()
		defer api.Close()
		logger.Info("demo API started", "url", api.URL)
		demoURL, getenv = api.URL, demoEnv
	}
	cfg, err := loadConfig(*configPath, demoURL)
	if err != nil {
		return err
	}
	ops, err := newOperability(ctx, logger, cfg, *metricsAddr != "")
	if err != nil {
		return err
	}
	defer ops.close()
	rt, err := initialize(ctx, cfg, getenv, logger, red, ops.upstreamOptions)
	if err != nil {
		return err
	}
	if err := toolOpts.CheckFor(rt); err != nil {
		return err // before the store: a server that cannot start creates nothing
	}
	toolsCfg := tools.Config{Runtime: rt, Logger: logger, Tools: toolOpts, ScanMemory: *scanMemory, Observer: ops.engineObserver()}
	if *auditLog != "" {
		f, err := openAuditLog(*auditLog)
		if err != nil {
			return err
		}
		defer f.Close()
		toolsCfg.Auditor = selection.NewAuditor(f)
	}
	// Operations outlive the call that started them, not the server.
	background, stopBackground := context.WithCancel(context.Background())
	defer stopBackground()
	toolsCfg.Background = background
	deps, closeStore, err := attachStore(ctx, toolsCfg, *storePath, logger)
	if err != nil {
		return err
	}
	defer closeStore(grace, stopBackground)
	// Tasks live in the store, so that any replica answers for them, on
	// either transport.
	mcpSrv, err := mcpserver.NewServer(deps, mcpserver.Options{Observers: ops.observers(), Tasks: &mcpserver.TaskOptions{Background: background}, Version: version})
	if err != nil {
		return err
	}
	mcpSrv.MCP().Use(newIdleRelease(logger, deps.Scans.Release).middleware)
	// What start-up left free (the configuration's parse, the store's
	// first statements) is most of the heap an idle server would
	// otherwise hold until its first quiet period: it is handed back now,
	// beside the first requests.
	go debug.FreeOSMemory()
	if *httpAddr == "" {
		logger.Info("serving MCP over stdio")
		if err := mcpSrv.ServeStdio(ctx, stdin, stdout, slog.NewLogLogger(logger.Handler(), slog.LevelError)); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	oauth, err := oauthOpts.build(ctx)
	if err != nil {
		return err
	}
	probes := httpserve.HealthHandlers(deps.Store)
	opts := mcpserver.HTTPOptions{Options: httpserve.Options{Token: token, AllowedOrigins: origins, Logger: logger, MaxBodyBytes: *maxBody,
		MaxStreams: *maxStreams, Probes: probes}, Store: deps.Store, Clock: deps.Clock}
	if oauth != nil {
		opts.OAuth = oauth
	}
	if *metricsAddr != "" {
		metricsOpts := httpserve.Options{Token: metricsToken, AllowedOrigins: origins, Logger: logger, Probes: probes}
		if oauth != nil {
			metricsOpts.OAuth = oauth
		}
		stopMetrics, err := ops.serveMetrics(ctx, *metricsAddr, metricsOpts)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	if *withReview {
		opts.Extra = map[string]http.Handler{review.Prefix: review.NewHandler(reviewDeps(deps), review.Options{Token: token,
			Principal: reviewPrincipal(token, selection.SubjectStaticToken)})}
		logger.Info("serving the review page", "url", "http://"+ln.Addr().String()+review.Prefix)
	}
	h := mcpserver.NewHTTPHandler(mcpSrv, opts)
	logger.Info("serving MCP over HTTP", "mcp", "http://"+ln.Addr().String()+"/mcp", "sse", "http://"+ln.Addr().String()+"/sse",
		"max_body_bytes", *maxBody)
	if oauth != nil {
		logger.Info("accepting OAuth access tokens", "issuer", oauthOpts.issuer, "resource", oauthOpts.resource, "metadata", oauth.MetadataURL())
	}
	return serveHTTP(ctx, ln, h, logger)
}

// serveHTTP serves h on ln until ctx is done, then shuts down gracefully.
// The server bounds header time, idle connections and header size (see
// httpserve.NewServer); the server's own errors go to logger.
func serveHTTP(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	hs := httpserve.NewServer(h, logger)
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

// initialize initializes a configuration; red, when set, learns its
// credentials (nil: the runtime makes its own redactor).
func initialize(ctx context.Context, cfg *config.Config, getenv func(string) string, logger *slog.Logger, red *redact.Redactor, more ...func(*upstream.Options)) (*upstream.Runtime, error) {
	opts := upstream.Options{Logger: logger, Getenv: getenv, Redactor: red}
	for _, f := range more {
		f(&opts)
	}
	return upstream.Initialize(ctx, cfg, opts)
}

func check(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "check --config FILE [--strict]", "Validate a configuration as serve would load it (contracts, schemas, templates),\nwithout calling the API: every error at once, with its line.")
	configPath := fs.String("config", "", "the configuration `FILE` (YAML)")
	strict := fs.Bool("strict", false, "treat warnings (an unset credential, an expired alias) as errors")
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	if *configPath == "" {
		return usagef("needs --config FILE")
	}
	cfg, err := loadConfig(*configPath, "")
	if err != nil {
		return err
	}
	// Build the runtime as serve would (contracts, schemas, templates),
	// with placeholders for what the environment lacks: those are warnings.
	if _, err := upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: cfg.Placeholders(os.Getenv), WithoutCredentials: true}); err != nil {
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
	return net.JoinHostPort(host, port), httpguard.IsLoopback(host), nil
}

// dashedToolFlags names the tool options as the command line spells them.
func dashedToolFlags(msg string) string {
	return strings.NewReplacer("(tools)", "(--tools)", "(exclude-tools)", "(--exclude-tools)", "which read-only", "which --read-only").Replace(msg)
}

// splitList reads a comma-separated flag value; empty is none.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// loadConfig is how every command reads its configuration: the file at
// path, whose relative paths (contract schemas, OpenAPI documents) resolve
// against its own directory whatever the working directory, or, when
// demoURL is set, the demo's configuration for an API there.
//
// A draft's TODOs are reported with every other error of the file, each
// with its line.
func loadConfig(path, demoURL string) (*config.Config, error) {
	if demoURL != "" {
		return config.Parse(fixtures.DemoConfig(demoURL))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return config.Load(path) // says what it could not read
	}
	// A draft's TODO(...) placeholders are reported as such, not as the
	// values they stand in for. Looking for them parses the file again,
	// so only a file that may hold one is looked at: one that spells the
	// prefix, or that holds an escape that could.
	if bytes.Contains(b, []byte(config.TodoPrefix)) || bytes.IndexByte(b, '\\') >= 0 {
		if err := config.DraftErrors(b); err != nil {
			return nil, err
		}
	}
	return config.Load(path)
}
