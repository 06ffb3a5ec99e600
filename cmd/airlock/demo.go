package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/tools"
)

// tour drives airlock through a real MCP client connection and prints what
// an agent would see.
type tour struct {
	ctx   context.Context
	c     *client.Client
	out   io.Writer
	api   *fixtures.Server
	n     int
	store string
	// amountDue is how the configuration says amount_due is money.
	amountDue *config.MoneyConfig
}

// demoUser plays the user at the client's approval prompt: it prints what
// the client shows and approves.
type demoUser struct{ t *tour }

func (u demoUser) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.t.printf("   ⇢ the client asks the user (the demo plays the user):\n")
	for _, l := range strings.Split(req.Params.Message, "\n") {
		u.t.printf("       | %s\n", l)
	}
	u.t.printf("   ⇢ the user ticks approve and acknowledge\n")
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"approve": true, "acknowledge": true}}}, nil
}

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo", "A guided tour against the built-in demo API, through a real MCP client\nconnection: complete and partial answers, a previewed and approved bulk write\nwhile the upstream misbehaves, an operator's approval, the audit, an undo.")
	if _, err := fs.parse(args, 0, stdout); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	api := &fixtures.Server{}
	apiSrv := httptest.NewServer(api)
	defer apiSrv.Close()

	logger := quietLogger()
	cfg, err := loadConfig("", apiSrv.URL)
	if err != nil {
		return err
	}
	rt, err := initialize(ctx, cfg, demoEnv, logger, nil)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "airlock-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	storePath := filepath.Join(dir, "airlock.db")
	deps, closeStore, err := attachStore(ctx, tools.Config{Runtime: rt, Logger: logger}, storePath, logger)
	if err != nil {
		return err
	}
	defer closeStore(0, nil)
	mcpSrv, err := mcpserver.NewServer(deps, mcpserver.Options{Version: version})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mcpserver.NewHTTPHandler(mcpSrv, mcpserver.HTTPOptions{Options: httpserve.Options{Logger: logger}}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	endpoint := "http://" + ln.Addr().String() + "/mcp"
	tr, err := transport.NewStreamableHTTP(endpoint)
	if err != nil {
		return err
	}
	t := &tour{ctx: ctx, out: stdout, api: api, store: storePath}
	if r := deps.Runtime.Resources["subscriptions"]; r != nil && r.Config.Fields["amount_due"] != nil {
		t.amountDue = r.Config.Fields["amount_due"].Money
	}
	c := client.NewClient(tr, client.WithElicitationHandler(demoUser{t}))
	t.c = c
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("start client: %w", err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "airlock-demo", Version: version}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	defer api.ClearFaults()
	t.printf("airlock demo\n")
	t.printf("  demo API: %s (three data sets, each in another pagination dialect)\n", apiSrv.URL)
	t.printf("  airlock:  %s, %s %s over streamable HTTP (protocol %s)\n", endpoint, res.ServerInfo.Name, res.ServerInfo.Version, res.ProtocolVersion)
	t.printf("  tools:    %s\n", strings.Join(names, ", "))
	if err := t.readTour(); err != nil {
		return err
	}
	if err := t.writeTour(); err != nil {
		return err
	}
	if err := t.operatorTour(); err != nil {
		return err
	}
	t.printf("\nThe tour is over: every answer said whether it covered the whole scope, every write\nnamed the frozen selection it acted on, and a person approved the writes policy put before one.\n")
	return nil
}

func (t *tour) printf(format string, args ...any) { fmt.Fprintf(t.out, format, args...) }

func (t *tour) step(title string) {
	t.n++
	t.printf("\n%d. %s\n", t.n, title)
}

// call invokes a tool and prints the request and the envelope's verdict.
func (t *tour) call(tool string, args map[string]any) (*envelope.Envelope, map[string]any, error) {
	b, _ := json.Marshal(args)
	t.printf("   → %s %s\n", tool, b)
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := t.c.CallTool(t.ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, nil, err
	}
	var env envelope.Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, nil, fmt.Errorf("%s: result is not an envelope: %w", tool, err)
	}
	var data map[string]any
	if d, ok := env.Data.(map[string]any); ok {
		data = d
	}
	t.verdict(&env, data)
	return &env, data, nil
}

func (t *tour) verdict(env *envelope.Envelope, data map[string]any) {
	if env.Problem != nil {
		t.printf("   ← error %s: %s\n", env.Problem.Code, env.Problem.Detail)
		return
	}
	line := fmt.Sprintf("   ← status %s, complete %v", env.Status, env.Complete)
	if data != nil {
		if items, ok := data["items"].([]any); ok {
			line += fmt.Sprintf(", %d item(s) returned", len(items))
		}
		if tm, ok := data["total_matched"]; ok {
			line += fmt.Sprintf(", total_matched %s (%v)", jsonText(tm), data["total_relation"])
		}
	}
	if env.Coverage != nil {
		line += fmt.Sprintf(", %d page(s) read", env.Coverage.Pages)
	}
	t.printf("%s\n", line)
	for _, r := range env.IncompleteReasons {
		extra := ""
		if r.Limit != nil {
			extra += fmt.Sprintf(" limit=%d limit_source=%s", *r.Limit, r.LimitSource)
		}
		if r.Source != "" {
			extra += " source=" + r.Source
		}
		if r.RetryAfterSeconds != nil {
			extra += fmt.Sprintf(" retry_after_seconds=%d", *r.RetryAfterSeconds)
		}
		t.printf("     reason %s%s\n", r.Code, extra)
	}
	if env.Continuation.Kind != envelope.ContinueNone {
		t.printf("     continuation %s\n", env.Continuation.Kind)
	}
	for _, w := range env.Warnings {
		t.printf("     warning %s\n", w.Code)
	}
}

func (t *tour) say(lines ...string) {
	for _, l := range lines {
		t.printf("   %s\n", l)
	}
}

func expect(cond bool, what string) error {
	if !cond {
		return errors.New("demo: unexpected answer: " + what)
	}
	return nil
}

func (t *tour) readTour() error {
	t.step("What can airlock read?")
	_, data, err := t.call(tools.DescribeResourcesName, map[string]any{})
	if err != nil {
		return err
	}
	if rs, ok := data["resources"].([]any); ok {
		for _, r := range rs {
			m := r.(map[string]any)
			p := m["pagination"].(map[string]any)
			t.printf("     %-17s %-7s dialect, consistency %s\n", m["name"], p["dialect"], p["consistency"])
		}
	}

	t.step(`"How many projects are inactive?" with a budget of 2 pages`)
	env, _, err := t.call(tools.SearchAllName, map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0, "max_pages": 2})
	if err != nil {
		return err
	}
	if err := expect(!env.Complete && env.HasReason(envelope.ResultLimitReached), "a capped scan must be partial"); err != nil {
		return err
	}
	t.say("The scan stopped at the caller's page limit: the count is a lower bound (gte), and",
		"complete is false. A plain wrapper would have answered with a number that looks final.")

	t.step("The same question with the default budget")
	env, _, err = t.call(tools.SearchAllName, map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0, "group_by": []any{"owner"}})
	if err != nil {
		return err
	}
	if err := expect(env.Complete, "the full scan must be complete"); err != nil {
		return err
	}
	t.say("Every page was read: complete is true and the total is exact (eq). Only now may an",
		"agent make a claim about all inactive projects.")

	t.step(`"Which projects does team-legacy own?"`)
	env, _, err = t.call(tools.SearchAllName, map[string]any{"resource": "projects", "filter": map[string]any{"owner": "team-legacy"}})
	if err != nil {
		return err
	}
	if err := expect(env.Complete, "an empty complete answer"); err != nil {
		return err
	}
	t.say("Empty and complete: the whole scope was read, so this is proof of absence.")

	t.step(`"Which service accounts does team-legacy own?"`)
	env, _, err = t.call(tools.SearchAllName, map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": "team-legacy"}})
	if err != nil {
		return err
	}
	if err := expect(!env.Complete && env.HasReason(envelope.VisibilityRestricted), "an empty partial answer"); err != nil {
		return err
	}
	t.say("Also empty, but partial: the demo credential cannot see every service account, so",
		"this empty list proves nothing. The two empty answers look alike only without the envelope.")

	t.step(`"Which service accounts have no owner?"`)
	env, data, err = t.call(tools.SearchAllName, map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil}, "max_items": 5})
	if err != nil {
		return err
	}
	if err := expect(!env.Complete, "restricted view"); err != nil {
		return err
	}
	if items, ok := data["items"].([]any); ok && len(items) > 0 {
		b, _ := json.Marshal(items[0])
		t.printf("     first item: %s\n", b)
	}
	t.say("Found accounts are positive evidence about themselves; the list as a whole is not the",
		"set of all ownerless accounts. continuation.cursor pages through the rest of this frozen scan.")

	t.step(`"Which subscriptions are past due?" while the apac partition is down`)
	t.api.SetFaults(fixtures.DatasetSubscriptions, fixtures.Faults{DownPartitions: map[string]bool{"apac": true}, RetryAfter: "30"})
	env, _, err = t.call(tools.SearchAllName, map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due"}, "max_items": 3, "group_by": []any{"region"}})
	if err != nil {
		return err
	}
	t.api.ClearFaults()
	if err := expect(!env.Complete && env.HasReason(envelope.SourceUnavailable), "a partition down"); err != nil {
		return err
	}
	if env.Coverage != nil {
		for _, s := range env.Coverage.Sources {
			t.printf("     source %-5s %-11s %d page(s)\n", s.Name, s.Status, s.Pages)
		}
	}
	t.say("eu and us answered and their matches are here; apac did not, and the envelope names it",
		"and says when to retry instead of letting an empty region look like a clean one.")
	return nil
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// writeTour previews a bulk action, shows refusals and a dry run, then
// executes it while the upstream misbehaves.
func (t *tour) writeTour() error {
	action := map[string]any{"type": "pause_collection", "params": map[string]any{"reason": "approved credit hold review"}}
	t.step(`"Pause collection on past-due subscriptions in eu, except disputed and legal_hold"`)
	env, p, err := t.call(tools.PreviewSelectionName, map[string]any{
		"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"},
		"exclude": []any{
			map[string]any{"field": "tags", "op": "contains", "value": "disputed", "reason": "disputed invoices stay"},
			map[string]any{"field": "tags", "op": "contains", "value": "legal_hold", "reason": "under legal hold"},
		},
		"action": action, "page_size": 3})
	if err != nil {
		return err
	}
	if err := expect(env.Complete && p["committable"] == true, "a committable selection"); err != nil {
		return err
	}
	counts := p["counts"].(map[string]any)
	t.printf("     selection %s (%s), expires %s\n", p["selection_id"], p["kind"], p["expires_at"])
	t.printf("     digest %s\n", p["digest"])
	t.printf("     %s on %s: %d members, %d excluded, %d ambiguous\n", p["environment"], p["upstream"], num(counts["members"]), num(counts["excluded"]), num(counts["ambiguous"]))
	for _, e := range p["exclusions"].([]any) {
		m := e.(map[string]any)
		if num(m["rule"]) >= 0 {
			t.printf("     excluded %3d: %s %s %s (%s)\n", num(m["count"]), m["field"], m["op"], jsonText(m["value"]), m["reason"])
		} else {
			t.printf("     excluded %3d: %s\n", num(m["count"]), m["reason"])
		}
	}
	for _, e := range p["effect"].([]any) {
		m := e.(map[string]any)
		var before []string
		for _, b := range m["before"].([]any) {
			g := b.(map[string]any)
			before = append(before, fmt.Sprintf("%s (%d)", jsonText(g["value"]), num(g["count"])))
		}
		t.printf("     effect: %s %s -> %s\n", m["field"], strings.Join(before, ", "), jsonText(m["after"]))
	}
	items := p["manifest"].(map[string]any)["items"].([]any)
	for _, it := range items {
		f := it.(map[string]any)["fields"].(map[string]any)
		amount := jsonText(f["amount_due"]) + " " + jsonText(f["currency"])
		if t.amountDue != nil {
			if s, ok := review.FormatMoney(t.amountDue, f["amount_due"], f["currency"]); ok {
				amount = s
			}
		}
		t.printf("     member %s  %-32v %12s\n", f["id"], f["customer_name"], amount)
	}
	t.say("The manifest is frozen: get_selection pages through all of it, and the commit must name",
		"this selection_id, this digest and this exact action.")

	t.step("A commit that names the wrong digest")
	env, _, err = t.call(tools.CommitBulkActionName, map[string]any{"selection_id": p["selection_id"], "action": action, "mode": "execute",
		"expected_digest": "sha256:" + strings.Repeat("0", 64)})
	if err != nil {
		return err
	}
	if err := expect(env.Problem != nil && env.Problem.Code == envelope.ProblemDigestMismatch, "a refused commit"); err != nil {
		return err
	}
	t.printf("     state_changed %s; next_action: %s\n", env.Problem.StateChanged, env.Problem.NextAction)

	commit := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": action}
	t.step("A dry run")
	commit["mode"] = "dry_run"
	_, op, err := t.call(tools.CommitBulkActionName, commit)
	if err != nil {
		return err
	}
	t.printf("     %s: %s\n", op["status"], jsonText(op["counts"]))

	// Between the preview and the commit, one member changes upstream and
	// one write will be applied without its answer arriving.
	ids := []string{}
	for _, it := range items {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	moved, hung := ids[0], ids[1]
	t.api.Collection(fixtures.DatasetSubscriptions).Update(moved, func(r fixtures.Record) { r["status"] = "active"; r["version"] = 2 })
	t.api.SetWriteFaults(fixtures.DatasetSubscriptions, fixtures.WriteFaults{ApplyThenHang: map[string]bool{hung: true}, Hang: 3 * time.Second})

	t.step("Execute, while " + moved + " was paid meanwhile and the answer for " + hung + " never arrives")
	t.say("The policy of pause_collection asks the user through the client above 100 targets (and",
		"for a region never approved before). The client shows the request; the agent cannot answer it.")
	commit["mode"] = "execute"
	_, op, err = t.call(tools.CommitBulkActionName, commit)
	if err != nil {
		return err
	}
	t.printf("     operation %s: %s %s\n", op["operation_id"], op["status"], jsonText(op["counts"]))

	t.step("get_operation: what happened to each target")
	_, op, err = t.call(tools.GetOperationName, map[string]any{"operation_id": op["operation_id"], "page_size": 500})
	if err != nil {
		return err
	}
	for _, r := range op["results"].([]any) {
		m := r.(map[string]any)
		if m["id"] == moved || m["id"] == hung {
			t.printf("     %s %-9s %s\n", m["id"], m["outcome"], m["note"])
		}
	}
	oc := map[string]string{}
	for _, r := range op["results"].([]any) {
		m := r.(map[string]any)
		oc[m["id"].(string)] = m["outcome"].(string)
	}
	if err := expect(oc[moved] == "skipped" && oc[hung] == "succeeded" && t.api.Applied(fixtures.DatasetSubscriptions, moved) == 0, "skipped and reconciled targets"); err != nil {
		return err
	}
	t.say("The changed subscription was skipped, never written. The write whose answer was lost was",
		"journaled as in flight, found applied when re-read, and recorded as succeeded: it was not",
		"sent twice. Every target has exactly one outcome in the journal.")
	return nil
}

// cli runs an airlock command in this process, as an operator would in a
// terminal, and prints its output indented.
func (t *tour) cli(args ...string) error {
	t.printf("   $ airlock %s\n", strings.Join(args, " "))
	var out, errOut strings.Builder
	code := run(args, strings.NewReader(""), &out, &errOut)
	for _, l := range strings.Split(strings.TrimRight(out.String()+errOut.String(), "\n"), "\n") {
		t.printf("     %s\n", l)
	}
	if code != 0 {
		return fmt.Errorf("demo: airlock %s exited %d", args[0], code)
	}
	return nil
}

// operatorTour shows an operator's approval outside the agent's channel,
// the audit trail, and a compensation that undoes the write.
func (t *tour) operatorTour() error {
	archive := map[string]any{"type": "archive"}
	t.step(`"Archive team-growth's inactive projects": destructive, so an operator approves it`)
	env, p, err := t.call(tools.PreviewSelectionName, map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive", "owner": "team-growth"},
		"action": archive, "page_size": 0})
	if err != nil {
		return err
	}
	if err := expect(env.Complete && p["committable"] == true, "a committable selection"); err != nil {
		return err
	}
	t.printf("     %d members; approval %s\n", num(p["counts"].(map[string]any)["members"]), jsonText(p["approval"]))
	commit := map[string]any{"selection_id": p["selection_id"], "expected_digest": p["digest"], "action": archive, "mode": "execute"}
	env, _, err = t.call(tools.CommitBulkActionName, commit)
	if err != nil {
		return err
	}
	if err := expect(env.Problem != nil && env.Problem.Code == envelope.ProblemApprovalRequired, "approval required"); err != nil {
		return err
	}
	t.say("Nothing was written. The operator reviews it outside the conversation, in a terminal (or on",
		"the review page, airlock review), and approves this digest:")
	if err := t.cli("approve", p["selection_id"].(string), "--yes", p["digest"].(string), "--store", t.store, "--demo"); err != nil {
		return err
	}
	env, op, err := t.call(tools.CommitBulkActionName, commit)
	if err != nil {
		return err
	}
	if err := expect(env.Problem == nil && op["status"] == "completed", "the approved archive"); err != nil {
		return err
	}
	t.printf("     %s: %s\n", op["status"], jsonText(op["counts"]))

	t.step("Who decided, and what was called: the audit trail of that operation")
	if err := t.cli("audit", op["operation_id"].(string), "--store", t.store); err != nil {
		return err
	}

	t.step("Undo it: a compensation restores the journaled before-values, through the same path")
	env, c, err := t.call(tools.PreviewSelectionName, map[string]any{"compensate": op["operation_id"], "page_size": 2})
	if err != nil {
		return err
	}
	if err := expect(env.Problem == nil && c["committable"] == true, "a compensation selection"); err != nil {
		return err
	}
	for _, e := range c["effect"].([]any) {
		m := e.(map[string]any)
		after, _ := m["after"].(map[string]any)
		var back []string
		for _, g := range asSlice(after["restored_per_target"]) {
			gm := g.(map[string]any)
			back = append(back, fmt.Sprintf("%s (%d)", jsonText(gm["value"]), num(gm["count"])))
		}
		t.printf("     effect: %s back to %s, each target to its own journaled value\n", m["field"], strings.Join(back, ", "))
	}
	env, undo, err := t.call(tools.CommitBulkActionName, map[string]any{"selection_id": c["selection_id"], "expected_digest": c["digest"], "action": c["action"], "mode": "execute"})
	if err != nil {
		return err
	}
	if err := expect(env.Problem == nil && undo["status"] == "completed", "the compensation"); err != nil {
		return err
	}
	t.printf("     %s: %s\n", undo["status"], jsonText(undo["counts"]))
	t.say("Each restore was a conditional write: a project changed since the archive would have been",
		"left alone and listed. What an action did outside the data (an e-mail) is said, not undone.")
	return nil
}
