package dialect

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Params collects one list request's parameters where its kind puts
// them: the query string of a GET list, the JSON body of a POST list, the
// variables of a graphql list. The list's own params and a source's params
// are always query parameters.
type Params struct {
	Kind  string
	Query url.Values
	Body  map[string]any
}

// Set places one value: in a query as its string form, in a body at its
// dotted path, in variables under its name, keeping its JSON type.
func (p *Params) Set(k string, v any) {
	if k == "" {
		// A parameter the list does not send (page_size_param: none).
		return
	}
	switch p.Kind {
	case config.ListQuery:
		p.Query.Set(k, jsonvalue.String(v))
	case config.ListBody:
		jsonvalue.Put(p.Body, k, v)
	default:
		p.Body[k] = v
	}
}

// Add appends one more value of a repeated query parameter.
func (p *Params) Add(k, v string) { p.Query.Add(k, v) }

// Describe is the parameters in a line, for evidence: the query string,
// then the body (or variables) as JSON.
func (p *Params) Describe() string {
	out := transport.EncodeQuery(p.Query, false)
	if len(p.Body) > 0 {
		b, _ := jsonvalue.Encode(p.Body)
		if out != "" {
			out += " "
		}
		out += string(b)
	}
	return out
}

// searchAfterValue decodes a saved search_after cursor (the last item's
// sort values, canonically encoded).
func searchAfterValue(cursor string) any {
	dec := json.NewDecoder(strings.NewReader(cursor))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return cursor
	}
	return v
}
