package selection

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/write"
)

// classifier turns scanned items into records and streams them to the
// store in batches, counting as it goes.
type classifier struct {
	store   Store
	sel     *Selection
	req     PreviewRequest
	review  []string
	groups  []string
	effect  []string
	mu      sync.Mutex
	batch   []Record
	sum     Summary
	excl    map[int]int
	gcount  map[string]map[string]*upstream.Group
	bcount  map[string]map[string]*upstream.Group
	acount  map[string]map[string]*upstream.Group
	samples []Record
	w       *recordWriter
	// q classifies a scope scan's items on a goroutine of its own (nil for
	// named ids, classified as they are read).
	q *itemQueue
	// filterKeys are the filter's names, sorted.
	filterKeys []string
	// key is a buffer for group keys.
	key []byte
	// stream digests the records as they are classified, while they
	// arrive in strictly ascending id order with values that read back
	// from the store unchanged (see streamable); nil once they do not,
	// and the digest is then computed from the store.
	stream *Digester
}

func (c *classifier) Add(it *upstream.Item) error {
	if c.q != nil {
		return c.q.add(it)
	}
	rec := c.classify(it.ID, it.Version, it.Source, it.Doc, it.Violations)
	return c.add(rec)
}

func (c *classifier) add(rec Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum.Scanned++
	switch rec.Disposition {
	case Member:
		c.sum.Members++
		for _, g := range c.groups {
			c.bump(c.gcount, g, rec.Groups[g])
		}
		for _, f := range c.effect {
			c.bump(c.bcount, f, rec.Before[f])
		}
		if rec.Restore != nil || c.req.Action.PerTarget() {
			if after, err := c.req.Action.AfterFor(c.req.Params, rec.Before, rec.Restore); err == nil {
				for _, e := range c.req.Action.Config.Effect {
					if rec.Restore != nil || e.PerTarget() {
						c.bump(c.acount, e.Field, after[e.Field])
					}
				}
			}
		}
	case Excluded:
		c.sum.Excluded++
		c.excl[rec.Rule]++
	case Ambiguous:
		c.sum.Ambiguous++
		if len(c.samples) < 20 {
			c.samples = append(c.samples, rec)
		}
	}
	// Add refuses a record out of id order.
	if c.stream != nil && (!streamable(&rec) || c.stream.Add(rec) != nil) {
		c.stream = nil
	}
	c.batch = append(c.batch, rec)
	if len(c.batch) >= recordBatch {
		if err := c.w.err(); err != nil {
			return err
		}
		c.w.put(c.batch)
		c.batch = make([]Record, 0, recordBatch)
	}
	return nil
}

// bump counts a value of a dimension. The value's key is its canonical
// encoding, built in a buffer the classifier reuses (a string is made only
// for a new value).
func (c *classifier) bump(m map[string]map[string]*upstream.Group, dim string, v any) {
	vals := m[dim]
	if vals == nil {
		vals = map[string]*upstream.Group{}
		m[dim] = vals
	}
	key, err := jsonvalue.AppendCanonical(c.key[:0], v)
	if err != nil {
		key = mustCanonical(v)
	} else {
		c.key = key
	}
	g := vals[string(key)]
	if g == nil {
		k := string(key)
		if len(vals) >= maxGroupValues {
			k = "\x00other"
			if g = vals[k]; g == nil {
				g = &upstream.Group{Value: map[string]any{"other_values": true}}
				vals[k] = g
			}
		} else {
			g = &upstream.Group{Value: v}
			vals[k] = g
		}
	}
	g.Count++
}

func mustCanonical(v any) []byte {
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		b, _ = json.Marshal(fmt.Sprint(v))
	}
	return b
}

// classify decides a record's disposition. An explicit exclusion that
// matches wins (an operator may exclude a broken record by id); then a
// broken decision-field contract or a missing decision field makes the
// record ambiguous, never silently in or out; then the precondition.
func (c *classifier) classify(id, version, source string, doc map[string]any, broken []contract.Violation) Record {
	r := c.req.Resource
	rec := Record{ID: id, Version: version, Source: source, Rule: 0}
	rec.Review, _ = r.Project(doc, c.review)
	rec.Groups = make(map[string]any, len(c.groups))
	for _, g := range c.groups {
		v, _ := jsonvalue.Get(doc, r.FieldPath(g))
		rec.Groups[g] = v
	}
	before, missing := r.Project(doc, c.effect)
	rec.Before = before
	unreadable := -1
	for i, rule := range c.req.Exclude {
		match, ok := r.EvalRule(doc, rule)
		if ok && match {
			rec.Disposition, rec.Rule = Excluded, i
			return rec
		}
		if !ok && unreadable < 0 {
			unreadable = i
		}
	}
	if len(broken) > 0 {
		rec.Disposition, rec.Note = Ambiguous, broken[0].Describe()
		return rec
	}
	for _, f := range c.filterKeys {
		if _, ok := jsonvalue.Get(doc, r.FieldPath(filterField(r, f))); !ok {
			rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("filter field %s is missing", filterField(r, f))
			return rec
		}
	}
	if unreadable >= 0 {
		rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s is missing or unreadable for exclusion rule %d", c.req.Exclude[unreadable].Field, unreadable)
		return rec
	}
	for _, rule := range c.req.Action.Config.Precondition {
		match, ok := r.EvalRule(doc, rule)
		if !ok {
			rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s is missing or unreadable for the precondition", rule.Field)
			return rec
		}
		if !match {
			rec.Disposition, rec.Rule = Excluded, RulePrecondition
			return rec
		}
	}
	if len(missing) > 0 {
		rec.Disposition, rec.Note = Ambiguous, fmt.Sprintf("field %s that the action changes is missing", missing[0])
		return rec
	}
	if note := writable(c.req.Action, id, version); note != "" {
		rec.Disposition, rec.Note = Ambiguous, note
		return rec
	}
	rec.Disposition = Member
	// What the write must leave as it was: evidence for judging it.
	rec.Frame = write.FrameOf(c.req.Action, doc)
	return rec
}

// writable says why the action's write cannot be expressed for a target
// ("" when it can): an id that is not a URL path segment, or a conditional
// write without the version its condition needs. Such a target is never
// sent unconditionally: it is ambiguous until excluded or the
// configuration fixed.
func writable(a *upstream.Action, id, version string) string {
	if rq := a.Config.Request; rq != nil {
		// A GraphQL mutation carries the id in its variables, and a
		// body-keyed write (etcd's txn) in its body, not a path.
		inPath := rq.GraphQL == "" && strings.Contains(rq.Path, "{{id}}")
		if err := read.CheckPathID(id); err != nil && (inPath || id == "") {
			return err.Error()
		}
	}
	switch c := a.Config.Conditional; {
	case (c == config.CondIfMatch || c == config.CondVersion) && version == "":
		return fmt.Sprintf("no version (%s): the conditional write (%s) cannot be expressed", a.Resource.Config.VersionField, c)
	}
	return ""
}

// decisionFields are the fields this preview's decision rests on besides
// the resource's own: exclusions, the precondition and the effect.
func decisionFields(req PreviewRequest) []string {
	var out []string
	for _, r := range req.Exclude {
		out = append(out, r.Field)
	}
	for _, r := range req.Action.Config.Precondition {
		out = append(out, r.Field)
	}
	return append(out, req.Action.EffectFields()...)
}

// stillHolds reports whether every field holds the expected value.
func stillHolds(r *upstream.Resource, doc map[string]any, want map[string]any) bool {
	for f, v := range want {
		got, ok := jsonvalue.Get(doc, r.FieldPath(f))
		if !ok || string(mustCanonical(got)) != string(mustCanonical(v)) {
			return false
		}
	}
	return true
}

func fieldSet(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

func filterField(r *upstream.Resource, name string) string {
	if fc := r.Config.Filters[name]; fc != nil && fc.Field != "" {
		return fc.Field
	}
	return name
}
