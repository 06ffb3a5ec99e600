package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/scancache"
	"github.com/airlock-mcp/airlock/upstream"
)

type searchArgs struct {
	Resource   string         `json:"resource" jsonschema:"Resource name."`
	Filter     map[string]any `json:"filter,omitempty" jsonschema:"Filter -> value, list (any of), or null."`
	Fields     []string       `json:"fields,omitempty" jsonschema:"Fields per item; [\"id\"] lists ids densely."`
	GroupBy    []string       `json:"group_by,omitempty" jsonschema:"Fields to count matches by."`
	MaxItems   *int           `json:"max_items,omitempty" jsonschema:"Most items (0: counts only; default: what fits)."`
	MaxPages   *int           `json:"max_pages,omitempty" jsonschema:"Most upstream pages read."`
	DeadlineMS *int           `json:"deadline_ms,omitempty" jsonschema:"Time budget (at most 120000)."`
	Cursor     string         `json:"cursor,omitempty" jsonschema:"continuation.cursor of the same query."`
	Count      string         `json:"count,omitempty" jsonschema:"verified (default): count every match; claimed: the upstream's own total from one page, labeled, its cursor verifies."`
}

func (searchArgs) schema(s *jsonschema.Schema) {
	p := s.Properties
	p["resource"].MinLength, p["resource"].Examples = jsonschema.Ptr(1), []any{"service_accounts"}
	p["filter"].AdditionalProperties, p["filter"].Examples = filterValue(), []any{map[string]any{"owner": nil}}
	p["fields"].Examples = []any{[]any{"id", "name"}}
	p["group_by"].MaxItems, p["group_by"].Examples = jsonschema.Ptr(5), []any{[]any{"status"}}
	p["cursor"].MinLength, p["cursor"].Examples = jsonschema.Ptr(1), []any{"<continuation.cursor>"}
	enum(p["count"], countVerified, countClaimed)
	setBudget(s)
}

// searchInput is search_all's validation schema, built once.
var searchInput = generate[searchArgs]()

// searchData is search_all's data: the page of matching items and the
// counts of the whole scope.
type searchData struct {
	Resource string `json:"resource"`
	// Items are the upstream's records, projected to the fields asked for.
	Items         []json.RawMessage           `json:"items"`
	TotalMatched  int                         `json:"total_matched"`
	TotalRelation string                      `json:"total_relation"`
	Groups        map[string][]upstream.Group `json:"groups"`
	Delivered     delivered                   `json:"delivered"`
	// UpstreamTotalEstimate is the total the upstream claims, unproven.
	UpstreamTotalEstimate *int `json:"upstream_total_estimate,omitempty"`
	// UpstreamClaim is the upstream's total asked for with count: claimed,
	// in the answer that gives it (TotalMatched is then the claim, and
	// TotalRelation claimed) and in every answer continuing its cursor.
	UpstreamClaim *upstreamClaim `json:"upstream_claim,omitempty"`
}

// delivered places a page of items within the frozen result.
type delivered struct {
	Offset    int `json:"offset"`
	Count     int `json:"count"`
	Remaining int `json:"remaining"`
}

func (searchData) schema(s *jsonschema.Schema) {
	prop(s, "items", "[]").Type = "object"
	prop(s, "total_matched").Minimum = jsonschema.Ptr(0.0)
	enum(prop(s, "total_relation"), envelope.RelationEq, envelope.RelationGte, envelope.RelationClaimed)
	// The upstream's number, beyond 2^53−1 a string (envelope.IJSON).
	est := prop(s, "upstream_total_estimate")
	est.Types, est.Type = []string{"integer", "string"}, ""
}

// searchTraits are the tool's traits, in the catalog.
var searchTraits = Traits{Name: SearchAllName, Hints: Hints{ReadOnly: Yes, Destructive: No, Idempotent: Yes, OpenWorld: Yes}, Scope: ScopeRead,
	Tasks: TaskWhenLong}

// SearchAll is the search_all tool: it scans the whole requested scope,
// paginating internally within a budget, and says exactly how much of the
// scope the answer covers.
func SearchAll(d *Deps) Spec {
	return Spec{
		Traits:       searchTraits,
		Title:        "Search a whole resource scope",
		Description:  `Scan a resource's whole scope within a budget: items, totals, group counts. Only complete:true proves absence; else incomplete_reasons say why and continuation how to go on.`,
		Input:        resourceSchema(searchInput, d.Runtime, "", true, nil),
		Data:         generate[searchData](),
		Problems:     readProblems,
		TextDefaults: searchTextDefaults,
		Handler:      d.searchAll,
	}
}

// searchTextDefaults: search_all's data repeats the scope's resource and
// the coverage's totals, and delivery starts at the first item and leaves
// nothing behind, unless it says otherwise.
var searchTextDefaults = []envelope.TextDefault{
	// What is left of an answer's data once its defaults are out: first
	// here, so that it is dropped after them and put back before them.
	{Path: "data", Default: func(root, _ map[string]any) (any, bool) {
		return map[string]any{}, root["problem"] == nil
	}},
	envelope.Same("data.resource", "scope.resource"),
	envelope.Same("data.total_matched", "coverage.total_matched"),
	envelope.Same("data.total_relation", "coverage.total_relation"),
	envelope.Const("data.groups", `{}`),
	// Nothing matched: there is no item to deliver.
	{Path: "data.items", Default: func(root, _ map[string]any) (any, bool) {
		if n, ok := jsonvalue.Get(root, "coverage.total_matched"); ok && fmt.Sprint(n) == "0" {
			return []any{}, true
		}
		return nil, false
	}},
	{Path: "data.delivered", Default: func(_, data map[string]any) (any, bool) {
		items, _ := data["items"].([]any)
		return map[string]any{"offset": 0, "count": len(items), "remaining": 0}, true
	}},
}

// readProblems are the failures a read can end with as a whole (the others
// become incomplete reasons of a partial answer).
var readProblems = []envelope.ProblemCode{envelope.ProblemUpstreamAuth, envelope.ProblemUpstreamForbidden, envelope.ProblemUpstreamNotFound,
	envelope.ProblemUpstreamRejected, envelope.ProblemUpstreamBadResponse, envelope.ProblemUpstreamErrorInSuccess, envelope.ProblemUpstreamGraphQL,
	envelope.ProblemUpstreamTooLarge, envelope.ProblemUpstreamContentType, envelope.ProblemUpstreamRateLimited,
	envelope.ProblemTokenClientRejected, envelope.ProblemTokenRequestRejected, envelope.ProblemTokenEndpointFailed,
	envelope.ProblemTokenEndpointTimeout, envelope.ProblemTokenEndpointUnreachable, envelope.ProblemTokenResponseInvalid, envelope.ProblemStoreUnavailable}

// budget is a validated budget with who set each part.
type budget struct {
	maxItems    int
	itemsSource string
	maxPages    int
	pagesSource string
	deadline    time.Duration
}

// checkBudget validates the caller's budget against the resource's caps.
func checkBudget(r *upstream.Resource, maxItems, maxPages, deadlineMS *int, bad map[string]bool) (budget, []envelope.FieldError) {
	l := r.Limits
	b := budget{maxItems: r.DefaultMaxItems, itemsSource: envelope.LimitAirlock, maxPages: l.MaxPages.Default, pagesSource: envelope.LimitAirlock,
		deadline: time.Duration(l.DeadlineMS.Default) * time.Millisecond}
	var errs []envelope.FieldError
	if maxItems != nil && !bad["max_items"] {
		if *maxItems > l.MaxItems.Cap {
			errs = append(errs, envelope.NewFieldError("max_items", envelope.FieldOverCap, l.MaxItems.Cap))
		}
		b.maxItems, b.itemsSource = *maxItems, envelope.LimitCaller
	}
	if maxPages != nil && !bad["max_pages"] {
		if *maxPages > l.MaxPages.Cap {
			errs = append(errs, envelope.NewFieldError("max_pages", envelope.FieldOverCap, l.MaxPages.Cap))
		}
		b.maxPages, b.pagesSource = *maxPages, envelope.LimitCaller
	}
	if deadlineMS != nil && !bad["deadline_ms"] {
		if *deadlineMS > l.DeadlineMS.Cap {
			errs = append(errs, envelope.NewFieldError("deadline_ms", envelope.FieldOverCap, l.DeadlineMS.Cap))
		}
		b.deadline = time.Duration(*deadlineMS) * time.Millisecond
	}
	return b, errs
}

// checkFields validates requested field names: declared and not sensitive.
func checkFields(r *upstream.Resource, arg string, names []string) []envelope.FieldError {
	var errs []envelope.FieldError
	for i, f := range names {
		path := arg + "[" + strconv.Itoa(i) + "]"
		fc, ok := r.Field(f)
		switch {
		case !ok:
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldUnknownField, r.DefaultFields()[0]))
		case fc.Sensitive:
			errs = append(errs, envelope.NewFieldError(path, envelope.FieldSensitive, r.DefaultFields()[0]))
		}
	}
	return errs
}

func (d *Deps) searchAll(ctx context.Context, call *Call) *envelope.Envelope {
	var a searchArgs
	errs, bad := decodeArgs(SearchAllName, searchInput, call.Raw, &a)
	r, ok := d.Runtime.Resources[a.Resource]
	if !ok && !bad["resource"] && a.Resource != "" {
		errs = append(errs, envelope.NewFieldError("resource", envelope.FieldUnknownResource, d.Runtime.ResourceNames()))
	}
	if !ok {
		return invalid(errs)
	}
	if !bad["filter"] {
		typed, ferrs := r.TypedFilter(a.Filter)
		errs = append(errs, ferrs...)
		errs = append(errs, r.CheckListFilter(typed)...)
		errs = append(errs, checkSensitive(r, filterUses(r, a.Filter))...)
		if a.Filter != nil {
			a.Filter = typed
		}
	}
	if !bad["fields"] {
		errs = append(errs, checkFields(r, "fields", a.Fields)...)
	}
	if !bad["group_by"] {
		errs = append(errs, checkFields(r, "group_by", a.GroupBy)...)
	}
	b, berrs := checkBudget(r, a.MaxItems, a.MaxPages, a.DeadlineMS, bad)
	errs = append(errs, berrs...)

	filter, warnings := effectiveFilter(r, a.Filter)
	fields := a.Fields
	if len(fields) == 0 {
		fields = r.DefaultFields()
	}
	fp := fingerprint(r.Name, filter, fields, a.GroupBy, b.maxItems > 0)

	var fs *scancache.Scan
	var claim *upstreamClaim
	offset := 0
	expired := false
	if a.Cursor != "" && !bad["cursor"] {
		p, state := d.Cursors.decode(a.Cursor)
		switch {
		case state == cursorTampered:
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorTampered, nil))
		case state == cursorOtherKey:
			expired = true
		case p.Fingerprint != fp:
			errs = append(errs, envelope.NewFieldError("cursor", envelope.FieldCursorMismatch, nil))
		default:
			if fs, ok = d.Scans.Get(ctx, p.Scan, p.Rev); !ok {
				expired = true
			}
			offset, claim = p.Offset, p.Claim
		}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	if env := coolingDown(r.Upstream, false); env != nil {
		return env
	}
	scope := &envelope.Scope{
		Resource: r.Name, Environment: d.Runtime.Environment, Upstream: r.Host(), Filter: orEmpty(filter),
		Visibility: r.Visibility(), Consistency: r.Consistency(), Search: r.SearchScope(filter),
	}
	for _, f := range append(append([]string(nil), fields...), a.GroupBy...) {
		if fc, ok := r.Field(f); ok && fc.Deprecated {
			w := envelope.NewWarning(envelope.WarnDeprecatedField, r.Name)
			w.Fields = []string{f}
			warnings = append(warnings, w)
		}
	}
	if expired {
		rs := envelope.NewReason(envelope.CursorExpired)
		rs.Source = "airlock"
		return &envelope.Envelope{
			IncompleteReasons: []envelope.Reason{rs}, Continuation: envelope.Continuation{Kind: envelope.ContinueRestart},
			Scope: scope, Warnings: warnings,
			Coverage: &envelope.Coverage{TotalRelation: envelope.RelationGte, Sources: []envelope.SourceCoverage{}},
			Data: &searchData{Resource: r.Name, Items: []json.RawMessage{}, TotalRelation: envelope.RelationGte,
				Groups: map[string][]upstream.Group{}},
		}
	}
	progress, stopProgress := d.startProgress(ctx, call)
	defer stopProgress()
	if fs == nil {
		sink := scancache.NewSink(r, fields, r.Limits.ScanItems, d.Redactor)
		spec := upstream.ScanSpec{Filter: filter, GroupBy: a.GroupBy, RequestID: call.RequestID, Progress: progress}
		if b.maxItems > 0 {
			spec.Sink = sink
		} else {
			spec.CountFromTotal = r.CountFromTotal(filter, a.GroupBy)
		}
		fs = scancache.NewScan(uuid.NewString(), fp, r.NewScan(spec), sink)
	}
	// A cursor continues (and verifies) whatever count says: the claim,
	// if one was given, travels in it.
	askClaim := a.Count == countClaimed && a.Cursor == ""
	if askClaim {
		if w := claimRefused(r, filter, a.GroupBy); w != nil {
			warnings, askClaim = append(warnings, *w), false
		}
	}
	out := fs.Scan.Outcome()
	if offset == 0 || out.Resumable {
		d.Scans.Ran(fs)
		bud := upstream.Budget{MaxPages: b.maxPages, PagesLimitSource: b.pagesSource, Deadline: b.deadline, FirstPages: askClaim}
		err := fs.Scan.Run(ctx, bud)
		out = fs.Scan.Outcome()
		if err == nil && askClaim {
			claim, warnings, err = d.claimOrVerify(ctx, r, fs, bud, &out, warnings)
		}
		stopProgress()
		if err != nil {
			return d.scanProblem(ctx, err)
		}
	}
	stopProgress()
	return d.deliver(r, fs, out, offset, b, scope, warnings, claim)
}

// claimOrVerify follows a run that read the first pages for the
// upstream's claim: the claim when it stands; else CLAIM_UNAVAILABLE says
// why, and the scan goes on counting within what is left of the budget,
// as without count. A run that settled the count itself gives no claim.
func (d *Deps) claimOrVerify(ctx context.Context, r *upstream.Resource, fs *scancache.Scan, bud upstream.Budget, out *upstream.Outcome,
	warnings []envelope.Warning) (*upstreamClaim, []envelope.Warning, error) {
	c, whyNot, source := fs.Scan.Claim()
	if whyNot == "" {
		if claimGiven(*out) {
			return newClaim(c), warnings, nil
		}
		return nil, warnings, nil
	}
	warnings = append(warnings, claimMissing(r, whyNot, source))
	// A source stopped for its claim waits while another had none: it
	// is counted now.
	left := bud.MaxPages - out.Pages
	if out.Continuation != envelope.ContinueNextCursor || left <= 0 {
		return nil, warnings, nil
	}
	bud.MaxPages, bud.FirstPages = left, false
	bud.Deadline = max(bud.Deadline-out.Elapsed, time.Millisecond)
	err := fs.Scan.Run(ctx, bud)
	*out = fs.Scan.Outcome()
	return nil, warnings, err
}

// effectiveFilter applies the resource's default filter to keys the caller
// did not set, and says so.
func effectiveFilter(r *upstream.Resource, filter map[string]any) (map[string]any, []envelope.Warning) {
	out := map[string]any{}
	for k, v := range filter {
		out[k] = v
	}
	var applied []string
	for k, v := range r.Config.DefaultFilter {
		if _, set := out[k]; !set {
			out[k] = config.NormalizeValue(v)
			applied = append(applied, k)
		}
	}
	if len(applied) == 0 {
		return out, nil
	}
	sort.Strings(applied)
	w := envelope.NewWarning(envelope.WarnDefaultScopeApplied, r.Name)
	w.Fields = applied
	return out, []envelope.Warning{w}
}

// orEmpty returns m, or an empty map when m is nil: a member that is
// always an object is never null.
func orEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

// orNone returns s, or an empty slice when s is nil: a member that is
// always an array is never null.
func orNone[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

func (d *Deps) deliver(r *upstream.Resource, fs *scancache.Scan, out upstream.Outcome, offset int, b budget, scope *envelope.Scope, warnings []envelope.Warning,
	claim *upstreamClaim) *envelope.Envelope {
	env := &envelope.Envelope{Scope: scope}
	if out.Snapshot != nil {
		scope.Snapshot = out.Snapshot
	}
	if out.Consistency != "" {
		scope.Consistency = out.Consistency
	}
	// Group counts come first (a counts-only call asked for nothing else);
	// items take what is left of the response budget.
	gb := r.Limits.ResponseBytes
	if b.maxItems > 0 {
		gb = min(groupBudget, gb/3)
	}
	groups, cutGroups := fitGroups(out.Groups, gb)
	itemBudget := r.Limits.ResponseBytes
	if len(groups) > 0 {
		itemBudget = max(itemBudget-costOf(groups), 1)
	}
	items, frozenLen := fs.Sink.Slice(offset, b.maxItems, itemBudget)
	next := offset + len(items)
	reasons := append([]envelope.Reason(nil), out.Reasons...)
	cont := envelope.Continuation{Kind: out.Continuation, Narrow: out.Narrow}
	for _, f := range slices.Sorted(maps.Keys(cutGroups)) {
		rs := envelope.NewReason(envelope.ResultLimitReached)
		rs.Limit, rs.LimitSource, rs.Field = envelope.Ptr(cutGroups[f]), envelope.LimitAirlock, "group_by."+f
		reasons = append(reasons, rs)
		if cont.Kind == envelope.ContinueNone {
			cont.Kind, cont.Narrow = envelope.ContinueNarrowQuery, []string{"filter"}
		}
	}
	if out.Continuation == envelope.ContinueRetryAfter {
		cont.RetryAfterSeconds = envelope.Ptr(out.RetryAfterSeconds)
	}
	if b.maxItems > 0 {
		dropped, missing := fs.Sink.Cut()
		if next < frozenLen {
			rs := envelope.NewReason(envelope.ResultLimitReached)
			if len(items) < b.maxItems {
				rs.Limit, rs.LimitSource = envelope.Ptr(r.Limits.ResponseBytes), envelope.LimitAirlock
			} else {
				rs.Limit, rs.LimitSource = envelope.Ptr(b.maxItems), b.itemsSource
			}
			reasons = append(reasons, rs)
			if cont.Kind != envelope.ContinueRestart && cont.Kind != envelope.ContinueRetryAfter {
				cont.Kind = envelope.ContinueNextCursor
			}
		} else if dropped > 0 {
			rs := envelope.NewReason(envelope.ResultLimitReached)
			rs.Limit, rs.LimitSource = envelope.Ptr(r.Limits.ScanItems), envelope.LimitAirlock
			reasons = append(reasons, rs)
			if cont.Kind == envelope.ContinueNone {
				cont.Kind = envelope.ContinueNarrowQuery
			}
		}
		if len(missing) > 0 {
			w := envelope.NewWarning(envelope.WarnPartialFieldSet, r.Name)
			w.Fields = missing
			warnings = append(warnings, w)
		}
	}
	switch cont.Kind {
	case envelope.ContinueNextCursor, envelope.ContinueRetryAfter:
		cont.Cursor = d.scanCursor(fs, next, claim)
	}
	if cont.Kind == envelope.ContinueNextCursor {
		reasons = append([]envelope.Reason{envelope.NewReason(envelope.MorePagesAvailable)}, reasons...)
	}
	if cont.Kind == envelope.ContinueNarrowQuery && len(cont.Narrow) == 0 {
		cont.Narrow = []string{"filter"}
	}
	if cont.Kind != envelope.ContinueNarrowQuery && cont.Kind != envelope.ContinueNextCursor {
		cont.Narrow = nil
	}
	env.IncompleteReasons = reasons
	env.Continuation = cont
	warnings = append(warnings, out.Warnings...)
	relation := envelope.RelationEq
	if !out.ScanComplete {
		relation = envelope.RelationGte
	}
	data := &searchData{
		Resource: r.Name, Items: orNone(items), TotalMatched: out.Matched, TotalRelation: relation,
		Groups: orEmpty(groups), Delivered: delivered{Offset: offset, Count: len(items), Remaining: max(frozenLen-next, 0)},
	}
	if out.UpstreamEstimate != nil {
		data.UpstreamTotalEstimate = envelope.Ptr(*out.UpstreamEstimate)
		warnings = append(warnings, envelope.NewWarning(envelope.WarnEstimatedTotal, r.Name))
	}
	if claim != nil {
		c := *claim
		c.Status = claimStatus(&c, out)
		data.UpstreamClaim = &c
		if claimGiven(out) {
			// The answer that gives the claim: the number asked for is
			// the upstream's, and says so; coverage keeps what was read.
			data.TotalMatched, data.TotalRelation = c.Total, envelope.RelationClaimed
		}
	}
	env.Warnings = warnings
	env.Data = data
	env.Coverage = &envelope.Coverage{
		Pages: out.Pages, ItemsScanned: out.ItemsScanned, TotalMatched: out.Matched, TotalRelation: relation,
		ElapsedMS: out.Elapsed.Milliseconds(), Sources: orNone(out.Sources),
	}
	return env
}

func invalid(errs []envelope.FieldError) *envelope.Envelope {
	return envelope.ErrorEnvelope(envelope.InvalidArguments(errs))
}

// scanProblem turns a scan failure into the problem envelope; the cause of
// a failure inside airlock is logged, as internalProblem does.
func (d *Deps) scanProblem(ctx context.Context, err error) *envelope.Envelope {
	var se *upstream.ScanError
	if !errors.As(err, &se) {
		return d.internalError(ctx, "scan", err)
	}
	if se.Problem.Code == envelope.ProblemInternal {
		// The sink failed: the store the preview records into.
		return d.internalError(ctx, "scan", se.Err)
	}
	return envelope.ErrorEnvelope(se.Problem)
}

// scanCursor returns the continuation cursor of fs at delivery offset off:
// the cache keeps fs (and the store too, when shared) for it.
func (d *Deps) scanCursor(fs *scancache.Scan, off int, claim *upstreamClaim) string {
	rev, err := d.Scans.Keep(fs)
	if err != nil {
		d.Logger.Warn("a frozen scan could not be saved to the store: its cursor continues only on this process", "scan", fs.ID, "err", err)
	}
	return d.Cursors.encode(cursorPayload{Scan: fs.ID, Offset: off, Fingerprint: fs.Fingerprint, Rev: rev, Claim: claim})
}
