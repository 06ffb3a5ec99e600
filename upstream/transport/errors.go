package transport

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// BodyKind classifies a 2xx response airlock could not accept.
type BodyKind int

// Body failure kinds.
const (
	BodyMalformed      BodyKind = iota + 1 // not JSON, or not the configured shape
	BodyContentType                        // a content type other than JSON
	BodyErrorInSuccess                     // a 2xx whose body is an error object
	BodyGraphQLErrors                      // a GraphQL answer with errors and no data
)

// BodyError is a response body airlock could not accept. Detail is built
// from configuration and fixed text only, never from the body; Message
// quotes the upstream's own words, when it gave some.
type BodyError struct {
	Kind    BodyKind
	Detail  string
	Message string
}

func (e *BodyError) Error() string {
	switch e.Kind {
	case BodyContentType:
		return "response content type is not JSON: " + e.Detail
	case BodyErrorInSuccess:
		return "response is an error behind a success status: " + e.Detail
	case BodyGraphQLErrors:
		return "graphql errors: " + e.Detail
	}
	return "response does not match the configured shape: " + e.Detail
}

// BadResponse is an error for an answer that does not have the configured
// shape (IsBadResponse reports it).
func BadResponse(format string, args ...any) error {
	return &BodyError{Kind: BodyMalformed, Detail: fmt.Sprintf(format, args...)}
}

// IsBadResponse reports whether err is a body airlock could not accept.
func IsBadResponse(err error) bool {
	var be *BodyError
	return errors.As(err, &be)
}

// UnsendableError is a request airlock refused to build, so nothing was
// sent: the arguments cannot be asked of the upstream as configured (a
// DynamoDB Query without its partition). Errors name the arguments.
type UnsendableError struct {
	Errors []envelope.FieldError
}

func (e *UnsendableError) Error() string {
	names := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		names[i] = fe.Field
	}
	return "request not sent: " + strings.Join(names, ", ") + " cannot be asked of the upstream"
}

// errorInSuccess detects a 2xx body that is really an error: Slack's
// {"ok": false}, {"error": …}, or {"errors": true} (Elasticsearch).
func errorInSuccess(doc any) (string, bool) {
	m, ok := doc.(map[string]any)
	if !ok {
		return "", false
	}
	if v, ok := m["ok"].(bool); ok && !v {
		return `the body says "ok": false`, true
	}
	if v, ok := m["errors"].(bool); ok && v {
		return `the body says "errors": true`, true
	}
	if v, ok := m["error"]; ok && v != nil && v != false && v != "" {
		return `the body carries an "error" member`, true
	}
	return "", false
}

// ProblemFor maps any failed upstream exchange to its problem: one stable
// code per failure mode, retryable and retry_after_seconds set, field errors
// translated (see fieldErrors), nothing of the body echoed.
func ProblemFor(err error, mapField func(string) string) *envelope.Problem {
	var be *BodyError
	if errors.As(err, &be) {
		switch be.Kind {
		case BodyContentType:
			return envelope.NewProblem(envelope.ProblemUpstreamContentType, "The upstream answered with a content type other than JSON ("+be.Detail+"); it may be serving a login or maintenance page.")
		case BodyErrorInSuccess:
			p := envelope.NewProblem(envelope.ProblemUpstreamErrorInSuccess, "The upstream answered with a success status but its body is an error object ("+be.Detail+").")
			p.UpstreamMessage = be.Message
			return p
		case BodyGraphQLErrors:
			p := envelope.NewProblem(envelope.ProblemUpstreamGraphQL, "")
			p.UpstreamMessage = be.Message
			return p
		}
		return envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The upstream's response did not match the configured shape: "+be.Detail+".")
	}
	var ue *UnsendableError
	if errors.As(err, &ue) && len(ue.Errors) > 0 {
		return envelope.InvalidArguments(ue.Errors)
	}
	var te *TokenError
	if errors.As(err, &te) {
		return tokenProblem(te)
	}
	var he *HTTPError
	if !errors.As(err, &he) {
		return envelope.NewProblem(envelope.ProblemInternal, "")
	}
	switch he.Kind {
	case FailTimeout, FailCanceled:
		return envelope.NewProblem(envelope.ProblemUpstreamTimeout, "")
	case FailConnection:
		return envelope.NewProblem(envelope.ProblemUpstreamConnection, "")
	case FailTooLarge:
		return envelope.NewProblem(envelope.ProblemUpstreamTooLarge, "")
	}
	st := he.Status
	var p *envelope.Problem
	switch {
	case he.RateLimited():
		// A 429, or an answer the upstream declares a rate limit (a 400
		// naming its throttling): retryable after the wait airlock keeps.
		p = envelope.NewProblem(envelope.ProblemUpstreamRateLimited, "")
	case he.Conflict && st != http.StatusConflict && st != http.StatusPreconditionFailed:
		// An answer the upstream declares a failed condition (conflicts).
		p = envelope.NewProblem(envelope.ProblemUpstreamConflict, fmt.Sprintf("The upstream answered %d, declared a conflict: the target changed since it was read.", st))
	case he.CredentialRefused() && st != http.StatusUnauthorized:
		// An answer the upstream declares a refused credential
		// (unauthorized): a wrong key or secret, never a rejected value.
		p = envelope.NewProblem(envelope.ProblemUpstreamAuth, fmt.Sprintf("The upstream answered %d, declared an authentication failure: it refused the credential.", st))
	case st == http.StatusBadRequest || st == http.StatusUnprocessableEntity:
		errs, undeclared := fieldErrors(he.Body, mapField)
		detail := fmt.Sprintf("The upstream answered %d: it rejected values airlock sent.", st)
		if undeclared > 0 {
			detail += fmt.Sprintf(" It named %d field(s) the configuration does not declare (%s).", undeclared, UndeclaredField)
		}
		p = envelope.NewProblem(envelope.ProblemUpstreamRejected, detail)
		p.SetErrors(errs)
	case he.CredentialRefused():
		p = envelope.NewProblem(envelope.ProblemUpstreamAuth, unauthorizedDetail(he))
	case st == http.StatusForbidden:
		p = envelope.NewProblem(envelope.ProblemUpstreamForbidden, "")
	case st == http.StatusNotFound:
		p = envelope.NewProblem(envelope.ProblemUpstreamNotFound, "")
	case st == http.StatusConflict || st == http.StatusPreconditionFailed:
		p = envelope.NewProblem(envelope.ProblemUpstreamConflict, fmt.Sprintf("The upstream answered %d: the target changed since it was read.", st))
	case st == http.StatusServiceUnavailable:
		p = envelope.NewProblem(envelope.ProblemUpstreamUnavailable, "")
	case st >= 500:
		p = envelope.NewProblem(envelope.ProblemUpstreamServerError, fmt.Sprintf("The upstream answered %d.", st))
	default:
		p = envelope.NewProblem(envelope.ProblemUpstreamRejected, fmt.Sprintf("The upstream answered %d, a status airlock does not expect here.", st))
	}
	if he.RetryAfter > 0 {
		p.SetRetryAfter(WaitSeconds(he.RetryAfter))
	}
	if !he.Local {
		p.UpstreamMessage = UpstreamMessage(he.Header, he.Body)
	}
	return p
}

// unauthorizedDetail says what a 401 means when the credential is an
// OAuth access token ("" for the registry's meaning).
func unauthorizedDetail(he *HTTPError) string {
	switch {
	case he.Renewed:
		return "The upstream answered 401 to an access token airlock had just obtained from the authorization server, after refusing the one before: the authorization server issues tokens this API does not accept for this client (a revoked grant, or the wrong audience, resource or scopes)."
	case he.NotRepeated:
		return "The upstream answered 401: it no longer accepts the access token this write was sent with. airlock obtains a new one for the next request; this write was not sent again, because repeating it could apply twice."
	}
	return ""
}

// UndeclaredField is what errors[] names a field an upstream rejected when
// the configuration declares no such field: the upstream's own names, which
// may carry anything (an echoed credential), never reach the agent.
const UndeclaredField = "upstream.undeclared_field"

// fieldErrors translates an upstream's field errors into errors[]: RFC 9457
// (errors[] or invalid-params[]), Google's google.rpc.Status BadRequest
// fieldViolations, Kubernetes Status causes, and plain {"errors": [{field}]}
// bodies are understood. Only names airlock knows travel: mapField maps an
// upstream's field name to the tool argument that sent it or to a declared
// field (see Resource.FieldName and Action.FieldName); every other name
// becomes UndeclaredField, listed once. The upstream's messages never
// travel. It also counts the distinct undeclared names.
func fieldErrors(body []byte, mapField func(string) string) ([]envelope.FieldError, int) {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		// Not one strict JSON document: no field is named.
		return nil, 0
	}
	var fields []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" {
			fields = append(fields, s)
		}
	}
	walkList := func(list any, keys ...string) {
		arr, _ := list.([]any)
		for _, e := range arr {
			m, _ := e.(map[string]any)
			for _, k := range keys {
				if v, ok := m[k]; ok {
					add(v)
					break
				}
			}
		}
	}
	m, _ := doc.(map[string]any)
	walkList(m["errors"], "field", "pointer", "name", "param")
	walkList(m["invalid-params"], "name")
	walkList(m["invalid_params"], "name")
	if d, ok := m["details"].(map[string]any); ok { // Kubernetes Status
		walkList(d["causes"], "field")
	}
	if e, ok := m["error"].(map[string]any); ok { // Google and plain {error: {...}}
		add(e["field"])
		add(e["param"])
		details, _ := e["details"].([]any)
		for _, d := range details {
			dm, _ := d.(map[string]any)
			walkList(dm["fieldViolations"], "field")
		}
	}
	seen := map[string]bool{}
	undeclared := map[string]bool{}
	var out []envelope.FieldError
	for _, f := range fields {
		f = strings.TrimPrefix(strings.ReplaceAll(strings.TrimPrefix(f, "/"), "/", "."), "body.")
		name := ""
		if mapField != nil {
			name = mapField(f)
		}
		if name == "" {
			undeclared[f] = true
			name = UndeclaredField
		}
		name = envelope.SafeName(name)
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, envelope.NewFieldError(name, envelope.FieldUpstreamRejected, nil))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out, len(undeclared)
}

// UpstreamMessage extracts what an upstream's error body says in its own
// words, quoted for upstream_message (see envelope.QuoteUpstream); "" when
// the body holds no message airlock can find. It reads the shapes MessageOf
// reads, and a plain-text body. An HTML page is no message.
func UpstreamMessage(header http.Header, body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		ct := ""
		if header != nil {
			ct = strings.ToLower(header.Get("Content-Type"))
		}
		if strings.HasPrefix(ct, "text/plain") || (ct == "" && !bytes.HasPrefix(body, []byte("<"))) {
			return envelope.QuoteUpstream(string(body))
		}
		return ""
	}
	return envelope.QuoteUpstream(MessageOf(doc))
}

// MessageOf finds the message in a decoded error body, in the shapes real
// APIs send:
//   - RFC 9457's detail, else its title;
//   - an error's name beside its explanation, as "name: explanation":
//     CouchDB's {"error": "conflict", "reason": "Document update
//     conflict."}, OAuth's error and error_description, AWS's __type
//     ("com.amazon.coral.service#UnknownOperationException", named by
//     the part after #) with message or Message; a name alone when it
//     has no explanation (Slack's {"ok": false, "error": "…"});
//   - a nested error object (Google's error.message, MediaWiki's
//     error.info, Elasticsearch's error.reason);
//   - what failed, after the summary: GitHub's errors[].message beside
//     its message, GraphQL's errors[].message, Jira's errorMessages and
//     its errors map, Rails' {"errors": {"name": ["can't be blank"]}},
//     GitLab's {"message": {"title": ["…"]}}, Redmine's {"errors":
//     ["Subject cannot be blank"]};
//   - Django REST Framework's {"field": ["message", …]}.
//
// Lists are read to their third element and fields to their third:
// envelope.QuoteUpstream bounds the rest.
func MessageOf(doc any) string {
	switch d := doc.(type) {
	case string:
		return strings.TrimSpace(d)
	case []any:
		var parts []string
		for _, e := range d[:min(len(d), 3)] {
			if s := MessageOf(e); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		if e, ok := d["error"].(map[string]any); ok {
			if s := MessageOf(e); s != "" {
				return s
			}
		}
		s := ownWords(d)
		// What failed: a field map says it field by field (Rails, Jira's
		// errors, GitLab's message), a list item by item.
		var details []string
		for _, k := range []string{"errorMessages", "non_field_errors", "errors", "message"} {
			t := MessageOf(d[k])
			if m, ok := d[k].(map[string]any); ok {
				if f := fieldMessages(m, true); f != "" {
					t = f
				}
			}
			if t != "" && !strings.Contains(s, t) && !slices.Contains(details, t) {
				details = append(details, t)
			}
		}
		switch detail := strings.Join(details, "; "); {
		case s == "":
			s = detail
		case detail != "":
			s += ": " + detail
		}
		if s != "" {
			return s
		}
		return fieldMessages(d, false)
	}
	return ""
}

// ownWords is what an error object says of itself: its explanation, named
// by the error it explains when the object names one ("name:
// explanation"), else a summary.
func ownWords(d map[string]any) string {
	str := func(v any) string {
		s, _ := v.(string)
		return strings.TrimSpace(s)
	}
	first := func(keys ...string) string {
		for _, k := range keys {
			if s := str(d[k]); s != "" {
				return s
			}
		}
		return ""
	}
	// message before reason: Kubernetes' reason is a name (NotFound)
	// beside its message; CouchDB's and Elasticsearch's is the
	// explanation.
	words := first("error_description", "message", "Message", "detail", "reason")
	name := str(d["error"])
	if t := str(d["__type"]); name == "" && t != "" {
		// AWS: "aws.protocol#Name:http://internal…" is named Name.
		t, _, _ = strings.Cut(t, ":")
		if _, after, ok := strings.Cut(t, "#"); ok {
			t = after
		}
		name = t
	}
	switch {
	case name != "" && words != "" && name != words:
		return name + ": " + words
	case words != "":
		return words
	case name != "":
		return name
	}
	// info: MediaWiki's {"error": {"code", "info"}}.
	return first("title", "msg", "description", "info")
}

// fieldMessages reads a map of fields to their messages, "field: message,
// message; …" in the fields' order: each field's list of messages (Django
// REST Framework, Rails), or, where bare, its one message (Jira's errors).
func fieldMessages(m map[string]any, bare bool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var msgs []string
		switch v := m[k].(type) {
		case []any:
			for _, e := range v[:min(len(v), 3)] {
				if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
					msgs = append(msgs, strings.TrimSpace(s))
				}
			}
		case string:
			if bare && strings.TrimSpace(v) != "" {
				msgs = append(msgs, strings.TrimSpace(v))
			}
		}
		if len(msgs) > 0 {
			parts = append(parts, k+": "+strings.Join(msgs, ", "))
		}
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, "; ")
}
