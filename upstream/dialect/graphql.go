package dialect

import (
	"errors"
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// ErrExpired is a continuation the upstream says expired (see
// Resource.expiryMatches): the source must be read again from its start.
var ErrExpired = errors.New("the upstream says the continuation expired")

// graphqlDialect pages a GraphQL connection (Relay's cursor connections:
// GitHub, Shopify, Linear, GitLab, PostGraphile). The query document is
// the user's; airlock sets its page size and cursor variables. Items are
// the connection's nodes, or its edges' node; hasNextPage false, an empty
// page or totalCount reached on a page that was not full prove the end;
// hasNextPage true without an endCursor proves nothing.
type graphqlDialect struct{ p config.PaginationConfig }

// newGraphQLDialect builds the graphql dialect.
func newGraphQLDialect(p config.PaginationConfig, _ string) Dialect { return graphqlDialect{p} }

func (d graphqlDialect) Query(p *Params, st State) *url.URL {
	p.Set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.Set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d graphqlDialect) Parse(resp *transport.Response, doc any, items []any, st State) (Page, error) {
	pg, full := newPage(d.p, st, items)
	conn, _ := jsonvalue.Get(doc, "data."+d.p.Connection)
	total, known, bad := ConnectionTotal(d.p, resp, doc)
	if bad != "" {
		pg.Doubt(bad)
	}
	reached := totalVerdict(&pg, total, known, full)
	pg.UpstreamErrors = GraphQLMessages(doc)
	hasNext, fst := readFlag(conn, d.p.HasMore)
	if fst == Unreadable {
		pg.Doubt("data." + d.p.Connection + "." + d.p.HasMore)
	}
	cursor, cst := ReadToken(conn, d.p.NextCursor)
	if cst == Unreadable {
		pg.Doubt("data." + d.p.Connection + "." + d.p.NextCursor)
	}
	flagged := fst == Read
	switch {
	case flagged && !hasNext:
		pg.proven(SignalHasNextFalse)
	case flagged && cursor != "":
		pg.Next.Cursor, pg.Next.SignalSeen = cursor, true
	case flagged && cst == Unreadable, fst == Unreadable:
		pg.Unknown(SignalUnreadable, false)
	case flagged:
		pg.Unknown(SignalMoreNoCursor, false)
	case len(items) == 0:
		pg.proven(SignalEmptyPage)
	case reached:
		pg.proven(SignalTotalReached)
	default:
		// The page carries no hasNextPage: the query does not select it.
		pg.absent(d.p, st, SignalHasNextFalse, len(items))
	}
	return pg, nil
}

func (d graphqlDialect) More(_ *transport.Response, doc any) bool {
	conn, _ := jsonvalue.Get(doc, "data."+d.p.Connection)
	hn, st := readFlag(conn, d.p.HasMore)
	return st == Read && hn
}

func (graphqlDialect) Plan(State) []State { return nil }

// ConnectionTotal reads a graphql list's total as ReadTotal does: from
// the declared header, or from the connection, whose member an
// unreadable one is named by in the answer (data.CONNECTION.totalCount).
func ConnectionTotal(p config.PaginationConfig, resp *transport.Response, doc any) (n int, known bool, bad string) {
	conn, _ := jsonvalue.Get(doc, "data."+p.Connection)
	n, known, bad = ReadTotal(p, resp, conn)
	if bad != "" && p.TotalHeader == "" {
		bad = "data." + p.Connection + "." + bad
	}
	return n, known, bad
}

// GraphQLItems reads a connection's items: nodes, else edges[].node. A
// null connection or items missing is a bad response; null nodes (an
// error resolving one) are left out when the answer's errors say why (the
// page is then partial), and are a bad response when nothing does.
func GraphQLItems(doc any, connection string) ([]any, error) {
	items, nulls, err := connectionItems(doc, connection)
	if err == nil && nulls > 0 && GraphQLMessages(doc) == "" {
		return nil, transport.BadResponse("the connection at data.%s holds null nodes and the answer reports no error", connection)
	}
	return items, err
}

func connectionItems(doc any, connection string) ([]any, int, error) {
	conn, ok := jsonvalue.Get(doc, "data."+connection)
	if !ok || conn == nil {
		return nil, 0, transport.BadResponse("the connection is missing at %q", "data."+connection)
	}
	var list []any
	if nodes, ok := jsonvalue.Get(conn, "nodes"); ok {
		arr, isArr := nodes.([]any)
		if !isArr {
			return nil, 0, transport.BadResponse("the items at %q are not an array", "data."+connection+".nodes")
		}
		list = arr
	} else {
		edges, ok := jsonvalue.Get(conn, "edges")
		arr, isArr := edges.([]any)
		if !ok || !isArr {
			return nil, 0, transport.BadResponse("the connection at %q selects neither nodes (%q) nor edges { node }", "data."+connection, "data."+connection+".nodes")
		}
		list = make([]any, len(arr))
		for i, e := range arr {
			list[i], _ = jsonvalue.Get(e, "node")
		}
	}
	out := make([]any, 0, len(list))
	for _, x := range list {
		if x != nil {
			out = append(out, x)
		}
	}
	return out, len(list) - len(out), nil
}

// GraphQLMessages quotes a GraphQL answer's errors (their messages, the
// first few), "" when it has none.
func GraphQLMessages(doc any) string {
	errs, _ := jsonvalue.Get(doc, "errors")
	list, _ := errs.([]any)
	if len(list) == 0 {
		return ""
	}
	msg := transport.MessageOf(list)
	if msg == "" {
		msg = "errors without a message"
	}
	return envelope.QuoteUpstream(msg)
}
