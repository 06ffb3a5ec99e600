// Package write builds an action's writes and reads their answers: the
// per-target and bulk requests (templates rendered, the condition and the
// idempotency key set) and what an answer says happened: accepted, a
// response contract broken, each target's bulk result, a GraphQL mutation
// refused or of unknown outcome, an effect the answer contradicts.
//
// It never sends, retries or journals a write itself: the commit engine in
// selection does, through the upstream client.
package write

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/read"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// CheckContract checks a 2xx write answer against the action's response
// contract; the violations say what broke.
func CheckContract(a *upstream.Action, resp *transport.Response) []contract.Violation {
	if a.Response == nil || len(bytes.TrimSpace(resp.Body)) == 0 {
		if a.Response != nil {
			return []contract.Violation{{Field: "body", Rule: "required", Decision: true}}
		}
		return nil
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return nil // CheckBody reports the body itself
	}
	item, _ := jsonvalue.Get(doc, a.Config.Response.Item)
	m, ok := item.(map[string]any)
	if !ok {
		return []contract.Violation{{Field: a.Config.Response.Item, Rule: "type", Decision: true}}
	}
	all := map[string]bool{}
	for f := range a.Config.Response.Fields {
		all[f] = true
	}
	vs, _ := a.Response.Check(m, all)
	return vs
}

// IdempotencyKey derives the per-target key from the operation and target:
// the same operation and target always send the same key.
func IdempotencyKey(operationID, targetID string) string {
	sum := sha256.Sum256([]byte(operationID + "\x00" + targetID))
	return "airlock-" + hex.EncodeToString(sum[:16])
}

// typedVersion returns a version in its declared field type.
func typedVersion(a *upstream.Action, v string) any {
	if v == "" {
		return nil
	}
	if fc, ok := a.Resource.Field(a.Resource.Config.VersionField); ok && (fc.Type == "integer" || fc.Type == "number") {
		return json.Number(v)
	}
	return v
}

// ErrNoVersion is returned for a conditional write whose target has no
// version: the condition cannot be expressed, so nothing is sent.
var ErrNoVersion = errors.New("the target has no version: the conditional write cannot be expressed")

// Request builds the per-target request. It is never retried by the
// client (the commit engine journals and retries attempts itself), except
// once after a 401 renewed the access token when a repeat cannot apply
// twice (Repeatable), and never follows a redirect.
func Request(a *upstream.Action, vars template.Vars, requestID string) (transport.Request, error) {
	rc := a.Config.Request
	// An id goes into the path as one segment; a GraphQL mutation or a
	// body-keyed write (etcd's txn) carries it in JSON instead.
	inPath := rc.GraphQL == "" && strings.Contains(rc.Path, "{{id}}")
	if err := read.CheckPathID(vars.ID); err != nil && (inPath || vars.ID == "") {
		return transport.Request{}, err
	}
	if (a.Config.Conditional == config.CondIfMatch || a.Config.Conditional == config.CondVersion) && vars.Version == "" {
		return transport.Request{}, ErrNoVersion
	}
	targetID := vars.ID
	vars.VersionValue = typedVersion(a, vars.Version)
	vars.IDValue = a.Resource.TypedID(vars.ID)
	vars = encodeDecoded(a.Resource, vars)
	path, query, err := vars.RenderURL(rc.Path)
	if err != nil {
		return transport.Request{}, err
	}
	req := transport.Request{Method: rc.Method, URL: a.Resource.Upstream.ResolveURL(nil, path, query), RequestID: requestID, Header: http.Header{}, NoRedirect: true}
	for k, t := range rc.Headers {
		v, err := vars.Render(t)
		if err != nil {
			return transport.Request{}, err
		}
		req.Header.Set(k, jsonvalue.String(v))
	}
	switch {
	case rc.GraphQL != "":
		variables, err := vars.Render(rc.Variables)
		if err != nil {
			return transport.Request{}, err
		}
		if variables == nil {
			variables = map[string]any{}
		}
		req.Body, _ = jsonvalue.Encode(map[string]any{"query": rc.GraphQL, "variables": variables})
	case rc.Body != nil:
		body, err := vars.Render(rc.Body)
		if err != nil {
			return transport.Request{}, err
		}
		if rc.Encoding == config.EncodingForm {
			req.Body = formBody(body)
			req.Header.Set("Content-Type", FormContentType)
			break
		}
		req.Body, _ = jsonvalue.Encode(body)
	}
	if a.Config.Conditional == config.CondIfMatch {
		req.Header.Set("If-Match", vars.Version)
	}
	if h := a.Config.IdempotencyHeader; h != "" {
		req.Header.Set(h, IdempotencyKey(vars.OperationID, targetID))
	}
	// The same request again cannot apply twice: the upstream tells it
	// apart by its key, or refuses it by its condition.
	req.Repeatable = a.Config.IdempotencyHeader != "" || a.Config.Conditional == config.CondIfMatch || a.Config.Conditional == config.CondVersion
	return req, nil
}

// BulkRequest builds one bulk request for the targets. each holds, in the
// order of vars.Targets, every target's own values for bulk.each (nil when
// the action declares none).
func BulkRequest(a *upstream.Action, vars template.Vars, each []template.Vars, requestID string) (transport.Request, error) {
	bc := a.Config.Bulk
	if bc.Each != nil {
		vars.Each = make([]any, 0, len(each))
		for _, tv := range each {
			if (a.Config.Conditional == config.CondIfMatch || a.Config.Conditional == config.CondVersion) && tv.Version == "" {
				return transport.Request{}, ErrNoVersion
			}
			tv.VersionValue = typedVersion(a, tv.Version)
			tv.IDValue = a.Resource.TypedID(tv.ID)
			tv = encodeDecoded(a.Resource, tv)
			o, err := tv.Render(bc.Each)
			if err != nil {
				return transport.Request{}, err
			}
			vars.Each = append(vars.Each, o)
		}
	}
	for _, t := range vars.Targets {
		v, _ := t["version"].(string)
		if a.Config.Conditional == config.CondVersion && v == "" {
			return transport.Request{}, ErrNoVersion
		}
		if v != "" {
			t["version"] = typedVersion(a, v)
		}
	}
	path, query, err := vars.RenderURL(bc.Path)
	if err != nil {
		return transport.Request{}, err
	}
	req := transport.Request{Method: bc.Method, URL: a.Resource.Upstream.ResolveURL(nil, path, query), RequestID: requestID, Header: http.Header{}, NoRedirect: true}
	body, err := vars.Render(bc.Body)
	if err != nil {
		return transport.Request{}, err
	}
	req.Body, _ = jsonvalue.Encode(body)
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
	// BulkFailed is a refusal: a 4xx status the action does not list.
	BulkFailed
	// BulkUnclear is a status the action does not list that is not a
	// refusal (a 5xx, a word): the target may have changed.
	BulkUnclear
)

// BulkResult is one target's result in a bulk response: what its status
// says, and the record it holds (result_item; nil when none), which alone
// can prove an applied status (JudgeResult).
type BulkResult struct {
	Outcome BulkOutcome
	Item    any
}

// ParseBulk reads per-target results from a bulk response; ids are the
// targets in the order they were sent (results matched by position answer
// them in that order, and must be as many). Targets missing from the
// response are absent from the map (their outcome is unknown), and so are
// targets two results answer.
func ParseBulk(a *upstream.Action, resp *transport.Response, ids []string) (map[string]BulkResult, error) {
	bc := a.Config.Bulk
	// A bulk body may say "errors": true when some targets failed; the
	// per-target results tell which.
	doc, err := transport.DecodeJSONBody(resp, false)
	if err != nil {
		return nil, err
	}
	raw, _ := jsonvalue.Get(doc, bc.ResultsPath())
	list, ok := raw.([]any)
	if !ok {
		return nil, transport.BadResponse("bulk results are not an array at %q", bc.Results)
	}
	byPosition := bc.ResultMatch == config.ResultByPosition
	if byPosition && len(list) != len(ids) {
		// A result more or less than the targets: no result can be said
		// to answer a given target.
		return nil, transport.BadResponse("the bulk response holds %d results for %d targets", len(list), len(ids))
	}
	out := map[string]BulkResult{}
	answered := map[string]int{}
	for i, e := range list {
		var id string
		if byPosition {
			id = ids[i]
		} else {
			var ok bool
			if id, ok = jsonvalue.GetID(e, bc.ResultID); !ok {
				return nil, transport.BadResponse("a bulk result has no id")
			}
		}
		st, _ := jsonvalue.Get(e, bc.ResultStatus)
		s := jsonvalue.String(st)
		var res BulkResult
		switch code, err := strconv.Atoi(s); {
		case slices.Contains(bc.Applied, s):
			res.Outcome = BulkApplied
			if bc.ResultItem != "" {
				res.Item, _ = jsonvalue.Get(e, bc.ResultItem)
			}
		case slices.Contains(bc.Conflict, s):
			res.Outcome = BulkConflict
		case slices.Contains(bc.NotFound, s):
			res.Outcome = BulkNotFound
		case err == nil && code >= 400 && code < 500:
			res.Outcome = BulkFailed
		default:
			res.Outcome = BulkUnclear
		}
		out[id] = res
		answered[id]++
	}
	for id, n := range answered {
		if n > 1 {
			// Two results for one target: neither is believed.
			delete(out, id)
		}
	}
	return out, nil
}

// GraphQLVerdict reads the outcome of a GraphQL mutation's 2xx answer:
// executed (no errors, and the declared user errors list empty), refused
// (errors before execution, which leave out data altogether, or a
// non-empty user errors list: the API said no), or unknown (errors during
// execution: the mutation may have applied in part). msg quotes what the
// upstream said. For an action that is not a GraphQL mutation it is
// always executed.
func GraphQLVerdict(a *upstream.Action, resp *transport.Response) (v GraphQLOutcome, msg string) {
	rc := a.Config.Request
	if rc == nil || rc.GraphQL == "" || len(bytes.TrimSpace(resp.Body)) == 0 {
		return GraphQLExecuted, ""
	}
	doc, err := transport.DecodeJSONBody(resp, false)
	if err != nil {
		return GraphQLExecuted, "" // CheckBody reports the body
	}
	m, _ := doc.(map[string]any)
	msg = dialect.GraphQLMessages(doc)
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
			return GraphQLRefused, envelope.QuoteUpstream(transport.MessageOf(list))
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

// CheckBody accepts a 2xx write response: an empty body, or a JSON body
// that is not an error object.
func CheckBody(resp *transport.Response) error {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	_, err := transport.DecodeJSONBody(resp, true)
	return err
}
