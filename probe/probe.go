// Package probe checks, read-only and within a request budget, each
// assumption a resource's configuration makes about the live API (airlock
// probe): the items path, field types and layouts, the end signal and the
// total, what each upstream filter selects, versions for conditional
// writes, the credential. Each check is ok, wrong (with a hint) or
// unverifiable.
//
// It must never write to the API: it reads lists and items (and obtains
// the token an OAuth credential needs). Only Fix (airlock probe --fix)
// proposes a changed configuration, and only from what the API proved.
package probe

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Verdicts of one probe check.
const (
	OK           = "ok"
	Wrong        = "wrong"
	Unverifiable = "unverifiable"
)

// Check is one assumption of the configuration, checked against the
// live API: ok, wrong (the API contradicts it) or unverifiable (the probe
// saw nothing that could settle it), with the evidence.
type Check struct {
	Resource string `json:"resource"`
	// Check names the assumption by where it lives in the configuration:
	// list.items, pagination.end, pagination.total, fields.owner.null_values,
	// filters.status.multi, actions.archive.conditional, ...
	Check    string `json:"check"`
	Status   string `json:"status"`
	Evidence string `json:"evidence"`
	// Hint says what to change when the check is wrong.
	Hint string `json:"hint,omitempty"`
}

// Report is what a probe found for one resource.
type Report struct {
	Resource string        `json:"resource"`
	Requests int           `json:"requests"`
	Elapsed  time.Duration `json:"-"`
	Checks   []Check       `json:"checks"`
}

// Wrong counts the checks the API contradicted.
func (pr *Report) Wrong() int {
	n := 0
	for _, c := range pr.Checks {
		if c.Status == Wrong {
			n++
		}
	}
	return n
}

// Options bound a probe.
type Options struct {
	RequestID string
	// MaxRequests is the request budget for the resource (default 100).
	MaxRequests int
	// PageSize is the page size of the walk to the end; 0 chooses one
	// small enough to need several pages and to fit the budget.
	PageSize int
	// Actions are the configured actions on this resource, whose
	// conditional writes need a version on items.
	Actions []*upstream.Action
	// Deadline bounds the whole probe of the resource (default 2m).
	Deadline time.Duration
}

// DefaultRequests is the default request budget of one resource's
// probe.
const DefaultRequests = 100

// maxProbeSamples bounds the raw items a probe keeps for value checks.
const maxProbeSamples = 2000

type prober struct {
	r        *upstream.Resource
	opts     Options
	report   *Report
	samples  []map[string]any // raw items, as the upstream sent them
	first    *transport.Response
	firstErr error
	firstDoc any
	// truth is the walk's items (normalized, by id) when the walk covered
	// the whole list; nil otherwise.
	truth    map[string]map[string]any
	walkSize int
	walkEnd  bool // the walk proved the end
}

// CheckAssumptions checks, read-only and within a request budget, every
// assumption the resource's configuration makes about the live API: the
// items path, field types, timestamp layouts and null stand-ins on real
// items; that the dialect's end signal appears on a walk at a small page
// size and that the items counted match the upstream's total; that each
// upstream filter parameter (and its declared multi-value and null forms)
// selects what airlock's own check selects; that conditional writes find a
// version on items and on GET by id; rate-limit headers; and that a
// declared snapshot is backed by a resource version. It only sends GET
// requests.
func CheckAssumptions(ctx context.Context, r *upstream.Resource, opts Options) *Report {
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = DefaultRequests
	}
	if opts.Deadline <= 0 {
		opts.Deadline = 2 * time.Minute
	}
	if opts.RequestID == "" {
		opts.RequestID = "airlock-probe"
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.Deadline)
	defer cancel()
	p := &prober{r: r, opts: opts, report: &Report{Resource: r.Name}}
	p.tokenChecks(ctx)
	ok := p.firstPage(ctx)
	p.acceptedCheck()
	if ok {
		p.walk(ctx)
		p.fieldChecks()
		p.filterChecks(ctx)
		p.visibilityCheck(ctx)
		p.writeChecks(ctx)
	}
	p.report.Elapsed = time.Since(start)
	return p.report
}

func (p *prober) add(check, status, evidence, hint string) {
	p.report.Checks = append(p.report.Checks, Check{Resource: p.r.Name, Check: check, Status: status, Evidence: evidence, Hint: hint})
}

func (p *prober) left() int { return p.opts.MaxRequests - p.report.Requests }

// do sends one read request, counted against the budget.
func (p *prober) do(ctx context.Context, req transport.Request) (*transport.Response, error) {
	if p.left() <= 0 {
		return nil, errBudget
	}
	p.report.Requests++
	return p.r.Upstream.Do(ctx, req)
}

var errBudget = errors.New("the probe's request budget is spent")

func (p *prober) keep(items []any) {
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && len(p.samples) < maxProbeSamples {
			if d, err := p.r.DecodeItem(m); err == nil {
				p.samples = append(p.samples, d)
			}
		}
	}
}

// firstPage reads the first page as configured: the items path, the
// contract (what `airlock contract --live` judges), the total, rate-limit
// headers and the snapshot claim. It reports whether the probe can go on.
func (p *prober) firstPage(ctx context.Context) bool {
	r := p.r
	req, err := r.FirstPageRequest(p.opts.RequestID)
	if err == nil {
		req, err = r.OpenFirstPage(ctx, p.opts.RequestID)
	}
	if errors.Is(err, upstream.ErrPartitionNeeded) {
		// Nothing is sent: the checks that read the list are not run.
		p.add("list.path", Unverifiable, err.Error()+": the list is not read, so no check that needs it is run", "set default_filter to one value of the partition filter")
		return false
	}
	if err != nil {
		p.add("list.path", Wrong, err.Error(), "")
		return false
	}
	resp, err := p.do(ctx, req)
	p.firstErr = err
	if errors.Is(err, errBudget) {
		p.add("list.path", Unverifiable, "the first page was not asked for: the request budget is spent", "raise --max-requests")
		return false
	}
	if err != nil {
		var ok bool
		if resp, ok = p.smallerPage(ctx, err); !ok {
			p.add("list.path", Wrong, req.Method+" "+r.Config.List.Path+": "+describeErr(err), "check base_url, list.path, list.params and the credential")
			return false
		}
		r = p.r // the probe goes on at the page size the API accepts
	}
	p.first = resp
	doc, err := r.DecodePage(resp)
	if err != nil {
		p.add("list.path", Wrong, req.Method+" "+r.Config.List.Path+": "+describeErr(err), "")
		return false
	}
	p.firstDoc = doc
	items, err := r.PageItems(doc)
	if err != nil {
		p.add("list.items", Wrong, err.Error()+"; the body's top level holds "+topKeys(doc), "set list.items to the path of the items array (\".\" when the body is the array)")
		return false
	}
	p.add("list.items", OK, fmt.Sprintf("%s %s: %d items at %q on the first page", listMethod(r), r.Config.List.Path, len(items), config.DisplayPath(r.Config.List.Items)), "")
	p.keep(items)
	dec := read.DecideList(r, resp)
	switch dec.Decision {
	case read.DecideRefuse, read.DecideStop:
		p.add("contract", Wrong, dec.Decision+": "+strings.Join(dec.Details, "; "), "decision fields drifted: records resting on them are withheld")
	default:
		p.add("contract", OK, dec.Decision+because(dec.Details), "")
	}
	p.totalCheck(resp, doc)
	p.rateLimitCheck(resp)
	p.snapshotCheck(doc)
	if k, _ := config.DialectKindOf(r.Pagination.Dialect); k.GraphQL {
		if msgs := dialect.GraphQLMessages(doc); msgs != "" {
			p.add("list.graphql", Wrong, "the first page carries GraphQL errors beside its data; the API said: "+msgs,
				"an answer with errors is never complete: fix the query, or the fields it selects")
		}
	}
	if e := r.Pagination.Expiry; e != nil {
		p.add("pagination.expiry", Unverifiable, "an expired continuation cannot be produced on demand: the declared expiry answer is taken as written", "")
	}
	return true
}

func because(details []string) string {
	if len(details) == 0 {
		return ""
	}
	return ": " + strings.Join(details, "; ")
}

func topKeys(doc any) string {
	switch x := doc.(type) {
	case map[string]any:
		return "an object with " + strings.Join(slices.Sorted(maps.Keys(x)), ", ")
	case []any:
		return "an array"
	}
	return "a scalar"
}

func describeErr(err error) string {
	var he *transport.HTTPError
	if errors.As(err, &he) && he.Kind == transport.FailStatus {
		return fmt.Sprintf("the upstream answered %d", he.Status) + apiSaid(err)
	}
	return err.Error()
}

// undeclaredTotal looks for a total the configuration does not read, for
// evidence: X-Total-Count, or a conventional body field.
func undeclaredTotal(resp *transport.Response, doc any) string {
	if resp != nil {
		if h := resp.Header.Get("X-Total-Count"); h != "" {
			return "X-Total-Count: " + h
		}
	}
	for _, path := range []string{"total", "totalItems", "total_count", "count"} {
		if v, ok := jsonvalue.Get(doc, path); ok {
			if n, ok := jsonvalue.Int(v); ok {
				return fmt.Sprintf("%s: %d", path, n)
			}
		}
	}
	return ""
}

func (p *prober) totalCheck(resp *transport.Response, doc any) {
	pg := p.r.Pagination
	var where, raw string
	switch {
	case pg.TotalHeader != "":
		where, raw = "header "+pg.TotalHeader, resp.Header.Get(pg.TotalHeader)
		if raw == "" {
			p.add("pagination.total_header", Wrong, "the first page has no "+pg.TotalHeader+" header", "remove total_header, or ask for the page in a way that makes the upstream count")
			return
		}
	case pg.Total != "" && pg.Dialect != config.DialectCursor && pg.Dialect != config.DialectContinue:
		at := doc
		where = "body path " + pg.Total
		if k, _ := config.DialectKindOf(pg.Dialect); k.GraphQL {
			at, _ = jsonvalue.Get(doc, "data."+pg.Connection)
			where = "the connection's " + pg.Total
		}
		v, ok := jsonvalue.Get(at, pg.Total)
		if !ok {
			p.add("pagination.total", Wrong, "the first page has no "+where, "point total at the body's count, or set total: none: then only the dialect's end signal or an empty page ends the list")
			return
		}
		if pg.TotalRelation != "" {
			if rel, _ := jsonvalue.Get(doc, pg.TotalRelation); rel != "eq" {
				p.add("pagination.total", Unverifiable, fmt.Sprintf("%s is a bound (%s is %q), not a count: the end is proven by an empty page", where, pg.TotalRelation, jsonvalue.String(rel)), "")
				return
			}
		}
		raw = jsonvalue.String(v)
	default:
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	switch {
	case err != nil:
		p.add("pagination.total", Wrong, fmt.Sprintf("%s reads %q, not a count", where, raw), "")
	case n < 0:
		hint := "the upstream does not count: remove the parameter that turns counting off"
		if _, skip := p.r.Config.List.Params["skipTotal"]; skip {
			hint = "list.params sets skipTotal: PocketBase then answers -1; remove skipTotal"
		}
		p.add("pagination.total", Wrong, fmt.Sprintf("%s reads %d: a negative total is no count, and proves no end", where, n), hint)
	default:
		p.add("pagination.total", OK, fmt.Sprintf("%s reads %d on the first page", where, n), "")
	}
}

var rateLimitHeader = regexp.MustCompile(`(?i)^(x-)?rate-?limit`)

func (p *prober) rateLimitCheck(resp *transport.Response) {
	var seen []string
	for k := range resp.Header {
		if rateLimitHeader.MatchString(k) {
			seen = append(seen, k+": "+resp.Header.Get(k))
		}
	}
	sort.Strings(seen)
	configured := "no client-side rate_limit is configured"
	if p.r.Upstream.RateLimited() {
		configured = "a client-side rate_limit is configured"
	}
	if len(seen) == 0 {
		p.add("rate_limit", Unverifiable, "the upstream sends no rate-limit headers; "+configured, "")
		return
	}
	p.add("rate_limit", OK, "the upstream advertises "+strings.Join(seen, ", ")+"; "+configured, "")
}

// walkPageSize is a page size small enough that the walk spans several
// pages (so the end signal must appear between them) and large enough to
// reach the end within half the budget.
func (p *prober) walkPageSize(firstItems int) int {
	if p.opts.PageSize > 0 {
		return p.opts.PageSize
	}
	pg := p.r.Pagination
	if pg.PageSizeParam == "" {
		// page_size_param: none. The server alone sizes the pages: a smaller size asked of the
		// walk is never sent, and would make the server's whole pages
		// look larger than asked for.
		return pg.PageSize
	}
	// At least two: a walk at page size 1 has no short page, and a list
	// that ends on a whole page without saying so must be asked for again.
	minSize := 2
	budget := max(p.left()/2, 3)
	total := -1
	if p.first != nil {
		if n, ok := p.r.PageTotal(p.first, p.firstDoc); ok {
			total = n
		}
	}
	switch {
	case total >= 0:
		size := min(pg.PageSize, max((total+budget-3)/max(budget-2, 1), minSize))
		// A size the total is no multiple of ends the walk on a short
		// page, which proves its end by itself.
		for s := size; s <= min(pg.PageSize, size+8); s++ {
			if total%s != 0 {
				return s
			}
		}
		return size
	case firstItems < pg.PageSize:
		return min(pg.PageSize, max(minSize, (firstItems+2)/3))
	}
	return min(pg.PageSize, max(minSize, pg.PageSize/2))
}

// collector keeps the walk's items by id.
type collector struct{ items map[string]map[string]any }

func (c *collector) Add(it *upstream.Item) error {
	c.items[it.ID] = it.Doc
	return nil
}

// walk reads the whole list through the scan engine, as search_all would,
// at a small page size: the end must be proven by the dialect, and the
// items counted must match the upstream's total.
func (p *prober) walk(ctx context.Context) {
	r := p.r
	size := p.walkSize
	if size == 0 {
		size = p.walkPageSize(len(p.samples))
	}
	p.walkSize = size
	pr := r.WithPageSize(size)
	col := &collector{items: map[string]map[string]any{}}
	// A Query walks the partition the first page read (firstPage has
	// refused a resource without one).
	scope, _ := r.ListScope(nil)
	scan := pr.NewScan(upstream.ScanSpec{Filter: scope, RequestID: p.opts.RequestID, Sink: col})
	budget := max(p.left()-p.reserve(), 2)
	err := scan.Run(ctx, upstream.Budget{MaxPages: budget, PagesLimitSource: envelope.LimitAirlock, Deadline: timeLeft(ctx)})
	o := scan.Outcome()
	p.report.Requests += o.Pages
	defer p.lastKeyCheck(o)
	what := fmt.Sprintf("a walk at page size %d read %d pages and %d items", size, o.Pages, o.ItemsScanned)
	if err != nil {
		p.add("pagination.end", Wrong, what+", then failed: "+describeScanErr(err), "")
		return
	}
	var unproven, cut, short, changed, violated, conflict bool
	var signal, unreadable string
	var limit int
	for _, rs := range o.Reasons {
		switch rs.Code {
		case envelope.SignalUnreadable:
			if unreadable == "" {
				unreadable = fmt.Sprintf("%s on page %d", rs.Member, derefInt(rs.Page))
			}
		case envelope.EndNotProven:
			unproven, signal = true, rs.Signal
		case envelope.ResultLimitReached:
			if rs.LimitSource == envelope.LimitUpstream {
				short = true
				if rs.Limit != nil {
					limit = *rs.Limit
				}
			} else {
				cut = true
			}
		case envelope.TimeBudgetExceeded:
			cut = true
		case envelope.InconsistentSnapshot:
			changed, signal = true, rs.Signal
		case envelope.ContractViolation:
			violated = true
		case envelope.ConflictingEvidence:
			conflict, signal = true, rs.Signal
		}
	}
	endSignal := ""
	for _, src := range o.Sources {
		if src.End == envelope.EndProven {
			endSignal = src.EndSignal
		}
	}
	total, totalKnown := 0, false
	if p.first != nil {
		total, totalKnown = r.PageTotal(p.first, p.firstDoc)
	}
	switch {
	case unreadable != "":
		// Judged by the scan's own reader: a signal it cannot read is
		// never taken for an absent one.
		p.add("pagination.end", Wrong, what+", and the upstream's answer held a declared signal in a form that cannot be read ("+unreadable+")",
			"point the declaration at a member of the form it takes (a cursor or a next URL is a string, a flag a boolean, a total an integer); a continuation that is an object is sent back whole only by the continue_object dialect")
	case conflict:
		p.add("pagination.end", Wrong, what+", and two of the upstream's signals contradict each other ("+signal+")", conflictHint(r, signal))
	case unproven && o.Pages >= budget:
		// The walk used every page it was allowed: the end it did not see
		// may lie past the budget.
		p.add("pagination.end", Unverifiable, what+" and spent the probe's budget before the end ("+signal+")", "raise --max-requests or --page-size")
	case unproven && signal == dialect.SignalPageRefused:
		p.add("pagination.end", Wrong, what+", then the upstream refused a later page ("+signal+")", "declare the upstream's page count (total_pages or total_pages_header) so that no page past it is asked for, or result_cap if it caps how deep one may page")
	case unproven:
		hint := "the dialect's end signal never appeared: the configuration cannot prove a list complete"
		switch r.Pagination.Dialect {
		case config.DialectLink:
			hint = "no Link: rel=\"next\" header came back: name the page in list.params if the API pages only when asked (json-server needs _page), or use the dialect its answers follow"
		case config.DialectNextURL:
			hint = "no next URL came back at " + r.Pagination.Next + ": point pagination.next at the key that holds the next page's URL (next, @odata.nextLink, nextRecordsUrl, next_page_uri)"
		case config.DialectGraphQL:
			hint = "the query must select the connection's pageInfo { hasNextPage endCursor }"
		}
		ev := what + ", and the end was not proven (" + signal + ")"
		if t := undeclaredTotal(p.first, p.firstDoc); t != "" {
			ev += "; the upstream says " + t
		}
		p.add("pagination.end", Wrong, ev, hint)
	case short:
		hint := "the upstream caps the list: declare result_cap, or narrow with sources"
		if r.Pagination.Dialect == config.DialectLink {
			hint = "no Link: rel=\"next\" header led on: name the page in list.params if the API pages only when asked (json-server needs _page); else the upstream caps the list (result_cap)"
		}
		p.add("pagination.end", Wrong, fmt.Sprintf("%s: the upstream stopped at %d items, short of its own total", what, limit), hint)
	case cut:
		p.add("pagination.end", Unverifiable, what+" and did not reach the end within the probe's budget", "raise --max-requests or --page-size")
	case changed:
		p.add("pagination.end", Unverifiable, what+", and the list changed during the walk ("+signal+")", "probe again when the list is quiet")
	case endSignal == "":
		// No source reached an end the scan proved: nothing to call ok.
		p.add("pagination.end", Unverifiable, what+", and no source's end was proven", "")
	default:
		p.walkEnd = true
		p.add("pagination.end", OK, what+": the end was proven by "+endSignal, "")
		if !violated {
			p.truth = col.items
		}
	}
	for _, w := range o.Warnings {
		if w.Code == envelope.WarnDeclarationContradicted {
			p.add("pagination."+strings.Join(w.Fields, ","), Wrong, "the upstream returned more items than it declares", "")
		}
	}
	if p.walkEnd && totalKnown {
		if o.ItemsScanned == total {
			p.add("pagination.count", OK, fmt.Sprintf("the walk counted %d items, the upstream's total is %d", o.ItemsScanned, total), "")
		} else {
			p.add("pagination.count", Wrong, fmt.Sprintf("the walk counted %d items, the upstream's total is %d", o.ItemsScanned, total), "the total does not count what the list returns: check total / total_header")
		}
	}
}

// conflictHint says which declaration the contradiction points at.
func conflictHint(r *upstream.Resource, signal string) string {
	switch signal {
	case dialect.SignalFlagVsContinuation:
		flag := r.Pagination.IsLast
		if flag == "" {
			flag = r.Pagination.HasMore
		}
		return "the end flag at " + flag + " says last on a page that also carries a continuation: point it at the flag that says so on the last page only, or remove it"
	case dialect.SignalTotalVsItems:
		return "the upstream returned more items than its total: the total does not count what the list returns (check total / total_header), or it lags"
	case dialect.SignalTotalVsPages, dialect.SignalPagesVsPage:
		return "the upstream's page count disagrees with its total or its pages: check total_pages / total_pages_header, and page_size against the upstream's own cap"
	}
	return "check the pagination declarations against the upstream's answers"
}

// reserve is the part of the budget kept for the checks after the walk.
func (p *prober) reserve() int {
	n := 0
	for name, fc := range p.r.Config.Filters {
		if fc != nil && fc.Param != "" {
			n += 3
		}
		if fc != nil && p.literalCheckable(fc, fc.FieldOf(name)) {
			n += 2 * len(literalProbes(fc))
		}
	}
	return min(n+len(p.opts.Actions)+1, p.left()/2)
}

// timeLeft is what is left of the probe's deadline (a minute when ctx has
// none).
func timeLeft(ctx context.Context) time.Duration {
	if d, ok := clock.UntilDeadline(ctx); ok {
		return d
	}
	return time.Minute
}

func describeScanErr(err error) string {
	var se *upstream.ScanError
	if errors.As(err, &se) && se.Problem != nil {
		if se.Err != nil {
			return string(se.Problem.Code) + ": " + se.Err.Error()
		}
		return string(se.Problem.Code)
	}
	return err.Error()
}

func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
