package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/user"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// errDecision is returned when an operator command printed its problem
// already.
var errDecision = errors.New("refused")

// operatorDeps opens the store for an operator command. The configuration
// is optional: with it, the action's approval policy and lifetime apply;
// without it, the defaults do.
func operatorDeps(ctx context.Context, storePath, configPath, auditLog string, demo bool, logger *slog.Logger) (*tools.Deps, func(), error) {
	var rt *upstream.Runtime
	getenv := os.Getenv
	demoURL := ""
	switch {
	case demo && configPath != "":
		return nil, nil, usagef("use --config or --demo, not both")
	case demo:
		// The demo's actions do not depend on where its API listens.
		demoURL = "http://127.0.0.1:1"
	}
	if configPath != "" || demoURL != "" {
		cfg, err := loadConfig(configPath, demoURL)
		if err != nil {
			return nil, nil, err
		}
		// The operator needs the actions and their policies, never the
		// upstream's credential.
		if rt, err = upstream.Initialize(ctx, cfg, upstream.Options{Logger: logger, Getenv: getenv, WithoutCredentials: true}); err != nil {
			return nil, nil, err
		}
	}
	c := tools.Config{Runtime: rt, Logger: logger}
	var logFile *os.File
	if auditLog != "" {
		f, err := openAuditLog(auditLog)
		if err != nil {
			return nil, nil, err
		}
		logFile, c.Auditor = f, selection.NewAuditor(f)
	}
	closeAll := func() {
		if logFile != nil {
			logFile.Close()
		}
	}
	st, err := openOperatorStore(ctx, storePath, false)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	c, err = withStore(c, st)
	var deps *tools.Deps
	if err == nil {
		deps, err = tools.New(ctx, c)
	}
	if err != nil {
		st.Close()
		closeAll()
		return nil, nil, err
	}
	return deps, func() { st.Close(); closeAll() }, nil
}

// openAuditLog opens the JSON Lines audit file for appending: the server
// and the operator commands may share one.
func openAuditLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	return f, nil
}

// operatorName says who decides at this terminal.
func operatorName() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "os user " + name + " on " + host
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type export struct{ format, file string }

// exportFlag documents --export FORMAT FILE in help; takeExports reads it
// (a flag takes one value), so a value reaching the flag is misspelled.
type exportFlag struct{}

func (exportFlag) String() string { return "" }
func (exportFlag) Set(string) error {
	return errors.New("takes a format and a file: --export csv FILE")
}

// takeExports removes every "--export FORMAT FILE" from args.
func takeExports(args []string) ([]string, []export, error) {
	var rest []string
	var out []export
	for i := 0; i < len(args); i++ {
		if args[i] != "--export" && args[i] != "-export" {
			rest = append(rest, args[i])
			continue
		}
		if i+2 >= len(args) {
			return nil, nil, usagef("--export needs a format (csv or json) and a file")
		}
		f := args[i+1]
		if f != review.ExportCSV && f != review.ExportJSON {
			return nil, nil, usagef("--export %s: the format is csv or json", f)
		}
		out = append(out, export{f, args[i+2]})
		i += 2
	}
	return rest, out, nil
}

func printProblem(w io.Writer, p *envelope.Problem) {
	fmt.Fprintf(w, "airlock: %s: %s\n", p.Code, p.Detail)
	for _, e := range p.Errors {
		fmt.Fprintf(w, "  %s: %s\n", e.Field, e.Message)
	}
	if p.NextAction != "" {
		fmt.Fprintf(w, "  %s\n", p.NextAction)
	}
}

const approveAbout = `Approve or reject a selection an agent previewed, outside the agent's channel:
it prints the summary (where, what, effect, what is missing), the approval
policy and the first members, then asks y/N on a terminal. Without a terminal
it needs --yes with the selection's digest typed out. The decision is
recorded in the server's store (never created here) and used once.`

func approve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	args, exports, err := takeExports(args)
	if err != nil {
		return err
	}
	fs := newFlags("approve", "approve SELECTION [--reject] [--export csv|json FILE]... [--yes DIGEST] [flags]", approveAbout)
	reject := fs.Bool("reject", false, "reject the selection instead of approving it")
	yes := fs.String("yes", "", "decide without a prompt: the selection's `DIGEST`, typed out in full")
	storePath := fs.String("store", "", "the `STORE` the server uses: a SQLite file or a postgres:// URL (default $AIRLOCK_STORE, else under the user's state directory); never created")
	configPath := fs.String("config", "", "the server's configuration `FILE`, for the action's approval policy")
	demoMode := fs.Bool("demo", false, "the built-in demo's configuration")
	auditLog := fs.String("audit-log", "", "also append the decision to `FILE`, the server's JSON Lines audit file")
	fs.Var(exportFlag{}, "export", "write every member to `csv|json FILE` (repeatable)")
	var logOpts logOptions
	logOpts.register(fs)
	pos, err := fs.parse(args, 1, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("needs the id of the selection to decide: airlock approve SELECTION")
	}
	selID := pos[0]
	logger, closeLog, err := logOpts.open(stderr, nil)
	if err != nil {
		return err
	}
	defer closeLog()
	deps, closeStore, err := operatorDeps(ctx, *storePath, *configPath, *auditLog, *demoMode, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	sel, err := deps.Store.Selection(ctx, selID)
	if err != nil || sel.State != selection.StateReady {
		printProblem(stderr, envelope.NewProblem(envelope.ProblemSelectionNotFound, "No selection "+selID+" is ready in "+storePathOf(deps)+"."))
		return errDecision
	}
	need := selection.Requirement{Mode: "unknown (pass --config to apply the action's policy)"}
	if deps.Runtime != nil {
		if a, ok := deps.Runtime.Actions[sel.Action.Type]; ok {
			need = deps.Engine.ApprovalRequirement(ctx, sel, a)
		}
	}
	acks := selection.Acknowledgements(sel)
	fmt.Fprintln(stdout, tools.ApprovalSummary(sel, need, acks))
	fmt.Fprintf(stdout, "Approval policy: %s\n", need.Mode)
	if err := printManifest(ctx, deps, sel, stdout); err != nil {
		return err
	}
	for _, ex := range exports {
		if err := exportTo(ctx, deps.Store, sel, ex); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Exported %d members as %s to %s\n", sel.Summary.Members, ex.format, ex.file)
	}
	verb, decision := "Approve", selection.DecisionApproved
	if *reject {
		verb, decision = "Reject", selection.DecisionRejected
	}
	digest := *yes
	switch {
	case digest != "":
	case isTerminal(stdin):
		fmt.Fprintf(stdout, "%s %s on %d %s in %s, digest %s? [y/N] ", verb, sel.Action.Type, sel.Summary.Members, sel.Resource, sel.Environment, sel.Digest)
		line, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			fmt.Fprintln(stdout, "Nothing decided.")
			return nil
		}
		digest = sel.Digest
	case len(exports) > 0:
		fmt.Fprintln(stdout, "Nothing decided: run again in a terminal, or with --yes and the digest typed out.")
		return nil
	default:
		fmt.Fprintf(stderr, "airlock: refusing to %s without a terminal to ask on; pass --yes with the selection's digest typed out (%s) to decide non-interactively\n",
			strings.ToLower(verb), sel.Digest)
		return errDecision
	}
	if decision == selection.DecisionRejected {
		acks = nil
	}
	ap, err := deps.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: digest, Decision: decision,
		Who: operatorName(), Channel: selection.ChannelOperator, Acknowledgements: acks, RequestID: "cli-" + time.Now().UTC().Format("20060102T150405.000"),
		Principal: selection.Principal{Subject: selection.SubjectLocal, ClientID: "airlock-approve"}})
	if err != nil {
		printProblem(stderr, tools.ProblemOf(err))
		return errDecision
	}
	if decision == selection.DecisionRejected {
		fmt.Fprintf(stdout, "Rejected %s (record %s): a commit of it is refused.\n", sel.ID, ap.ID)
		return nil
	}
	fmt.Fprintf(stdout, "Approved %s as %s: usable once, until %s. The agent can commit it now.\n", sel.ID, ap.ID, ap.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

func storePathOf(d *tools.Deps) string {
	st := d.Store
	if w, ok := st.(interface{ Unwrap() selection.Store }); ok {
		st = w.Unwrap()
	}
	return storeName(st)
}

// printManifest shows the first members (amounts of money fields also with
// their currency, when the configuration is given); --export writes them
// all.
func printManifest(ctx context.Context, deps *tools.Deps, sel *selection.Selection, w io.Writer) error {
	var money map[string]*config.MoneyConfig
	if deps.Runtime != nil {
		if r := deps.Runtime.Resources[sel.Resource]; r != nil {
			for name, f := range r.Config.Fields {
				if f != nil && f.Money != nil {
					if money == nil {
						money = map[string]*config.MoneyConfig{}
					}
					money[name] = f.Money
				}
			}
		}
	}
	recs, err := deps.Store.Records(ctx, sel.ID, selection.RecordQuery{Disposition: selection.Member, Limit: 10})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Manifest: %d members", sel.Summary.Members)
	if sel.Summary.Members > len(recs) {
		fmt.Fprintf(w, " (the first %d; --export csv FILE writes them all)", len(recs))
	}
	fmt.Fprintln(w)
	for _, r := range recs {
		b, _ := jsonvalue.Canonical(r.Review)
		var amounts []string
		for _, name := range sortedNames(money) {
			m := money[name]
			if v, ok := r.Review[name]; ok {
				if text, ok := review.FormatMoney(m, v, r.Review[m.CurrencyField]); ok {
					amounts = append(amounts, name+" "+text)
				}
			}
		}
		if len(amounts) > 0 {
			fmt.Fprintf(w, "  %s %s (%s)\n", r.ID, b, strings.Join(amounts, ", "))
		} else {
			fmt.Fprintf(w, "  %s %s\n", r.ID, b)
		}
	}
	return nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func exportTo(ctx context.Context, st selection.Store, sel *selection.Selection, ex export) error {
	f, err := os.OpenFile(ex.file, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := review.ExportManifest(ctx, st, sel, ex.format, f); err != nil {
		f.Close()
		return fmt.Errorf("export: %w", err)
	}
	return f.Close()
}

func audit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("audit", "audit OPERATION [--json] [--store STORE]",
		"Print who previewed, approved and committed an operation, and every call it\nmade upstream. Reads the store without changing it (never creates one).")
	storePath := fs.String("store", "", "the `STORE` the server uses: a SQLite file or a postgres:// URL (default $AIRLOCK_STORE, else under the user's state directory)")
	asJSON := fs.Bool("json", false, "print the events as JSON Lines")
	pos, err := fs.parse(args, 1, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("needs an operation id: airlock audit OPERATION")
	}
	opID := pos[0]
	st, err := openOperatorStore(ctx, *storePath, true)
	if err != nil {
		return err
	}
	defer st.Close()
	op, err := st.Operation(ctx, opID)
	if errors.Is(err, selection.ErrNotFound) {
		printProblem(stderr, envelope.NewProblem(envelope.ProblemOperationNotFound, "No operation "+opID+" in "+storeName(st)+"."))
		return errDecision
	}
	if err != nil {
		return err
	}
	events, err := st.AuditTrail(ctx, opID)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range events {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "Operation %s (%s): %s %s, committed by %s\n", op.ID, op.Mode, op.Action.Type, op.Status, op.Principal)
	fmt.Fprintf(stdout, "Selection %s, digest %s\n", op.SelectionID, op.Digest)
	if op.ApprovalID != "" {
		fmt.Fprintf(stdout, "Approval %s\n", op.ApprovalID)
	}
	fmt.Fprintf(stdout, "Counts %s\n\nDecisions\n", jsonText(op.Counts))
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	for _, e := range events {
		if e.Kind == selection.AuditDecision {
			fmt.Fprintf(tw, "  %s\t%s\t%s\tas %s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Event, e.Actor, e.Principal, e.Detail)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nExternal calls")
	tw = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	calls := 0
	for _, e := range events {
		if e.Kind == selection.AuditCall {
			calls++
			fmt.Fprintf(tw, "  %s\t%s %s\t%s\t%d\t%dms\t%s\n", e.At.UTC().Format(time.RFC3339), e.Method, pathTemplate(e.PathTemplate), e.TargetID, e.Status, e.DurationMS, e.RequestID)
		}
	}
	tw.Flush()
	if calls == 0 {
		fmt.Fprintln(stdout, "  none")
	}
	return nil
}

func reviewCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("review", "review [--listen ADDR] [--config FILE | --demo] [flags]",
		"Serve the review page: the selections awaiting a decision, each with what\napproving it acknowledges, its effect, composition and manifest, and a form to\napprove or reject it. A non-loopback --listen address requires\nAIRLOCK_REVIEW_TOKEN; open the page once with ?token=….")
	listen := fs.String("listen", "127.0.0.1:8766", "the `ADDR` (host:port) of the review page")
	storePath := fs.String("store", "", "the `STORE` the server uses: a SQLite file or a postgres:// URL (default $AIRLOCK_STORE, else under the user's state directory); never created")
	configPath := fs.String("config", "", "the server's configuration `FILE`, for the actions' approval policies, the upstreams' names and money fields")
	demoMode := fs.Bool("demo", false, "the built-in demo's configuration")
	auditLog := fs.String("audit-log", "", "also append decisions to `FILE`, the server's JSON Lines audit file")
	var logOpts logOptions
	logOpts.register(fs)
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	token := os.Getenv("AIRLOCK_REVIEW_TOKEN")
	addr, loopback, err := bindAddr(*listen)
	if err != nil {
		return usagef("--listen %q: %v", *listen, err)
	}
	if !loopback && token == "" {
		return errors.New("--listen binds a non-loopback address: set AIRLOCK_REVIEW_TOKEN so that the page asks for it")
	}
	logger, closeLog, err := logOpts.open(stderr, nil)
	if err != nil {
		return err
	}
	defer closeLog()
	deps, closeStore, err := operatorDeps(ctx, *storePath, *configPath, *auditLog, *demoMode, logger)
	if err != nil {
		return err
	}
	defer closeStore()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(review.Prefix, review.NewHandler(reviewDeps(deps), review.Options{Token: token, Principal: reviewPrincipal(token, selection.SubjectReviewToken)}))
	mux.Handle("/{$}", http.RedirectHandler("/review/", http.StatusSeeOther))
	fmt.Fprintf(stdout, "review page: http://%s/review/\n", ln.Addr())
	return serveHTTP(ctx, ln, mux, logger)
}

// reviewPrincipal is who decides through a review page: whoever holds its
// token (subject), or, without one, whoever reaches its loopback listener.
func reviewPrincipal(token, subject string) selection.Principal {
	if token == "" {
		subject = selection.SubjectLocal
	}
	return selection.Principal{Subject: subject, ClientID: "review-page"}
}

// reviewDeps are the review page's view of the server's deps.
func reviewDeps(d *tools.Deps) review.Deps {
	return review.Deps{Store: d.Store, Engine: d.Engine, Runtime: d.Runtime, Clock: d.Clock, Secret: d.Secret, Logger: d.Logger}
}

// templateVar is a {{name}} of a configured path.
var templateVar = regexp.MustCompile(`\{\{\s*([^{}]+?)\s*\}\}`)

// pathTemplate shows a configured path the way API documents write one:
// /v1/projects/{{id}} as /v1/projects/{id}.
func pathTemplate(p string) string { return templateVar.ReplaceAllString(p, "{$1}") }

// jsonText is v as compact JSON, for what a person reads (never a Go map).
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
