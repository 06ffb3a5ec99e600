package review

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// Where a selection stands, as the index filters it.
const (
	StateAwaiting  = "awaiting"
	StateApproved  = "approved"
	StateRejected  = "rejected"
	StateCommitted = "committed"
	StateExpired   = "expired"
	StateBlocked   = "blocked"
	stateAll       = "all"
)

// filters are the index's state filters, in the order shown.
var filters = []struct{ Key, Label string }{
	{StateAwaiting, "Awaiting a decision"}, {StateApproved, "Approved"}, {StateRejected, "Rejected"},
	{StateCommitted, "Committed"}, {StateExpired, "Expired"}, {StateBlocked, "Not committable"}, {stateAll, "All"},
}

// standing is where a selection stands: a state and the words for it.
type standing struct {
	State string
	Text  string
}

// standing says where a selection stands: committed, expired, decided (a
// rejection, or an approval still usable), not committable, or awaiting.
func (rv *page) standing(ctx context.Context, sel *selection.Selection, now time.Time) standing {
	ops, _ := rv.d.Store.OperationsOf(ctx, sel.ID)
	for _, op := range ops {
		if op.Mode == selection.ModeExecute {
			return standing{StateCommitted, "committed: " + op.ID + " " + op.Status}
		}
	}
	if !now.Before(sel.ExpiresAt) {
		return standing{StateExpired, "expired"}
	}
	aps, _ := rv.d.Store.Approvals(ctx, sel.ID)
	for i := len(aps) - 1; i >= 0; i-- {
		switch ap := aps[i]; ap.Decision {
		case selection.DecisionRejected:
			return standing{StateRejected, "rejected by " + ap.Who + " as " + ap.Principal.String()}
		case selection.DecisionApproved:
			if ap.UsedBy == "" && now.Before(ap.ExpiresAt) {
				return standing{StateApproved, "approved by " + ap.Who + " as " + ap.Principal.String() + ", usable until " + ap.ExpiresAt.UTC().Format("15:04:05 UTC")}
			}
		}
	}
	if !sel.Committable {
		return standing{StateBlocked, "not committable"}
	}
	return standing{StateAwaiting, "awaiting a decision"}
}

func (rv *page) need(ctx context.Context, sel *selection.Selection) selection.Requirement {
	if rv.d.Runtime == nil {
		return selection.Requirement{Mode: "unknown (no configuration given)"}
	}
	if a, ok := rv.d.Runtime.Actions[sel.Action.Type]; ok {
		return rv.d.Engine.ApprovalRequirement(ctx, sel, a)
	}
	return selection.Requirement{Mode: "unknown (the action is no longer configured)"}
}

// upstreamName is the selection's upstream as the configuration names it,
// with its host: "billing (billing.example.com)". Without the
// configuration, the host alone.
func (rv *page) upstreamName(sel *selection.Selection) string {
	if rv.d.Runtime != nil {
		if r := rv.d.Runtime.Resources[sel.Resource]; r != nil && r.Config.Upstream != "" {
			if sel.Upstream == "" || sel.Upstream == r.Config.Upstream {
				return r.Config.Upstream
			}
			return r.Config.Upstream + " (" + sel.Upstream + ")"
		}
	}
	return sel.Upstream
}

// money is the money declaration of a resource's field, if any.
func (rv *page) money(resource, field string) *config.MoneyConfig {
	if rv.d.Runtime == nil {
		return nil
	}
	r := rv.d.Runtime.Resources[resource]
	if r == nil {
		return nil
	}
	if f := r.Config.Fields[field]; f != nil {
		return f.Money
	}
	return nil
}

// shown is a value as the page shows it.
type shown struct {
	Text  string
	Null  bool // null, or an empty string: shown as such, never as a blank
	Money bool
}

// show renders a stored value: strings as they are, null and "" marked,
// anything else as canonical JSON.
func show(v any) shown {
	switch x := v.(type) {
	case nil:
		return shown{Text: "null", Null: true}
	case string:
		if x == "" {
			return shown{Text: `"" (empty)`, Null: true}
		}
		return shown{Text: x}
	}
	b, _ := jsonvalue.Canonical(v)
	return shown{Text: string(b)}
}

// showAmount renders a value of a money field in its fixed currency (or
// the record's), falling back to show for what is not a number.
func showAmount(m *config.MoneyConfig, v, currency any) shown {
	if m != nil {
		if s, ok := FormatMoney(m, v, currency); ok {
			return shown{Text: s, Money: true}
		}
	}
	return show(v)
}

// fixedAmount shows v as money only when the currency does not vary by
// record: a distribution of amounts has no single record to read it from.
func fixedAmount(m *config.MoneyConfig, v any) shown {
	if m != nil && m.Currency != "" {
		return showAmount(m, v, nil)
	}
	return show(v)
}

type valueCount struct {
	Value shown
	Count int
	Share int // percent of the members, rounded
	Other bool
}

type groupView struct {
	Dim    string
	Values []valueCount
	// More and MoreCount are the values not shown, and their records.
	More, MoreCount int
}

// maxGroupRows bounds the values shown per composition dimension.
const maxGroupRows = 8

// maxEffectValues bounds the before-values the summary names per field.
const maxEffectValues = 3

func share(n, of int) int {
	if of <= 0 {
		return 0
	}
	return (n*100 + of/2) / of
}

// counts renders a distribution, the most frequent first (as stored),
// bounded to limit values; it also returns how many values, and records,
// it left out.
func (rv *page) counts(sel *selection.Selection, dim string, gs []upstream.Group, limit int) ([]valueCount, int, int) {
	m := rv.money(sel.Resource, dim)
	var out []valueCount
	more, moreCount := 0, 0
	for _, g := range gs {
		if len(out) >= limit {
			more++
			moreCount += g.Count
			continue
		}
		vc := valueCount{Value: fixedAmount(m, g.Value), Count: g.Count, Share: share(g.Count, sel.Summary.Members)}
		if o, ok := g.Value.(map[string]any); ok && o["other_values"] != nil {
			vc.Value, vc.Other = shown{Text: "other values"}, true
		}
		out = append(out, vc)
	}
	return out, more, moreCount
}

type effectView struct {
	Field     string
	Before    []valueCount
	More      int
	MoreCount int
	After     shown
}

type rowView struct {
	ID    string
	Cells []shown
}

type selectionView struct {
	Sel          *selection.Selection
	Upstream     string
	Need         selection.Requirement
	Standing     standing
	Decidable    bool
	Destructive  bool
	Irreversible []string
	// NotConditional is the fixed text of NOT_CONDITIONAL when the
	// selection carries it: the writes are checked, not conditioned.
	NotConditional string
	Effects        []effectView
	Acks           []string
	Groups         []groupView
	Columns        []string
	Rows           []rowView
	After, Next    string
	Approvals      []*selection.Approval
	Operations     []*selection.Operation
	CSRF           string
	Params         string
	Decided        string
	Previewed      string
	Expires        string
	ExpiresIn      string
	Expired        bool
}

func (rv *page) selection(w http.ResponseWriter, r *http.Request) {
	sel := rv.load(w, r)
	if sel == nil {
		return
	}
	ctx := r.Context()
	now := rv.d.Clock.Now()
	after := r.URL.Query().Get("after")
	recs, err := rv.d.Store.Records(ctx, sel.ID, selection.RecordQuery{Disposition: selection.Member, After: after, Limit: manifestPage + 1})
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	token, err := rv.csrf(ctx, rv.session(w, r), sel.ID)
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	v := selectionView{Sel: sel, Upstream: rv.upstreamName(sel), Need: rv.need(ctx, sel), Standing: rv.standing(ctx, sel, now),
		Acks: selection.Acknowledgements(sel), CSRF: token, Params: jsonOf(sel.Action.Params), Decided: r.URL.Query().Get("decided"),
		Irreversible: sel.Summary.Irreversible, After: after,
		Previewed: stamp(sel.CreatedAt), Expires: stamp(sel.ExpiresAt), ExpiresIn: relative(now, sel.ExpiresAt), Expired: !now.Before(sel.ExpiresAt)}
	for _, w := range sel.Summary.Warnings {
		if w.Code == envelope.WarnNotConditional {
			v.NotConditional = w.Message
		}
	}
	v.Decidable = v.Standing.State == StateAwaiting
	v.Destructive = slices.Contains(v.Need.Reasons, "the action is destructive")
	if rv.d.Runtime != nil {
		if a := rv.d.Runtime.Actions[sel.Action.Type]; a != nil && a.Config.Destructive {
			v.Destructive = true
		}
	}
	for _, e := range sel.Summary.Effect {
		m := rv.money(sel.Resource, e.Field)
		ev := effectView{Field: e.Field, After: fixedAmount(m, e.After)}
		ev.Before, ev.More, ev.MoreCount = rv.counts(sel, e.Field, e.Before, maxEffectValues)
		v.Effects = append(v.Effects, ev)
	}
	dims := make([]string, 0, len(sel.Summary.Groups))
	for k := range sel.Summary.Groups {
		dims = append(dims, k)
	}
	sort.Strings(dims)
	for _, dim := range dims {
		g := groupView{Dim: dim}
		g.Values, g.More, g.MoreCount = rv.counts(sel, dim, sel.Summary.Groups[dim], maxGroupRows)
		v.Groups = append(v.Groups, g)
	}
	if len(recs) > manifestPage {
		recs = recs[:manifestPage]
		v.Next = recs[len(recs)-1].ID
	}
	cols := map[string]bool{}
	for _, rec := range recs {
		for k := range rec.Review {
			cols[k] = true
		}
	}
	delete(cols, "id")
	v.Columns = sortedSet(cols)
	for _, rec := range recs {
		row := rowView{ID: rec.ID}
		for _, c := range v.Columns {
			val, ok := rec.Review[c]
			switch m := rv.money(sel.Resource, c); {
			case !ok:
				row.Cells = append(row.Cells, shown{})
			case m != nil:
				row.Cells = append(row.Cells, showAmount(m, val, rec.Review[m.CurrencyField]))
			default:
				row.Cells = append(row.Cells, show(val))
			}
		}
		v.Rows = append(v.Rows, row)
	}
	v.Approvals, _ = rv.d.Store.Approvals(ctx, sel.ID)
	v.Operations, _ = rv.d.Store.OperationsOf(ctx, sel.ID)
	rv.render(w, "selection", v)
}

type indexRow struct {
	Sel       *selection.Selection
	Upstream  string
	Need      string
	Standing  standing
	Previewed string
	Expires   string
	ExpiresIn string
	Expired   bool
}

type filterView struct {
	Key, Label string
	Count      int
	Current    bool
}

type indexView struct {
	Filters []filterView
	Current string
	Label   string
	Rows    []indexRow
	Matched int
	Capped  bool
	Total   int
}

func (rv *page) index(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("state")
	if want == "" {
		want = StateAwaiting
	}
	known := false
	for _, f := range filters {
		known = known || f.Key == want
	}
	if !known {
		keys := make([]any, len(filters))
		for i, f := range filters {
			keys[i] = f.Key
		}
		rv.fail(w, r, envelope.InvalidArguments([]envelope.FieldError{envelope.NewFieldError("state", envelope.FieldEnum, keys)}))
		return
	}
	ctx := r.Context()
	sels, err := rv.d.Store.RecentSelections(ctx, recentLimit)
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	now := rv.d.Clock.Now()
	v := indexView{Current: want, Capped: len(sels) == recentLimit, Total: len(sels)}
	count := map[string]int{stateAll: len(sels)}
	for _, s := range sels {
		st := rv.standing(ctx, s, now)
		count[st.State]++
		if want != stateAll && st.State != want {
			continue
		}
		v.Matched++
		if len(v.Rows) < indexRows {
			v.Rows = append(v.Rows, indexRow{Sel: s, Upstream: rv.upstreamName(s), Need: rv.need(ctx, s).Mode, Standing: st,
				Previewed: stamp(s.CreatedAt), Expires: stamp(s.ExpiresAt), ExpiresIn: relative(now, s.ExpiresAt), Expired: !now.Before(s.ExpiresAt)})
		}
	}
	for _, f := range filters {
		v.Filters = append(v.Filters, filterView{Key: f.Key, Label: f.Label, Count: count[f.Key], Current: f.Key == want})
		if f.Key == want {
			v.Label = f.Label
		}
	}
	rv.render(w, "index", v)
}

func jsonOf(v any) string {
	b, _ := jsonvalue.Canonical(v)
	return string(b)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// relative says when t is from now: "in 14 min", "3 h 5 min ago".
func relative(now, t time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return span(-d) + " ago"
	}
	return "in " + span(d)
}

func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		h := int(d / time.Hour)
		if m := int(d%time.Hour) / int(time.Minute); m > 0 {
			return fmt.Sprintf("%d h %d min", h, m)
		}
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}

// shortDigest keeps a digest's algorithm and its first and last characters:
// enough to compare by eye, with the whole one a click away.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) < 20 {
		return d
	}
	return algo + ":" + hex[:8] + "…" + hex[len(hex)-6:]
}
