package dialect

import (
	"bytes"
	"encoding/json"
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// SignalContinuationNone: the answer carried no continuation object, or
// an empty one (continue_object).
const SignalContinuationNone = "continuation_empty"

// objectDialect is continue_object: the answer's continuation object
// (MediaWiki's continue) is sent back whole, each member as a parameter
// of its own, in the next request. The state keeps the object as its
// canonical JSON in Cursor, so that it is saved and sealed as any cursor
// is, and the same object twice is the same continuation twice.
type objectDialect struct{ p config.PaginationConfig }

// newObjectDialect builds the continue_object dialect.
func newObjectDialect(p config.PaginationConfig, _ string) Dialect { return objectDialect{p} }

func (d objectDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if d.p.ContinueParam != "" {
		// Sent back whole, as it was read (DynamoDB's ExclusiveStartKey).
		if o := ContinuationMembers(st.Cursor); o != nil {
			p.Set(d.p.ContinueParam, o)
		}
		return nil
	}
	for k, v := range ContinuationMembers(st.Cursor) {
		// Each member under its own name: at the top of a body, never
		// split at a dot.
		if p.Kind == config.ListQuery {
			p.Query.Set(k, jsonvalue.String(v))
		} else {
			p.Body[k] = v
		}
	}
	return nil
}

func (d objectDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, _ := newPage(d.p, st, items)
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	pg.Next.Cursor = ""
	if d.p.Evaluated != "" {
		// Read on every page: unreadable is doubt wherever it is.
		evaluated, counted, rs := ReadCount(doc, d.p.Evaluated)
		switch {
		case rs == Unreadable || (rs == Read && !counted):
			pg.Doubt(d.p.Evaluated)
		case rs == Read:
			pg.Next.MaxEvaluated = max(st.MaxEvaluated, evaluated)
		}
	}
	o, ost := readObject(doc, d.p.ContinuePath)
	if d.p.ContinueParam != "" && ost == Read && len(o) == 0 {
		// Sent whole, the object is the continuation itself: null or {}
		// in its place says neither "go on from here" nor "the end"
		// (DynamoDB leaves LastEvaluatedKey out on the last page).
		ost = Unreadable
	}
	if len(o) > 0 && d.p.ContinueParam != "" {
		enc, err := jsonvalue.Canonical(o)
		if err != nil {
			return pg, transport.BadResponse("the continuation object at %q cannot be encoded", d.p.ContinuePath)
		}
		pg.Next.Cursor, pg.Next.SignalSeen = string(enc), true
		return pg, nil
	}
	if len(o) > 0 {
		for _, v := range o {
			switch v.(type) {
			case string, json.Number, bool:
			default:
				return pg, transport.BadResponse("a member of the continuation object at %q is not a string, number or boolean", d.p.ContinuePath)
			}
		}
		enc, err := jsonvalue.Canonical(o)
		if err != nil {
			return pg, transport.BadResponse("the continuation object at %q cannot be encoded", d.p.ContinuePath)
		}
		pg.Next.Cursor, pg.Next.SignalSeen = string(enc), true
		return pg, nil
	}
	switch {
	case ost == Unreadable:
		// Not an object: how to go on cannot be read.
		pg.Doubt(d.p.ContinuePath)
		pg.Unknown(SignalUnreadable, false)
	case d.p.Evaluated != "":
		d.evaluatedEnd(&pg, doc, st, len(items))
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case ost == Read:
		// Present, and null or {}: the upstream says there is nothing to
		// continue with.
		pg.none(d.p, st, SignalContinuationNone, len(items))
	default:
		// MediaWiki leaves continue out on the last page: proof only once
		// the object was seen on this scan or a probe showed it is sent.
		pg.absent(d.p, st, SignalContinuationNone, len(items))
	}
	return pg, nil
}

// evaluatedEnd is the verdict on a page without the object where the page
// size counts the items evaluated (pagination.evaluated), not those
// returned: a filtered page holds fewer items than the size, or none, and
// still goes on, so its items say nothing of the end. Only a page that
// evaluated fewer than the size, and fewer than an earlier page did, ran
// out of items; one that evaluated as many stopped at the size, or at the
// upstream's own cut (DynamoDB stops a page at 1 MB read), and the
// object's absence there contradicts it (the object may have been
// dropped). A count missing or unreadable proves nothing.
func (d objectDialect) evaluatedEnd(pg *Page, doc any, st State, n int) {
	evaluated, counted, rs := ReadCount(doc, d.p.Evaluated)
	switch {
	case rs == Unreadable || (rs == Read && !counted):
		pg.Doubt(d.p.Evaluated)
		pg.Unknown(SignalUnreadable, false)
	case rs == Absent || evaluated >= d.p.PageSize || (st.MaxEvaluated > 0 && evaluated >= st.MaxEvaluated):
		pg.Unknown(SignalMissingOnFull, false)
	case n == 0:
		pg.proven(SignalEmptyPage)
	case st.SignalSeen:
		pg.proven(SignalContinuationNone)
	default:
		// A first page that ran out: proof once a probe shows the
		// upstream sends the object.
		pg.Unknown(SignalContinuationNone, true)
	}
}

func (d objectDialect) More(_ *transport.Response, doc any) bool {
	o, _ := readObject(doc, d.p.ContinuePath)
	return len(o) > 0
}

func (objectDialect) Plan(State) []State { return nil }

// ContinuationMembers decodes a continuation object kept in a state.
func ContinuationMembers(enc string) map[string]any {
	if enc == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(enc)))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}
