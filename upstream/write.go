package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// CheckResponse checks a 2xx write answer against the action's response
// contract; the violations say what broke.
func (a *Action) CheckResponse(resp *Response) []Violation {
	if a.Response == nil || len(bytes.TrimSpace(resp.Body)) == 0 {
		if a.Response != nil {
			return []Violation{{Field: "body", Rule: "required", Decision: true}}
		}
		return nil
	}
	doc, err := decodeJSONBody(resp, true)
	if err != nil {
		return nil // CheckWriteResponse reports the body itself
	}
	item, _ := jsonvalue.Get(doc, a.Config.Response.Item)
	m, ok := item.(map[string]any)
	if !ok {
		return []Violation{{Field: a.Config.Response.Item, Rule: "type", Decision: true}}
	}
	all := map[string]bool{}
	for f := range a.Config.Response.Fields {
		all[f] = true
	}
	vs, _ := a.Response.Check(m, all)
	return vs
}

// ReadRequest builds the request that reads one item by id: a GET of
// get.path, or a POST of get.graphql with the id as $id.
func (r *Resource) ReadRequest(id, requestID string) (Request, error) {
	g := r.Config.Get
	if g == nil {
		return Request{}, fmt.Errorf("resource %q has no get endpoint", r.Name)
	}
	if g.GraphQL != "" {
		if id == "" {
			return Request{}, fmt.Errorf("%w: it is empty", ErrUnsafeID)
		}
		body, _ := jsonMarshal(map[string]any{"query": g.GraphQL, "variables": map[string]any{"id": r.TypedID(id)}})
		return Request{Method: http.MethodPost, URL: r.Upstream.ResolveURL(nil, g.Path, nil), Body: body, RequestID: requestID, Idempotent: true}, nil
	}
	if err := CheckPathID(id); err != nil {
		return Request{}, err
	}
	u := r.Upstream.ResolveURL(nil, strings.ReplaceAll(g.Path, "{{id}}", url.PathEscape(id)), nil)
	return Request{Method: http.MethodGet, URL: u, RequestID: requestID, Idempotent: true}, nil
}

// TypedID is an id in its declared field type: a number for an integer or
// number id field (GraphQL's Int!, a JSON body), else the string.
func (r *Resource) TypedID(id string) any {
	if fc, ok := r.Field(r.Config.IDField); ok && (fc.Type == "integer" || fc.Type == "number") {
		if _, err := json.Number(id).Float64(); err == nil {
			return json.Number(id)
		}
	}
	return id
}

// Read fetches one item through the resource's get endpoint. found is false
// on 404 (and, for a GraphQL get, on a null item without errors). Errors
// are *HTTPError or bad-response errors.
func (r *Resource) Read(ctx context.Context, id, requestID string) (doc map[string]any, version string, found bool, err error) {
	g := r.Config.Get
	req, err := r.ReadRequest(id, requestID)
	if err != nil {
		return nil, "", false, err
	}
	resp, err := r.Upstream.Do(ctx, req)
	if err != nil {
		if he, ok := err.(*HTTPError); ok && he.Kind == FailStatus && he.Status == http.StatusNotFound {
			return nil, "", false, nil
		}
		return nil, "", false, err
	}
	body, err := decodeJSONBody(resp, true)
	if err != nil {
		return nil, "", false, err
	}
	item, _ := jsonvalue.Get(body, g.Item)
	if g.GraphQL != "" && item == nil {
		if msgs := graphqlMessages(body); msgs != "" {
			return nil, "", false, &BodyError{Kind: BodyGraphQLErrors, Detail: "the GraphQL answer carries errors and no item", Message: msgs}
		}
		return nil, "", false, nil
	}
	m, ok := item.(map[string]any)
	if !ok {
		return nil, "", false, badResponse("the item is not a JSON object")
	}
	if _, ok := jsonvalue.GetID(m, r.FieldPath(r.Config.IDField)); !ok {
		// An envelope ({data: {...}}) read as the item: without its id it
		// would look like a record that moved, and the target be skipped
		// for a reason that is not true.
		return nil, "", false, badResponse("the answer to GET by id holds no %s at get.item %q: set get.item to where the item is", r.Config.IDField, displayPath(g.Item))
	}
	if r.Config.VersionField != "" {
		version, _ = jsonvalue.GetID(m, r.FieldPath(r.Config.VersionField))
	}
	if version == "" {
		version = resp.Header.Get("ETag")
	}
	s := &Scan{r: r, normalized: map[string]bool{}}
	s.normalizeLocked(m)
	return m, version, true, nil
}

// IdempotencyKey derives the per-target key from the operation and target:
// the same operation and target always send the same key.
func IdempotencyKey(operationID, targetID string) string {
	sum := sha256.Sum256([]byte(operationID + "\x00" + targetID))
	return "airlock-" + hex.EncodeToString(sum[:16])
}

// typedVersion returns a version in its declared field type.
func (a *Action) typedVersion(v string) any {
	if v == "" {
		return nil
	}
	if fc, ok := a.Resource.Field(a.Resource.Config.VersionField); ok && (fc.Type == "integer" || fc.Type == "number") {
		return json.Number(v)
	}
	return v
}

// CheckPathID refuses an id that cannot be written into a URL path as one
// segment: empty, a dot segment (which a server resolves to another path),
// or holding control characters.
func CheckPathID(id string) error {
	switch id {
	case "":
		return fmt.Errorf("%w: it is empty", ErrUnsafeID)
	case ".", "..":
		return fmt.Errorf("%w: %q is a dot segment, which would address another path", ErrUnsafeID, id)
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: it holds a control character", ErrUnsafeID)
		}
	}
	return nil
}

// ErrUnsafeID is wrapped by CheckPathID's errors.
var ErrUnsafeID = errors.New("the id cannot be one URL path segment")

// ErrNoVersion is returned for a conditional write whose target has no
// version: the condition cannot be expressed, so nothing is sent.
var ErrNoVersion = errors.New("the target has no version: the conditional write cannot be expressed")

// WriteRequest builds the per-target request. It is never retried by the
// client (the commit engine journals and retries attempts itself), except
// once after a 401 renewed the access token when a repeat cannot apply
// twice (Repeatable), and never follows a redirect.
func (a *Action) WriteRequest(vars config.TemplateVars, requestID string) (Request, error) {
	rc := a.Config.Request
	if err := CheckPathID(vars.ID); err != nil && (rc.GraphQL == "" || vars.ID == "") {
		return Request{}, err
	}
	if (a.Config.Conditional == config.CondIfMatch || a.Config.Conditional == config.CondVersion) && vars.Version == "" {
		return Request{}, ErrNoVersion
	}
	vars.VersionValue = a.typedVersion(vars.Version)
	vars.IDValue = a.Resource.TypedID(vars.ID)
	path, err := vars.RenderPath(rc.Path)
	if err != nil {
		return Request{}, err
	}
	req := Request{Method: rc.Method, URL: a.Resource.Upstream.ResolveURL(nil, path, nil), RequestID: requestID, Header: http.Header{}, NoRedirect: true}
	for k, t := range rc.Headers {
		v, err := vars.Render(t)
		if err != nil {
			return Request{}, err
		}
		req.Header.Set(k, jsonvalue.String(v))
	}
	switch {
	case rc.GraphQL != "":
		variables, err := vars.Render(rc.Variables)
		if err != nil {
			return Request{}, err
		}
		if variables == nil {
			variables = map[string]any{}
		}
		req.Body, _ = jsonMarshal(map[string]any{"query": rc.GraphQL, "variables": variables})
	case rc.Body != nil:
		body, err := vars.Render(rc.Body)
		if err != nil {
			return Request{}, err
		}
		req.Body, _ = jsonMarshal(body)
	}
	if a.Config.Conditional == config.CondIfMatch {
		req.Header.Set("If-Match", vars.Version)
	}
	if h := a.Config.IdempotencyHeader; h != "" {
		req.Header.Set(h, IdempotencyKey(vars.OperationID, vars.ID))
	}
	// The same request again cannot apply twice: the upstream tells it
	// apart by its key, or refuses it by its condition.
	req.Repeatable = a.Config.IdempotencyHeader != "" || a.Config.Conditional == config.CondIfMatch || a.Config.Conditional == config.CondVersion
	return req, nil
}

// BulkRequest builds one bulk request for the targets.
func (a *Action) BulkRequest(vars config.TemplateVars, requestID string) (Request, error) {
	bc := a.Config.Bulk
	for _, t := range vars.Targets {
		v, _ := t["version"].(string)
		if a.Config.Conditional == config.CondVersion && v == "" {
			return Request{}, ErrNoVersion
		}
		if v != "" {
			t["version"] = a.typedVersion(v)
		}
	}
	path, err := vars.RenderPath(bc.Path)
	if err != nil {
		return Request{}, err
	}
	req := Request{Method: bc.Method, URL: a.Resource.Upstream.ResolveURL(nil, path, nil), RequestID: requestID, Header: http.Header{}, NoRedirect: true}
	body, err := vars.Render(bc.Body)
	if err != nil {
		return Request{}, err
	}
	req.Body, _ = jsonMarshal(body)
	if h := a.Config.IdempotencyHeader; h != "" {
		ids := make([]string, len(vars.Targets))
		for i, t := range vars.Targets {
			ids[i] = jsonvalue.String(t["id"])
		}
		req.Header.Set(h, IdempotencyKey(vars.OperationID, strings.Join(ids, ",")))
	}
	req.Repeatable = a.Config.IdempotencyHeader != "" || a.Config.Conditional == config.CondVersion
	return req, nil
}

// BulkOutcome is one target's result in a bulk response.
type BulkOutcome int

// Bulk outcomes.
const (
	BulkApplied BulkOutcome = iota + 1
	BulkConflict
	BulkNotFound
	BulkFailed
)

// ParseBulk reads per-target outcomes from a bulk response. Targets missing
// from the response are absent from the map (their outcome is unknown).
func (a *Action) ParseBulk(resp *Response) (map[string]BulkOutcome, error) {
	bc := a.Config.Bulk
	// A bulk body may say "errors": true when some targets failed; the
	// per-target results tell which.
	doc, err := decodeJSONBody(resp, false)
	if err != nil {
		return nil, err
	}
	raw, _ := jsonvalue.Get(doc, bc.Results)
	list, ok := raw.([]any)
	if !ok {
		return nil, badResponse("bulk results are not an array at %q", bc.Results)
	}
	out := map[string]BulkOutcome{}
	for _, e := range list {
		id, ok := jsonvalue.GetID(e, bc.ResultID)
		if !ok {
			return nil, badResponse("a bulk result has no id")
		}
		st, _ := jsonvalue.Get(e, bc.ResultStatus)
		s := jsonvalue.String(st)
		switch {
		case contains(bc.Applied, s):
			out[id] = BulkApplied
		case contains(bc.Conflict, s):
			out[id] = BulkConflict
		case contains(bc.NotFound, s):
			out[id] = BulkNotFound
		default:
			out[id] = BulkFailed
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// GraphQLVerdict reads the outcome of a GraphQL mutation's 2xx answer:
// executed (no errors, and the declared user errors list empty), refused
// (errors before execution, which leave out data altogether, or a
// non-empty user errors list: the API said no), or unknown (errors during
// execution: the mutation may have applied in part). msg quotes what the
// upstream said. For an action that is not a GraphQL mutation it is
// always executed.
func (a *Action) GraphQLVerdict(resp *Response) (v GraphQLOutcome, msg string) {
	rc := a.Config.Request
	if rc == nil || rc.GraphQL == "" || len(bytes.TrimSpace(resp.Body)) == 0 {
		return GraphQLExecuted, ""
	}
	doc, err := decodeJSONBody(resp, false)
	if err != nil {
		return GraphQLExecuted, "" // CheckWriteResponse reports the body
	}
	m, _ := doc.(map[string]any)
	msg = graphqlMessages(doc)
	_, hasData := m["data"]
	switch {
	case msg != "" && !hasData:
		return GraphQLRefused, msg
	case msg != "":
		return GraphQLUnknown, msg
	}
	if rc.UserErrors != "" {
		ue, _ := jsonvalue.Get(doc, rc.UserErrors)
		if list, ok := ue.([]any); ok && len(list) > 0 {
			return GraphQLRefused, envelope.QuoteUpstream(messageOf(list))
		}
	}
	return GraphQLExecuted, ""
}

// GraphQLOutcome is what a GraphQL mutation's answer says happened.
type GraphQLOutcome int

// GraphQL outcomes.
const (
	GraphQLExecuted GraphQLOutcome = iota
	GraphQLRefused
	GraphQLUnknown
)

// CheckWriteResponse accepts a 2xx write response: an empty body, or a
// JSON body that is not an error object.
func CheckWriteResponse(resp *Response) error {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	_, err := decodeJSONBody(resp, true)
	return err
}

// ContradictsEffect reports whether a 2xx write answer shows the target
// without the action's effect: the answer is the item (at response.item,
// else the body) and holds an effect field with another value. Such an
// answer claims success while showing none; only a re-read can tell. An
// answer that shows no effect field contradicts nothing.
func (a *Action) ContradictsEffect(resp *Response, after map[string]any) bool {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return false
	}
	doc, err := decodeJSONBody(resp, false)
	if err != nil {
		return false
	}
	path := ""
	if a.Config.Response != nil {
		path = a.Config.Response.Item
	}
	item, ok := jsonvalue.Get(doc, path)
	if !ok {
		return false
	}
	for _, e := range a.Config.Effect {
		v, present := jsonvalue.Get(item, a.Resource.FieldPath(e.Field))
		if present && !e.Applied(v, after[e.Field]) {
			return true
		}
	}
	return false
}
