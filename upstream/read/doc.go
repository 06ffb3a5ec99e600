// Package read reads one item of a resource by its id, outside a scan
// (GET by path, POST with a rendered body, GraphQL by $id), and judges an
// upstream's answer, live or recorded, against the resource's contract as
// the scan would (accept, warn, refuse or stop).
//
// It must never address anything but the one item (an id that is not one
// URL path segment is refused), nor call an answer acceptable that breaks a
// contract a decision rests on.
package read
