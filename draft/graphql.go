package draft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// introspection asks a GraphQL endpoint for its query type's fields and
// the object types they return, deep enough to see a connection's
// pageInfo, nodes and edges, and the nodes' scalar fields.
const introspection = `query AirlockIntrospection {
  __schema {
    queryType { name }
    types {
      kind name
      fields {
        name
        args { name type { kind name ofType { kind name ofType { kind name } } } }
        type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }
      }
    }
  }
}`

type gqlTypeRef struct {
	Kind   string      `json:"kind"`
	Name   string      `json:"name"`
	OfType *gqlTypeRef `json:"ofType"`
}

// named unwraps NON_NULL and LIST to the named type, and reports whether a
// list was on the way.
func (t *gqlTypeRef) named() (name, kind string, list bool) {
	for t != nil {
		switch t.Kind {
		case "NON_NULL":
		case "LIST":
			list = true
		default:
			return t.Name, t.Kind, list
		}
		t = t.OfType
	}
	return "", "", list
}

// String is the type as a GraphQL document writes it ([String!]!).
func (t *gqlTypeRef) String() string {
	switch {
	case t == nil:
		return ""
	case t.Kind == "NON_NULL":
		return t.OfType.String() + "!"
	case t.Kind == "LIST":
		return "[" + t.OfType.String() + "]"
	}
	return t.Name
}

type gqlField struct {
	Name string `json:"name"`
	Args []struct {
		Name string      `json:"name"`
		Type *gqlTypeRef `json:"type"`
	} `json:"args"`
	Type *gqlTypeRef `json:"type"`
}

type gqlType struct {
	Kind   string     `json:"kind"`
	Name   string     `json:"name"`
	Fields []gqlField `json:"fields"`
}

type gqlSchema struct {
	QueryType struct{ Name string } `json:"queryType"`
	Types     []gqlType             `json:"types"`
}

// FromGraphQL drafts a configuration from a GraphQL endpoint's
// introspection: every field of the query type that is a Relay
// connection (pageInfo with nodes or edges, taking first and after)
// becomes a resource of the graphql dialect, with a query selecting the
// nodes' scalar fields. It sends one POST, the introspection query.
func FromGraphQL(ctx context.Context, endpoint string, opts SampleOptions) (*Draft, error) {
	u, err := url.Parse(endpoint)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("the GraphQL endpoint %q is not an absolute http or https URL", endpoint)
	}
	if u.User != nil {
		return nil, errors.New("the endpoint URL must not carry credentials; use --credential-env")
	}
	schema, err := introspect(ctx, u, opts)
	if err != nil {
		return nil, err
	}
	types := map[string]gqlType{}
	for _, t := range schema.Types {
		types[t.Name] = t
	}
	query, ok := types[schema.QueryType.Name]
	if !ok {
		return nil, errors.New("the introspection names no query type")
	}
	c := &draftConfig{source: endpoint, environment: environment(opts.Options)}
	c.upstream = upstreamDraft{name: snake(strings.Split(u.Hostname(), ".")[0]), baseURL: u.Scheme + "://" + u.Host, baseNote: "the endpoint's origin"}
	if c.upstream.name == "" || c.upstream.name == "127" || c.upstream.name == "localhost" {
		c.upstream.name = "api"
	}
	if opts.BaseURL != "" {
		c.upstream.baseURL, c.upstream.baseNote = strings.TrimRight(opts.BaseURL, "/"), ""
	}
	if opts.CredentialEnv != "" {
		c.upstream.cred = &credDraft{env: opts.CredentialEnv, header: opts.CredentialHeader, scheme: opts.CredentialScheme}
	} else {
		c.upstream.credNote = "no credential was used for the introspection: none is configured"
	}
	want := map[string]bool{}
	for _, n := range opts.Resources {
		want[n] = true
	}
	fields := append([]gqlField(nil), query.Fields...)
	sort.Slice(fields, func(i, j int) bool { return fields[i].Name < fields[j].Name })
	for _, f := range fields {
		r := connectionResource(f, types, u.Path)
		if r == nil || (len(want) > 0 && !want[r.name] && !want[f.Name]) {
			continue
		}
		c.resources = append(c.resources, r)
	}
	if len(c.resources) == 0 {
		return nil, errors.New("the query type has no Relay connection (a field taking first and after whose type has pageInfo and nodes or edges): describe its lists by hand")
	}
	c.resources = distinctResources(c.resources)
	c.notes = append(c.notes, "Drafted from the endpoint's GraphQL introspection: each connection of the query type is a resource; its filters (condition arguments) are for you to declare as variables.")
	return c.render(), nil
}

func distinctResources(rs []*resourceDraft) []*resourceDraft {
	seen := map[string]int{}
	for _, r := range rs {
		if n := seen[r.name]; n > 0 {
			r.name = fmt.Sprintf("%s_%d", r.name, n+1)
		}
		seen[r.name]++
	}
	return rs
}

// connectionResource drafts a resource from a query field that is a
// connection, or returns nil.
func connectionResource(f gqlField, types map[string]gqlType, path string) *resourceDraft {
	connName, kind, list := f.Type.named()
	if kind != "OBJECT" || list {
		return nil
	}
	args := map[string]*gqlTypeRef{}
	for _, a := range f.Args {
		args[a.Name] = a.Type
	}
	if args["first"] == nil || args["after"] == nil {
		return nil
	}
	conn := types[connName]
	var nodeType string
	hasTotal, hasPageInfo, viaEdges := false, false, false
	for _, cf := range conn.Fields {
		switch cf.Name {
		case "pageInfo":
			hasPageInfo = true
		case "totalCount":
			hasTotal = true
		case "nodes":
			nodeType, _, _ = cf.Type.named()
		case "edges":
			if nodeType != "" {
				continue
			}
			edge, _, _ := cf.Type.named()
			for _, ef := range types[edge].Fields {
				if ef.Name == "node" {
					nodeType, _, _ = ef.Type.named()
					viaEdges = true
				}
			}
		}
	}
	if !hasPageInfo || nodeType == "" {
		return nil
	}
	r := &resourceDraft{name: snake(f.Name), path: path}
	if r.name == "" {
		r.name = f.Name
	}
	var selected []string
	for _, nf := range types[nodeType].Fields {
		name, k, isList := nf.Type.named()
		if isList || (k != "SCALAR" && k != "ENUM") {
			continue
		}
		selected = append(selected, nf.Name)
		fd := &fieldDraft{name: snake(nf.Name), typ: graphqlFieldType(name), nullable: nf.Type.Kind != "NON_NULL"}
		if fd.name != nf.Name {
			fd.path = nf.Name
		}
		r.fields = append(r.fields, fd)
	}
	r.fields = distinctNames(r.fields)
	items := "nodes { " + strings.Join(selected, " ") + " }"
	if viaEdges {
		items = "edges { node { " + strings.Join(selected, " ") + " } }"
	}
	total := ""
	if hasTotal {
		total = "totalCount "
	}
	r.graphql = fmt.Sprintf("query($first: Int!, $after: %s) { %s(first: $first, after: $after) { %spageInfo { hasNextPage endCursor } %s } }",
		strings.TrimSuffix(args["after"].String(), "!"), f.Name, total, items)
	r.pagination = [][2]string{{"dialect", "graphql"}, {"connection", quote(f.Name)}, {"page_size", "100"}}
	if !hasTotal {
		r.pagination = append(r.pagination, [2]string{"total", "none"})
	}
	r.pageNote = append(r.pageNote, "a Relay connection: hasNextPage and endCursor continue it; check that its default order is stable (orderBy)")
	r.idField, r.versionFld, r.versionNote = idAndVersion(r)
	r.filterNotes = []string{"arguments that filter (condition, filter, states…) go in the query as variables; declare each as a filter whose param is the variable"}
	return r
}

func graphqlFieldType(scalar string) string {
	switch scalar {
	case "Int", "BigInt":
		return "integer"
	case "Float", "BigFloat":
		return "number"
	case "Boolean":
		return "boolean"
	case "Datetime", "DateTime", "Timestamp":
		return "timestamp"
	}
	return "string"
}

// introspect posts the introspection query; a body over maxSampleBody is
// refused.
func introspect(ctx context.Context, u *url.URL, opts SampleOptions) (*gqlSchema, error) {
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	body, _ := json.Marshal(map[string]any{"query": introspection})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build the introspection request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if err := setCredential(req, opts); err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", redacted(u), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSampleBody+1))
	if err != nil || len(b) > maxSampleBody {
		return nil, fmt.Errorf("POST %s: the introspection answer could not be read within %d bytes", redacted(u), maxSampleBody)
	}
	var out struct {
		Data *struct {
			Schema *gqlSchema `json:"__schema"`
		} `json:"data"`
		Errors []struct{ Message string } `json:"errors"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Data == nil || out.Data.Schema == nil {
		msg := ""
		if len(out.Errors) > 0 {
			msg = ": the API said " + strings.TrimSpace(out.Errors[0].Message)
		}
		return nil, fmt.Errorf("POST %s answered %d without an introspection (is introspection turned off?)%s", redacted(u), resp.StatusCode, msg)
	}
	return out.Data.Schema, nil
}
