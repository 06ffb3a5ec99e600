package dialect

import (
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// cursorDialect continues with a cursor: the one an answer hands out
// (next_cursor), or one derived from the last item, while an end flag
// says whether more follows.
type cursorDialect struct {
	p      config.PaginationConfig
	idPath string
	// key derives the next cursor from the last item (no next_cursor):
	// the id by default (Stripe), or a declared field made exclusive
	// (etcd). List.DialectFor sets it.
	key lastKey
	// itemsPath is where the items are: an answer that omits both them
	// and the flag (absent_means_zero) shows nothing of a list.
	itemsPath string
}

// newCursorDialect builds the cursor dialect.
func newCursorDialect(p config.PaginationConfig, idPath string) Dialect {
	return cursorDialect{p: p, idPath: idPath}
}

func (d cursorDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.Set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d cursorDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, _ := newPage(d.p, st, items)
	// A total (Stripe's total_count, etcd's count) proves no end here:
	// the flag or the cursor does; it is compared with what was read.
	total, known := pg.totalOf(d.p, resp, doc)
	totalVerdict(&pg, total, known, true)
	last, fst := endFlag(&pg, d.p, doc)
	flagged := fst == Read
	// A flag the upstream omits when false (proto3 JSON) reads as false;
	// an absence then proves the end only as any absent signal does:
	// once an earlier page carried the flag, or a probe showed it is sent.
	omitted := fst == Absent && AbsentZero(d.p, doc, d.p.HasMore+d.p.IsLast)
	if omitted {
		flagged, last = true, d.p.HasMore != ""
	}
	nc, nst := ReadToken(doc, d.p.NextCursor)
	if nst == Unreadable {
		pg.Doubt(d.p.NextCursor)
	}
	if flagged && last {
		if nc != "" {
			// The flag says last, and the same page says how to go on:
			// neither is believed.
			pg.Unknown(SignalFlagVsContinuation, false)
			return pg, nil
		}
		switch {
		case nst == Unreadable:
			pg.Unknown(SignalUnreadable, false)
		case omitted && len(items) == 0 && AbsentZero(d.p, doc, d.itemsPath) && isEmptyObject(doc):
			// Neither the items nor the flag nor anything else (etcd's
			// header): an answer that omits every member shows nothing of
			// a list, and proves the end only as any absent signal does.
			pg.absent(d.p, st, SignalEmptyPage, 0)
		case omitted && len(items) == 0:
			pg.proven(SignalEmptyPage)
		case omitted:
			pg.absent(d.p, st, SignalHasMoreAbsentFalse, len(items))
		default:
			pg.proven(flagSignal(d.p))
		}
		return pg, nil
	}
	if d.p.NextCursor == "" {
		// The cursor is the last item's id (Stripe): more is promised by
		// the flag, or (flag missing) assumed until an explicit end or an
		// empty page.
		switch {
		case len(items) == 0 && flagged:
			// More is promised, but there is no last id to continue from.
			pg.Unknown(SignalMoreOnEmpty, false)
			return pg, nil
		case len(items) == 0 && fst == Unreadable:
			// No last id, and a flag that cannot be read.
			pg.Unknown(SignalUnreadable, false)
			return pg, nil
		case len(items) == 0:
			pg.proven(SignalEmptyPage)
			return pg, nil
		}
		key := d.key
		if key.path == "" {
			key.path = d.idPath
		}
		id, err := key.of(ItemValue(items[len(items)-1]))
		if err != nil {
			return pg, err
		}
		pg.Next.Cursor = id
		if flagged {
			pg.Next.SignalSeen = true
		}
		return pg, nil
	}
	switch {
	case nc != "":
		pg.Next.Cursor, pg.Next.SignalSeen = nc, true
	case nst == Unreadable:
		// The page says how to go on in a form airlock cannot read (an
		// object where a cursor belongs: DynamoDB's LastEvaluatedKey):
		// the list may go on, and an empty page proves nothing.
		pg.Unknown(SignalUnreadable, false)
	case flagged:
		// The flag says more follows, but there is nothing to continue
		// with.
		pg.Unknown(SignalMoreNoCursor, false)
	case fst == Unreadable:
		// No cursor, and a flag that cannot be read: nothing says
		// whether this is the end.
		pg.Unknown(SignalUnreadable, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case nst == Read:
		// Present, and null or empty.
		pg.none(d.p, st, SignalNextCursorNone, len(items))
	default:
		pg.absent(d.p, st, SignalNextCursorNone, len(items))
	}
	return pg, nil
}

func (d cursorDialect) More(_ *transport.Response, doc any) bool {
	if d.p.NextCursor == "" {
		var pg Page
		last, st := endFlag(&pg, d.p, doc)
		return st == Read && !last
	}
	nc, st := ReadToken(doc, d.p.NextCursor)
	return st == Read && nc != ""
}

func (cursorDialect) Plan(State) []State { return nil }
