package upstream

import (
	"errors"
	"net/url"
	"regexp"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// errExpired is a continuation the upstream says expired (see
// Resource.expiryMatches): the source must be read again from its start.
var errExpired = errors.New("the upstream says the continuation expired")

// graphqlDialect pages a GraphQL connection (Relay's cursor connections:
// GitHub, Shopify, Linear, GitLab, PostGraphile). The query document is
// the user's; airlock sets its page size and cursor variables. Items are
// the connection's nodes, or its edges' node; hasNextPage false, an empty
// page or totalCount reached on a page that was not full prove the end;
// hasNextPage true without an endCursor proves nothing.
type graphqlDialect struct{ p config.PaginationConfig }

// newGraphQLDialect builds the graphql dialect.
func newGraphQLDialect(p config.PaginationConfig, _ string) dialect { return graphqlDialect{p} }

func (d graphqlDialect) query(p *listParams, st pageState) *url.URL {
	p.set(d.p.PageSizeParam, d.p.PageSize)
	if st.Cursor != "" {
		p.set(d.p.CursorParam, st.Cursor)
	}
	return nil
}

func (d graphqlDialect) parse(resp *transport.Response, doc any, items []any, st pageState) (page, error) {
	pg, full := newPage(d.p, st, items)
	conn, _ := jsonvalue.Get(doc, "data."+d.p.Connection)
	total, known := pg.totalOf(d.p, nil, conn)
	reached := totalVerdict(&pg, total, known, full)
	pg.upstreamErrors = GraphQLMessages(doc)
	hasNext, fst := readFlag(conn, d.p.HasMore)
	if fst == signalUnreadable {
		pg.doubt("data." + d.p.Connection + "." + d.p.HasMore)
	}
	cursor, cst := readToken(conn, d.p.NextCursor)
	if cst == signalUnreadable {
		pg.doubt("data." + d.p.Connection + "." + d.p.NextCursor)
	}
	flagged := fst == signalRead
	switch {
	case flagged && !hasNext:
		pg.proven(SignalHasNextFalse)
	case flagged && cursor != "":
		pg.next.Cursor, pg.next.SignalSeen = cursor, true
	case flagged && cst == signalUnreadable, fst == signalUnreadable:
		pg.unknown(SignalUnreadable, false)
	case flagged:
		pg.unknown(SignalMoreNoCursor, false)
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

func (d graphqlDialect) more(_ *transport.Response, doc any) bool {
	conn, _ := jsonvalue.Get(doc, "data."+d.p.Connection)
	hn, st := readFlag(conn, d.p.HasMore)
	return st == signalRead && hn
}

func (graphqlDialect) plan(pageState) []pageState { return nil }

// graphqlItems reads a connection's items: nodes, else edges[].node. A
// null connection or items missing is a bad response; null nodes (an
// error resolving one) are left out when the answer's errors say why (the
// page is then partial), and are a bad response when nothing does.
func graphqlItems(doc any, connection string) ([]any, error) {
	items, nulls, err := connectionItems(doc, connection)
	if err == nil && nulls > 0 && GraphQLMessages(doc) == "" {
		return nil, transport.BadResponse("the connection at data.%s holds null nodes and the answer reports no error", connection)
	}
	return items, err
}

func connectionItems(doc any, connection string) ([]any, int, error) {
	conn, ok := jsonvalue.Get(doc, "data."+connection)
	if !ok || conn == nil {
		return nil, 0, transport.BadResponse("the connection is missing at data.%s", connection)
	}
	var list []any
	if nodes, ok := jsonvalue.Get(conn, "nodes"); ok {
		arr, isArr := nodes.([]any)
		if !isArr {
			return nil, 0, transport.BadResponse("nodes is not an array at data.%s", connection)
		}
		list = arr
	} else {
		edges, ok := jsonvalue.Get(conn, "edges")
		arr, isArr := edges.([]any)
		if !ok || !isArr {
			return nil, 0, transport.BadResponse("the connection at data.%s selects neither nodes nor edges { node }", connection)
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

// graphqlCheck refuses a GraphQL answer that carries errors and no data
// for the connection (a query or variable the upstream refused, or an
// expired cursor when the expiry declaration matches); an answer with
// both data and errors is read, and is partial.
func (r *Resource) graphqlCheck(doc any, st pageState) error {
	msgs := GraphQLMessages(doc)
	if msgs == "" {
		return nil
	}
	conn, _ := jsonvalue.Get(doc, "data."+r.Pagination.Connection)
	if conn != nil {
		return nil
	}
	if st.Started && r.expiryMatches(200, []byte(msgs)) {
		return errExpired
	}
	return &transport.BodyError{Kind: transport.BodyGraphQLErrors, Detail: "the GraphQL answer carries errors and no data", Message: msgs}
}

// expiryMatches reports whether an answer to a request that carried a
// continuation says the continuation expired: a status among the declared
// ones (410 by default) whose body matches the declared pattern, when one
// is declared. A 200 is an expiry only for a declared pattern (GraphQL
// errors).
func (r *Resource) expiryMatches(status int, body []byte) bool {
	e := r.Pagination.Expiry
	statuses := []int{410}
	if e != nil && len(e.Status) > 0 {
		statuses = e.Status
	}
	if status == 200 && (e == nil || e.Match == "") {
		return false
	}
	hit := status == 200
	for _, s := range statuses {
		hit = hit || s == status
	}
	if !hit {
		return false
	}
	if e == nil || e.Match == "" {
		return true
	}
	re, err := regexp.Compile(e.Match)
	return err == nil && re.Match(body)
}
