// Package dialect is the pagination dialects: how each one (cursor, link,
// offset, page, continue, next_url, graphql, search_after,
// continue_object, bookmark) places its parameters in a list request and
// reads a page's answer, with the page's verdict on the end of the list,
// and the signals it reads from a page as read, absent or unreadable.
//
// It sends no request and knows nothing of resources or scans. It must
// never call the end of a list proven from a missing signal, nor read an
// unreadable signal as an absent one.
package dialect
