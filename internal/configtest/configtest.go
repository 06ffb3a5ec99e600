// Package configtest holds the configuration documents tests of several
// packages build on. It is for tests only and never reads a file.
package configtest

import (
	"fmt"
	"strings"
)

// Lines joins lines into a document: argument i is line i+1, so that the
// expected line numbers of a case can be read off its arguments.
func Lines(lines ...string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

// MinimalUpstream is the environment and one upstream, api, in four lines.
var MinimalUpstream = []string{
	"environment: test",
	"upstreams:",
	"  api:",
	"    base_url: http://127.0.0.1:1",
}

// MinimalResource is a valid resource block (lines 5 to 12 when it follows
// MinimalUpstream's four lines).
var MinimalResource = []string{
	"resources:",
	"  items:",
	"    upstream: api",
	"    list: {path: /items}",
	"    pagination: {dialect: link}",
	"    id_field: id",
	"    fields:",
	"      id: {type: string}",
}

// WithCredential is a minimal configuration whose upstream api has the
// credential block given (lines indented as under upstreams.api).
func WithCredential(cred string) []byte {
	return Lines(append(append(append([]string(nil), MinimalUpstream...), strings.Split(strings.TrimRight(cred, "\n"), "\n")...), MinimalResource...)...)
}

// WithPagination is the minimal configuration with the pagination block
// given (a flow mapping, on line 9).
func WithPagination(pagination string) []byte {
	lines := append(append([]string(nil), MinimalUpstream...), MinimalResource...)
	lines[8] = "    pagination: " + pagination
	return Lines(lines...)
}

// OneUpstream is a configuration with one upstream, api, at baseURL and
// one resource, items; extra is YAML added to the upstream (indented by
// four spaces). The credential is $TEST_TOKEN unless extra names one.
func OneUpstream(baseURL, extra string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "environment: test\nupstreams:\n  api:\n    base_url: %q\n", baseURL)
	if !strings.Contains(extra, "credential:") {
		b.WriteString("    credential: {env: TEST_TOKEN}\n")
	}
	if !strings.Contains(extra, "backoff:") {
		b.WriteString("    backoff: {min: 1ms, max: 5ms}\n")
	}
	for _, line := range strings.Split(strings.TrimRight(extra, "\n"), "\n") {
		if line != "" {
			b.WriteString("    " + line + "\n")
		}
	}
	b.WriteString("resources:\n  items:\n    upstream: api\n    list: {path: /items}\n    pagination: {dialect: link}\n    id_field: id\n    fields:\n      id: {type: string}\n")
	return []byte(b.String())
}
