package write

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// FormContentType is the content type of a form-encoded write body.
const FormContentType = "application/x-www-form-urlencoded"

// formBody encodes a rendered body (a mapping of scalars, as check
// requires) as application/x-www-form-urlencoded, its fields in name
// order: a value's text as is, a number or boolean as its JSON text.
func formBody(body any) []byte {
	m, _ := body.(map[string]any)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(jsonvalue.String(m[k])))
	}
	return []byte(b.String())
}
