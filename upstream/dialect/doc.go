// Package dialect builds a resource's list requests and reads its pages:
// the List a resource embeds (its configuration, resolved pagination and
// sources, client and dialect), the requests of each page with the filters
// sent upstream only in a form that carries their values intact (query
// parameters, POST bodies, GraphQL variables, filter expressions, Mango
// selectors, DynamoDB attribute values), airlock's own check of each
// filter and rule on a record, and the pagination dialects (cursor, link,
// offset, page, continue, next_url, graphql, search_after,
// continue_object, bookmark), each placing its parameters in a request and
// reading a page's answer with its verdict on the end of the list, the
// signals read as read, absent or unreadable.
//
// It sends no request but a point in time's opening, and knows nothing of
// scans. It must never follow a continuation to another host, call the end
// of a list proven from a missing signal, read an unreadable signal as an
// absent one, or send a filter value in a form that would change it.
package dialect
