package draft

import (
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// nextURLName is a member name that says it holds the next page's URL,
// wherever it is in the answer (Twilio's meta.next_page_url, a
// links.next_href): next, then page or nothing, then url, uri, link or
// href.
var nextURLName = regexp.MustCompile(`(?i)^next[_-]?(page[_-]?)?(url|uri|link|href)$`)

// maxNextURLDepth bounds how deep the answer's schema is searched.
const maxNextURLDepth = 3

// findNextURL is the member of the answer's schema, at any path up to
// maxNextURLDepth, whose name says it is the next page's URL and whose
// schema is a URL string; the shallowest, then the first by name.
func findNextURL(body *openapi3.Schema) bodyField {
	var found []bodyField
	var walk func(s *openapi3.Schema, prefix string, depth int)
	walk = func(s *openapi3.Schema, prefix string, depth int) {
		if s == nil || depth > maxNextURLDepth {
			return
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range s.Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			p := resolve(s.Properties[name])
			if p == nil {
				continue
			}
			path := prefix + name
			switch {
			case nextURLName.MatchString(name) && isStringSchema(p) && urlLike(path, p):
				found = append(found, bodyField{path, p})
			case isType(p, "object"):
				walk(p, path+".", depth+1)
			}
		}
	}
	walk(body, "", 1)
	if len(found) == 0 {
		return bodyField{}
	}
	slices.SortStableFunc(found, func(a, b bodyField) int { return strings.Count(a.path, ".") - strings.Count(b.path, ".") })
	return found[0]
}

// linkRelWords say a parameter's value is read from the Link header's
// next relation (Okta's after: "obtained from the Link response header"):
// the Link header is then the way on, and the parameter rides in it.
var linkRelWords = regexp.MustCompile(`(?i)(\blink (response )?header\b|\blink relation\b|rel="?next|\bnext link\b|\blink: <)`)
