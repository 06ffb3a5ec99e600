package probe

import (
	"fmt"
	"net/http"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// The forms proven on etcd and SAP CAP (issue #29): a snapshot read from
// the first page and sent with the later ones, a cursor derived from the
// last item, and lists asked by POST.

// listMethod is how the list is asked for, for evidence: GET, or POST for
// a list with a body or a GraphQL query.
func listMethod(r *upstream.Resource) string {
	if config.ListKind(&r.Config) != config.ListQuery {
		return http.MethodPost
	}
	return http.MethodGet
}

// snapshotCheck checks a declared snapshot on the first page: the point in
// time opened, or the value at snapshot.from (etcd's header.revision,
// Kubernetes' resourceVersion) that the later pages send or must name.
func (p *prober) snapshotCheck(doc any) {
	pg := p.r.Pagination
	if pg.Consistency != config.ConsistencySnapshot {
		return
	}
	if pg.PIT != nil {
		p.add("pagination.consistency", OK, "snapshot: a point in time was opened at "+pg.PIT.Open+" and the first page was read in it", "")
		return
	}
	s := pg.Snapshot
	if s == nil {
		p.add("pagination.consistency", Wrong, "snapshot is claimed, but nothing declares where the first page names it", "declare pagination.snapshot, or consistency: none (or keyset)")
		return
	}
	v, ok := jsonvalue.Get(doc, s.From)
	if !ok || jsonvalue.String(v) == "" {
		p.add("pagination.consistency", Wrong, "snapshot is claimed, but the first page has no "+s.From, "declare consistency: none (or keyset): without a value read from the first page there is no snapshot")
		return
	}
	ev := fmt.Sprintf("snapshot: the first page carries %s %q", s.From, jsonvalue.String(v))
	if s.Param != "" {
		ev += ", sent as " + s.Param + " with every later page (the walk reads them at it)"
	}
	p.add("pagination.consistency", OK, ev, "")
}

// lastKeyCheck reports how a cursor derived from the last item held up on
// the walk: a key made exclusive (etcd's range key plus a NUL byte) that
// overlapped would have read an item twice (INCONSISTENT_SNAPSHOT
// duplicate_id); across two pages or more without one, it continues.
func (p *prober) lastKeyCheck(o upstream.Outcome) {
	pg := p.r.Pagination
	if pg.Dialect != config.DialectCursor || pg.NextCursor != "" || (pg.CursorField == "" && pg.CursorExclusive == "") {
		return
	}
	field := pg.CursorField
	if field == "" {
		field = p.r.Config.IDField
	}
	how := "the last item's " + field
	if pg.CursorExclusive == config.CursorNulSuffix {
		how += " and a NUL byte"
	}
	for _, rs := range o.Reasons {
		if rs.Code == envelope.InconsistentSnapshot && rs.Signal == "duplicate_id" {
			p.add("pagination.cursor_field", Wrong, "the walk continued from "+how+" and read an item twice: the next page overlapped the last",
				"the cursor parameter is inclusive: declare cursor_exclusive: nul_suffix (or the API takes another key)")
			return
		}
	}
	if o.Pages < 2 {
		p.add("pagination.cursor_field", Unverifiable, "the walk read one page: continuing from "+how+" was not tried", "")
		return
	}
	p.add("pagination.cursor_field", OK, fmt.Sprintf("the walk continued from %s over %d pages without reading an item twice", how, o.Pages), "")
}
