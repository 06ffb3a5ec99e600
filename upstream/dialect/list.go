package dialect

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// List is a resource's list as its requests are built: the resource's
// configuration, its resolved pagination and sources, the client of its
// upstream and its dialect. Package upstream's Resource embeds it.
type List struct {
	Upstream *transport.Client
	// Config is the resource as declared, but for its pagination, limits
	// and sources, which it holds resolved (defaults filled in), as the
	// fields below do.
	Config     config.ResourceConfig
	Pagination config.PaginationConfig
	Sources    []config.SourceConfig
	// Dialect builds the list's page requests and reads its pages.
	Dialect Dialect
	// Expression is the list's filter expression with its language's
	// rules filled in (nil when the list declares none).
	Expression *config.ExpressionConfig
}

// Field returns a declared field.
func (r *List) Field(name string) (*config.FieldConfig, bool) {
	f, ok := r.Config.Fields[name]
	return f, ok && f != nil
}

// FieldPath is where a declared field lives in an item.
func (r *List) FieldPath(name string) string {
	if f, ok := r.Field(name); ok && f.Path != "" {
		return f.Path
	}
	return name
}

// SourceBase resolves the base URL for a source.
func (r *List) SourceBase(src config.SourceConfig) *url.URL {
	if src.BaseURL != "" {
		u, err := url.Parse(src.BaseURL)
		if err == nil {
			return u
		}
	}
	return r.Upstream.Base()
}

// DialectFor builds the resource's dialect for pagination p.
func (r *List) DialectFor(p config.PaginationConfig) Dialect {
	d := New(p, r.FieldPath(r.Config.IDField))
	if cd, ok := d.(cursorDialect); ok {
		cd.key = lastKey{path: r.FieldPath(r.Config.IDField), exclusive: p.CursorExclusive}
		cd.itemsPath = r.Config.List.Items
		field := r.Config.IDField
		if p.CursorField != "" {
			field = p.CursorField
			cd.key.path = r.FieldPath(field)
		}
		if fd, ok := r.Field(field); ok && fd.Decode == config.DecodeBase64 {
			cd.key.base64 = true
		}
		return cd
	}
	return d
}

// sendSnapshot sends the first page's snapshot with every later page.
func (r *List) sendSnapshot(p *Params, st State) {
	if sc := r.Pagination.Snapshot; sc != nil && sc.Param != "" && st.Started && st.Snapshot != "" {
		p.Set(sc.Param, st.Snapshot)
	}
}

// FieldName maps a field an upstream named in a validation error to a name
// airlock may show: the filter argument that sent the query parameter
// (filter.X), or upstream.F when F is a field the resource declares (by
// name or path); "" for anything else.
func (r *List) FieldName(name string) string {
	if f := r.paramToFilter(name); f != "" {
		return f
	}
	for _, fname := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		if fname == name || r.FieldPath(fname) == name {
			return "upstream." + fname
		}
	}
	return ""
}

// TypedID is an id in its declared field type: a number for an integer or
// number id field (GraphQL's Int!, a JSON body), else the string.
func (r *List) TypedID(id string) any {
	if fc, ok := r.Field(r.Config.IDField); ok && (fc.Type == "integer" || fc.Type == "number") {
		if _, err := json.Number(id).Float64(); err == nil {
			return json.Number(id)
		}
	}
	return id
}
