package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// fieldChecks judges the declared fields on the raw items the probe read:
// the id, each field's type and enum, timestamp layouts and the values
// that stand for null.
func (p *prober) fieldChecks() {
	r := p.r
	n := len(p.samples)
	if n == 0 {
		p.add("fields", Unverifiable, "the list is empty: no item to check the fields against", "")
		return
	}
	idPath := r.FieldPath(r.Config.IDField)
	seen := map[string]bool{}
	missing, dup := 0, 0
	for _, m := range p.samples {
		id, ok := jsonvalue.GetID(m, idPath)
		switch {
		case !ok:
			missing++
		case seen[id]:
			dup++
		}
		seen[id] = true
	}
	switch {
	case missing > 0:
		p.add("id_field", Wrong, fmt.Sprintf("%s is missing or empty on %d of %d items", r.Config.IDField, missing, n), "name the field that holds each item's stable id")
	default:
		p.add("id_field", OK, fmt.Sprintf("%s is present on all %d items", r.Config.IDField, n), "")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		f := r.Config.Fields[name]
		if f == nil {
			continue
		}
		p.fieldCheck(name, f)
	}
}

type fieldStats struct {
	present, nulls, empty int
	wrongType             []string
	badTime               []string
	outside               []string
	// elements counts an array field's elements by the scalar type they
	// are sent in; badElements samples those the declared type refuses.
	elements    map[string]int
	badElements []string
}

func (p *prober) fieldCheck(name string, f *config.FieldConfig) {
	r := p.r
	path := r.FieldPath(name)
	if r.Config.List.ScalarItemField == name {
		return // the plain value itself: nothing to check beyond the items
	}
	var st fieldStats
	for _, m := range p.samples {
		v, ok := jsonvalue.Get(m, path)
		if !ok {
			continue
		}
		st.present++
		if v == nil {
			st.nulls++
			continue
		}
		if s, ok := v.(string); ok && s == "" {
			st.empty++
		}
		if config.IsNull(v, f) {
			continue
		}
		if !typeFits(v, f) {
			st.wrongType = appendSample(st.wrongType, v)
			continue
		}
		if f.Type == "timestamp" && !timestampFits(v, f.Layout) {
			st.badTime = appendSample(st.badTime, v)
		}
		if s, ok := v.(string); ok && len(f.Enum) > 0 && !config.InEnum(s, f) {
			st.outside = appendSample(st.outside, v)
		}
		if list, ok := v.([]any); ok && f.Type == "array" {
			for _, e := range list {
				if st.elements == nil {
					st.elements = map[string]int{}
				}
				st.elements[scalarKind(e)]++
				if f.Elements != "" && !typeFits(e, &config.FieldConfig{Type: f.Elements}) {
					st.badElements = appendSample(st.badElements, e)
				}
			}
		}
	}
	n := len(p.samples)
	at := "fields." + name
	if st.present == 0 {
		status := Unverifiable
		if f.Required || f.Permission {
			status = Wrong
		}
		p.add(at+".path", status, fmt.Sprintf("%s is absent from all %d items", path, n), "check the field's name or path")
		return
	}
	if len(st.wrongType) > 0 {
		p.add(at+".type", Wrong, fmt.Sprintf("declared %s, the upstream sends %s", f.Type, strings.Join(st.wrongType, ", ")), "declare the type the upstream sends")
	} else {
		p.add(at+".type", OK, fmt.Sprintf("%s on %d of %d items", f.Type, st.present-st.nulls, n), "")
	}
	if f.Type == "timestamp" {
		switch {
		case len(st.badTime) > 0:
			hint := "declare layout: the upstream's format (a Go layout, unix or unix_ms)"
			if l := guessLayout(st.badTime[0]); l != "" {
				hint = fmt.Sprintf("declare layout: %q", l)
			}
			p.add(at+".layout", Wrong, fmt.Sprintf("values such as %s do not read as %s", st.badTime[0], layoutName(f.Layout)), hint)
		case st.present > st.nulls:
			p.add(at+".layout", OK, fmt.Sprintf("every value reads as %s", layoutName(f.Layout)), "")
		}
	}
	p.elementsCheck(at, f, st)
	if len(st.outside) > 0 {
		p.add(at+".enum", Wrong, "values outside the declared enum: "+strings.Join(st.outside, ", "), "add them to enum: an unknown value in a decision field withholds the record")
	}
	p.nullCheck(at, f, st, n)
}

// elementsCheck compares an array field's declared element type with
// the elements the upstream sends, or names the type to declare: a filter
// value is converted to it, so that 4 and "4" ask for the same element.
func (p *prober) elementsCheck(at string, f *config.FieldConfig, st fieldStats) {
	if f.Type != "array" || len(st.elements) == 0 {
		return
	}
	kinds := slices.Sorted(maps.Keys(st.elements))
	switch {
	case len(st.badElements) > 0:
		p.add(at+".elements", Wrong, fmt.Sprintf("declared %s elements, the upstream sends %s", f.Elements, strings.Join(st.badElements, ", ")),
			"declare the element type the upstream sends")
	case f.Elements != "":
		p.add(at+".elements", OK, fmt.Sprintf("every element is %s", f.Elements), "")
	case len(kinds) == 1 && kinds[0] != "other":
		p.add(at+".elements", Unverifiable, fmt.Sprintf("every element is %s, and the type is not declared", kinds[0]),
			fmt.Sprintf("declare elements: %s, so that a filter value is converted to it (4 and \"4\" then mean the same)", kinds[0]))
	}
}

// scalarKind names the type a value is sent in, as elements declares it.
func scalarKind(v any) string {
	switch {
	case jsonvalue.IsInteger(v):
		return "integer"
	}
	switch v.(type) {
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "other"
}

func (p *prober) nullCheck(at string, f *config.FieldConfig, st fieldStats, n int) {
	declaredEmpty := config.IsNull("", f)
	switch {
	case f.Nullable && st.empty > 0 && st.nulls == 0 && !declaredEmpty:
		p.add(at+".null_values", Wrong,
			fmt.Sprintf(`"" on %d of %d items and null on none: the upstream writes "" where the field has no value`, st.empty, n),
			`declare null_values: [""]: a null filter otherwise misses every one of them`)
	case len(f.NullValues) > 0:
		if st.empty > 0 || st.nulls > 0 {
			p.add(at+".null_values", OK, fmt.Sprintf(`"" on %d and null on %d of %d items read as null`, st.empty, st.nulls, n), "")
		} else {
			p.add(at+".null_values", Unverifiable, fmt.Sprintf("none of the declared stand-ins for null on %d items", n), "")
		}
	case st.empty > 0 && st.nulls > 0:
		p.add(at+".null_values", OK, fmt.Sprintf(`both "" (%d) and null (%d) appear: airlock keeps them apart`, st.empty, st.nulls), "")
	}
}

func appendSample(list []string, v any) []string {
	if len(list) >= 3 {
		return list
	}
	b, err := json.Marshal(v)
	s := string(b)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

func typeFits(v any, f *config.FieldConfig) bool {
	switch f.Type {
	case "string":
		_, ok := v.(string)
		return ok
	case "timestamp":
		switch v.(type) {
		case string:
			return true
		case json.Number, float64:
			return f.Layout == config.LayoutUnix || f.Layout == config.LayoutUnixMS
		}
		return false
	case "integer":
		return jsonvalue.IsInteger(v)
	case "number":
		_, ok := jsonvalue.Float(v)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func timestampFits(v any, layout string) bool {
	if s, ok := v.(string); ok {
		if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return true
		}
	}
	if layout == "" || layout == config.LayoutRFC3339 {
		return false
	}
	_, ok := config.NormalizeTimestamp(v, layout)
	return ok
}

func layoutName(l string) string {
	if l == "" {
		return "RFC 3339"
	}
	return "layout " + strconvQuote(l)
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// guessLayout finds a layout that reads a sample value (JSON-encoded).
func guessLayout(sample string) string {
	var v any
	if err := json.Unmarshal([]byte(sample), &v); err != nil {
		return ""
	}
	if f, ok := v.(float64); ok {
		if f > 1e11 {
			return config.LayoutUnixMS
		}
		return config.LayoutUnix
	}
	s, _ := v.(string)
	for _, l := range []string{"2006-01-02 15:04:05.999Z07:00", "2006-01-02 15:04:05.999Z", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02T15:04:05.999", time.RFC1123, time.RFC1123Z} {
		if _, err := time.Parse(l, s); err == nil {
			return l
		}
	}
	return ""
}

// filterChecks sends each upstream filter parameter, in each form the
// configuration declares (one value, the multi form, the null form), and
// compares what the upstream selects with what airlock's own check
// selects from the whole list.
func (p *prober) filterChecks(ctx context.Context) {
	r := p.r
	for _, name := range slices.Sorted(maps.Keys(r.Config.Filters)) {
		fc := r.Config.Filters[name]
		if fc == nil || (fc.Param == "" && fc.MultiParam == "" && fc.Null == nil && fc.Expression == "") {
			continue
		}
		field := fc.FieldOf(name)
		at := "filters." + name
		if fd, ok := r.Field(field); ok && fd.Normalize != "" {
			p.add(at+".param", OK, "never sent upstream: the field is normalized, so airlock alone compares it", "")
			continue
		}
		values := p.commonValues(field, fc.Op == "contains")
		// A list and one value are tried with values that hold no
		// separator; a value that holds one is tried on its own below.
		var plain, split []any
		for _, v := range values {
			if s, ok := v.(string); ok && strings.Contains(s, ",") {
				split = append(split, v)
			} else {
				plain = append(plain, v)
			}
		}
		if len(values) == 0 {
			p.add(at+".param", Unverifiable, "no item holds a value of "+field+" to filter by", "")
			continue
		}
		if fc.Param != "" && len(plain) > 0 {
			p.compareFilter(ctx, at+".param", fc.Param, map[string]any{name: plain[0]})
		}
		if x := r.Config.List.Expression; fc.Expression != "" && x != nil && len(values) > 0 {
			// The value is written as one literal of the language: a
			// value holding a comma is as good as any.
			p.compareFilter(ctx, at+".expression", x.Param, map[string]any{name: values[0]})
			if fd, ok := r.Field(field); ok && fd.Nullable {
				// Airlock's null is absent or null: an expression language
				// may read it as present and null only (Mango's bare null).
				p.compareFilter(ctx, at+".expression_null", x.Param, map[string]any{name: nil})
			}
		}
		if fc.Param != "" && len(split) > 0 {
			// The data holds a value with a comma: an API that splits the
			// parameter reads it as several values.
			p.compareFilter(ctx, at+".separator", fc.Param, map[string]any{name: split[0]})
		}
		if fc.Multi != "" {
			if len(plain) < 2 {
				p.add(at+".multi", Unverifiable, "fewer than two distinct values of "+field+" without a comma to send as a list", "")
			} else {
				p.compareFilter(ctx, at+".multi", fc.Param, map[string]any{name: []any{plain[0], plain[1]}})
			}
		}
		if fc.NullParam != "" {
			p.compareFilter(ctx, at+".null_param", fc.Param, map[string]any{name: nil})
		}
		if fc.Null != nil {
			p.compareFilter(ctx, at+".is_null", fc.Null.Param, map[string]any{name: nil})
		}
		if p.literalCheckable(fc, field) {
			if s, ok := literalValue(fc, plain); ok {
				p.literalCheck(ctx, at+".literal", name, fc, s)
			} else {
				p.add(at+".literal", Unverifiable, "no item holds a value of "+field+" free of the characters an API may read as operators, to send behind each", "")
			}
		}
	}
}

// commonValues are the field's non-null values, most frequent first (ties
// by value), taken from the walk or else the samples.
func (p *prober) commonValues(field string, contains bool) []any {
	r := p.r
	path := r.FieldPath(field)
	fd, _ := r.Field(field)
	counts := map[string]int{}
	vals := map[string]any{}
	count := func(v any) {
		if v == nil || config.IsNull(v, fd) {
			return
		}
		switch v.(type) {
		case string, bool, json.Number, float64:
		default:
			return
		}
		b, _ := jsonvalue.Canonical(v) // a scalar: it always encodes
		k := string(b)
		counts[k]++
		vals[k] = v
	}
	docs := p.samples
	if p.truth != nil {
		docs = make([]map[string]any, 0, len(p.truth))
		for _, id := range slices.Sorted(maps.Keys(p.truth)) {
			docs = append(docs, p.truth[id])
		}
	}
	for _, m := range docs {
		v, _ := jsonvalue.Get(m, path)
		if contains {
			list, _ := v.([]any)
			for _, e := range list {
				count(e)
			}
			continue
		}
		count(v)
	}
	keys := slices.Sorted(maps.Keys(counts))
	sort.SliceStable(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, vals[k])
	}
	return out
}

func (p *prober) compareFilter(ctx context.Context, check, param string, filter map[string]any) {
	a := p.askFilter(ctx, filter, max(p.left()/2, 1))
	hint := a.hint
	if a.status == Wrong && a.hidden > 0 {
		name := strings.Split(check, ".")[1]
		switch fc := p.r.Config.Filters[name]; {
		case strings.HasSuffix(check, ".multi") && fc.Multi == "comma":
			hint = "the upstream does not read a comma list (an exact-match API takes a,b as one value): use multi: repeat, or leave multi unset"
		case strings.HasSuffix(check, ".expression_null"):
			hint = "the expression's null selects fewer records than airlock's null, which is absent or null (Mango's bare null, and OData's eq null on some services, is present and null only): declare an is_null template that selects both, or remove expression from this filter (airlock then filters alone)"
		case strings.HasSuffix(check, ".separator"):
			hint = "the upstream splits this parameter's value at its commas (as django-filter's __in does): declare multi: comma, so that a value holding a comma is applied by airlock alone, and send one value in an exact parameter (param) with lists in multi_param"
		case config.Comparison(fc.Op) && fc.ParamCompares:
			hint = fmt.Sprintf("the upstream does not compare as %s: declare the operator text it reads before the value (Redmine: operator: \">=\"), or remove param (airlock then compares alone)", fc.Op)
		}
	}
	p.add(check, a.status, a.evidence, hint)
}

// filterAnswer is the judgment of one filter sent as the configuration
// sends it: what the upstream returned against what airlock's own check
// selects.
type filterAnswer struct {
	status, evidence, hint string
	// sent is false when the value is applied by airlock alone.
	sent bool
	// hidden and rejected count the records the upstream left out and
	// those it returned that airlock's check rejects; refused says it
	// refused the request.
	hidden, rejected int
	refused          bool
}

// askFilter sends a filter as the configuration would, reading at most
// maxPages pages, and judges the answer.
func (p *prober) askFilter(ctx context.Context, filter map[string]any, maxPages int) filterAnswer {
	r := p.r
	what, why := r.SentFilter(filter)
	if what == "" {
		if why != "" {
			return filterAnswer{status: OK, evidence: "not sent upstream (" + why + "): airlock applies it alone"}
		}
		return filterAnswer{status: OK, evidence: "this form is not sent upstream: airlock applies it alone"}
	}
	if p.left() <= 0 {
		return filterAnswer{sent: true, status: Unverifiable, evidence: "?" + what + ": the probe's request budget is spent", hint: "raise --max-requests"}
	}
	w, err := r.WalkRaw(ctx, upstream.RawWalkSpec{Filter: filter, RequestID: p.opts.RequestID, MaxPages: maxPages, Send: p.do, Keep: p.keep, EndSeen: p.walkEnd})
	switch {
	case errors.Is(err, upstream.ErrPartitionNeeded):
		return filterAnswer{sent: true, status: Unverifiable, evidence: "?" + what + ": " + err.Error(), hint: "set default_filter to one value of the partition filter"}
	case errors.Is(err, errBudget):
		// A check the budget cut short is not settled either way.
		return filterAnswer{sent: true, status: Unverifiable, evidence: fmt.Sprintf("?%s: the probe's request budget ran out after %d pages", what, w.Pages), hint: "raise --max-requests"}
	case err != nil && w.Pages > 0:
		// The filtered list's first page was answered: a later page
		// refused is the pagination's doing (a page past the last one),
		// not the filter's.
		return filterAnswer{sent: true, status: Unverifiable,
			evidence: fmt.Sprintf("?%s: the first page was answered, then a later page was refused (%s): the filter cannot be judged on part of its answer", what, describeErr(err)),
			hint:     "see pagination.end: declare total_pages (or total_pages_header) when the upstream refuses a page past its last"}
	case err != nil:
		return filterAnswer{sent: true, refused: true, status: Wrong, evidence: "?" + what + ": " + describeErr(err), hint: "the upstream refuses this parameter: remove param, or fix its name or form"}
	}
	var notMatching []string
	for _, id := range slices.Sorted(maps.Keys(w.Docs)) {
		if !r.Matches(w.Docs[id], filter) {
			notMatching = append(notMatching, id)
		}
	}
	if p.truth == nil || !w.Complete {
		if len(notMatching) > 0 {
			return filterAnswer{sent: true, rejected: len(notMatching), status: Wrong,
				evidence: fmt.Sprintf("?%s: the upstream returned %d items airlock's own check rejects (e.g. %s)", what, len(notMatching), notMatching[0]),
				hint:     "the upstream ignores or reads this parameter otherwise: every answer with this filter is partial (CONFLICTING_EVIDENCE); fix or remove param"}
		}
		return filterAnswer{sent: true, status: Unverifiable,
			evidence: fmt.Sprintf("?%s: %d items, each matching; without the whole list the probe cannot tell whether any were left out", what, len(w.Docs))}
	}
	var want []string
	for _, id := range slices.Sorted(maps.Keys(p.truth)) {
		if r.Matches(p.truth[id], filter) {
			want = append(want, id)
		}
	}
	var hidden []string
	for _, id := range want {
		if _, ok := w.Docs[id]; !ok {
			hidden = append(hidden, id)
		}
	}
	switch {
	case len(hidden) > 0:
		return filterAnswer{sent: true, hidden: len(hidden), rejected: len(notMatching), status: Wrong,
			evidence: fmt.Sprintf("?%s: the upstream returned %d items, airlock's own check of the whole list finds %d; %d are left out (e.g. %s)", what, len(w.Docs), len(want), len(hidden), hidden[0]),
			hint:     "the upstream reads this parameter otherwise than airlock: it would hide records from every filtered answer; remove param (airlock then filters alone)"}
	case len(notMatching) > 0:
		return filterAnswer{sent: true, rejected: len(notMatching), status: Wrong,
			evidence: fmt.Sprintf("?%s: the upstream returned %d items, %d of which airlock's own check rejects (e.g. %s)", what, len(w.Docs), len(notMatching), notMatching[0]),
			hint:     "the upstream ignores or widens this parameter: every answer with this filter is partial (CONFLICTING_EVIDENCE); fix or remove param"}
	}
	return filterAnswer{sent: true, status: OK, evidence: fmt.Sprintf("?%s: the upstream returned the same %d items airlock's own check finds in the whole list", what, len(want))}
}

// writeChecks: conditional writes need a version on every item and, for
// a re-read or If-Match, a GET by id that answers with it.
func (p *prober) writeChecks(ctx context.Context) {
	r := p.r
	var first map[string]any
	var firstID string
	idPath := r.FieldPath(r.Config.IDField)
	for _, m := range p.samples {
		if id, ok := jsonvalue.GetID(m, idPath); ok {
			first, firstID = m, id
			break
		}
	}
	if first == nil {
		return
	}
	// The item read by id, once: it is checked whenever get is declared,
	// since re-reads before writes and reconciliation rest on it.
	var got itemRead
	if r.Config.Get != nil {
		got = p.itemCheck(ctx, firstID)
	}
	names := make([]string, 0, len(p.opts.Actions))
	byName := map[string]*upstream.Action{}
	for _, a := range p.opts.Actions {
		if a != nil && a.Resource == r {
			names = append(names, a.Name)
			byName[a.Name] = a
		}
	}
	sort.Strings(names)
	for _, name := range names {
		a := byName[name]
		at := "actions." + name + ".conditional"
		switch a.Config.Conditional {
		case config.CondIfMatch, config.CondVersion:
			vf := r.Config.VersionField
			path := r.FieldPath(vf)
			without := 0
			for _, m := range p.samples {
				if v, ok := jsonvalue.Get(m, path); !ok || v == nil || jsonvalue.String(v) == "" {
					without++
				}
			}
			if without > 0 {
				p.add(at, Wrong, fmt.Sprintf("%s: the version field %s is missing on %d of %d items: every such target would be ambiguous, never written", a.Config.Conditional, vf, without, len(p.samples)),
					"name the field that carries the version, or use conditional: reread")
				continue
			}
			ev := fmt.Sprintf("%s: the version field %s is on all %d items", a.Config.Conditional, vf, len(p.samples))
			if a.Config.Conditional == config.CondIfMatch && r.Config.Get != nil {
				switch {
				case got.budget:
					p.add(at, Unverifiable, ev+"; GET by id was not sent: the request budget ran out", "raise --max-requests")
					continue
				case got.resp == nil:
					p.add(at, Wrong, ev+"; GET by id failed (see get.path)", "check get.path")
					continue
				case got.resp.Header.Get("ETag") == "":
					p.add(at, Unverifiable, ev+"; GET by id sends no ETag, so the API may not read If-Match at all", "")
					continue
				default:
					ev += "; GET by id sends ETag " + got.resp.Header.Get("ETag")
				}
			}
			p.add(at, OK, ev, "")
		case config.CondReread:
			switch {
			case r.Config.Get == nil:
				p.add(at, Wrong, "reread needs a GET by id, and the resource has none", "declare get.path")
			case got.budget:
				p.add(at, Unverifiable, "reread: GET by id was not sent: the request budget ran out", "raise --max-requests")
			case !got.item:
				p.add(at, Wrong, "reread: GET by id of "+firstID+" does not answer the item (see get.path, get.item)", "check get.path and get.item")
			default:
				p.add(at, OK, "reread: GET by id of "+firstID+" answers the item with its id", "")
			}
		}
	}
}
