package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/envelope"
)

// validateAction checks one action, part by part; every error is
// reported, none stops the others. The parts that read the resource are
// skipped when it is not declared (that error is reported once).
func (c *Config) validateAction(l *errList, name string, a *ActionConfig) {
	p := []string{"actions", name}
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	r, ok := c.Resources[a.Resource]
	if a.Resource == "" {
		l.add("required", at("resource")...)
	} else if !ok || r == nil {
		l.add(fmt.Sprintf("no resource named %q", a.Resource), at("resource")...)
	}
	if !ok {
		r = nil
	}
	if (a.Request == nil) == (a.Bulk == nil) {
		l.add("set exactly one of request or bulk", at()...)
	}
	if a.Request != nil {
		validateWriteRequest(l, a.Request, at)
		validateRequestHeaders(l, a, at)
	}
	if a.Bulk != nil {
		validateBulk(l, a.Bulk, at)
	}
	validateConditional(l, a, r, at)
	if rq := a.Request; rq != nil && (template.WholeRecord(rq.Body) || template.WholeRecord(rq.Variables)) && r != nil && r.Get == nil {
		l.add("{{after}} sends the whole record as read right before the write: it needs the resource's get endpoint", at("request", "body")...)
	}
	if b := a.Bulk; b != nil && (template.WholeRecord(b.Body) || template.WholeRecord(b.Each)) {
		l.add("{{after}} (the whole record) is sent only by a per-target request, which reads it right before its write", at("bulk")...)
	}
	switch a.Verify {
	case "", VerifyAnswer:
	case VerifyReread:
		if r != nil && r.Get == nil {
			l.add("reread needs the resource's get endpoint", at("verify")...)
		}
	default:
		l.add("use answer or reread", at("verify")...)
	}
	validateEffect(l, a, r, at)
	if a.Params != nil {
		b, _ := json.Marshal(strictyaml.JSONValue(a.Params))
		if _, err := envelope.CompileSchema("params", b); err != nil {
			l.add("is not a valid JSON Schema", at("params")...)
		}
	}
	if a.MaxAttempts < 0 || a.MaxAttempts > 10 {
		l.add("must be between 1 and 10", at("max_attempts")...)
	}
	if rc := a.Reconcile; rc.Rereads < 0 || rc.Rereads > 50 || rc.Backoff < 0 || rc.MaxBackoff < 0 {
		l.add("rereads is between 1 and 50, backoff and max_backoff positive", at("reconcile")...)
	}
	if r != nil {
		c.validateTemplates(l, name, a, r, at)
	}
	if a.MaxTargets < 0 || a.Concurrency < 0 || a.Concurrency > 64 {
		l.add("max_targets and concurrency must be positive (concurrency at most 64)", at()...)
	}
	if a.Stop.FailureRatio < 0 || a.Stop.FailureRatio > 1 || a.Stop.MinAttempts < 0 {
		l.add("failure_ratio is between 0 and 1, min_attempts positive", at("stop")...)
	}
	if rc := a.Response; rc != nil {
		validateResponseContract(l, rc, at)
	}
	if a.Compensation != "" {
		other, ok := c.Actions[a.Compensation]
		if !ok || other == nil {
			l.add(fmt.Sprintf("no action named %q", a.Compensation), at("compensation")...)
		} else if other.Resource != a.Resource {
			l.add("the compensating action must act on the same resource", at("compensation")...)
		}
	}
	validatePrincipals(l, a.Principals, at("principals"))
	if ap := a.Approval; ap != nil {
		validateApproval(l, ap, r, at)
	}
}

// validateWriteRequest checks the per-target request: a write method, and
// a path that names the target, or a GraphQL mutation whose variables do.
func validateWriteRequest(l *errList, rq *WriteRequestConfig, at func(k ...string) []string) {
	if !writeMethod(rq.Method) && !(rq.GraphQL != "" && rq.Method == "") {
		l.add("must be POST, PUT, PATCH or DELETE", at("request", "method")...)
	}
	switch {
	case rq.GraphQL != "":
		if !strings.HasPrefix(rq.Path, "/") {
			l.add("must be an absolute path (the GraphQL endpoint)", at("request", "path")...)
		}
		if rq.Method != "" && rq.Method != http.MethodPost {
			l.add("a GraphQL mutation is sent with POST", at("request", "method")...)
		}
		if rq.Body != nil {
			l.add("set one of body or graphql (whose variables are the body)", at("request", "body")...)
		}
		if !slices.Contains(templateRefs(strictyaml.JSONValue(rq.Variables)), "id") {
			l.add("the mutation's variables must name the target: {{id}}", at("request", "variables")...)
		}
	case !strings.HasPrefix(rq.Path, "/"):
		l.add("must be an absolute path", at("request", "path")...)
	case !strings.Contains(rq.Path, "{{id}}") && !bodyKeyed(rq):
		l.add("must name the target: {{id}} in the path, or in the body (a body-keyed write such as etcd's txn)", at("request", "path")...)
	}
	validateOutcome(l, rq, at)
	if rq.GraphQL == "" && (rq.Variables != nil || rq.UserErrors != "") {
		l.add("variables and user_errors belong to a GraphQL mutation (request.graphql)", at("request")...)
	}
	validateEncoding(l, rq, at)
}

// validateRequestHeaders checks an action's own headers: each replaces
// the upstream's header of the same name, so each must be one airlock
// sends as written; a credential, or a header airlock sets itself for
// this action (its condition, its idempotency key, a form's content
// type), would be dropped or would replace airlock's own.
func validateRequestHeaders(l *errList, a *ActionConfig, at func(k ...string) []string) {
	rq := a.Request
	for _, h := range slices.Sorted(maps.Keys(rq.Headers)) {
		where := at("request", "headers", h)
		switch {
		case !headerName(h):
			l.add(fmt.Sprintf("%q is not a header name (letters, digits and !#$%%&'*+-.^_`|~)", h), where...)
		case strings.EqualFold(h, "authorization") || strings.EqualFold(h, "cookie"):
			l.add("credentials belong in the upstream's credential, not in headers", where...)
		case strings.EqualFold(h, "if-match") && a.Conditional == CondIfMatch && strings.TrimSpace(rq.Headers[h]) != "{{version}}":
			// "{{version}}" only says what if_match sends (airlock init
			// writes it so); anything else would be replaced.
			l.add("conditional: if_match sends the target's version as If-Match itself", where...)
		case a.IdempotencyHeader != "" && strings.EqualFold(h, a.IdempotencyHeader):
			l.add(fmt.Sprintf("idempotency_header sends each target's key as %s itself", a.IdempotencyHeader), where...)
		case strings.EqualFold(h, "content-type") && rq.Encoding == EncodingForm:
			l.add("encoding: form sends its own Content-Type", where...)
		}
	}
}

// headerName reports whether h is an HTTP header name (an RFC 9110
// token).
func headerName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
		if !ok {
			return false
		}
	}
	return true
}

// validateBulk checks the bulk request and what reads each target's
// outcome from its answer.
func validateBulk(l *errList, b *BulkConfig, at func(k ...string) []string) {
	if !writeMethod(b.Method) {
		l.add("must be POST, PUT, PATCH or DELETE", at("bulk", "method")...)
	}
	if !strings.HasPrefix(b.Path, "/") {
		l.add("must be an absolute path", at("bulk", "path")...)
	}
	if b.MaxBatch <= 0 {
		l.add("required: a positive batch size", at("bulk", "max_batch")...)
	}
	switch b.ResultMatch {
	case "", ResultByID:
		if b.Results == "" || b.ResultID == "" || b.ResultStatus == "" || len(b.Applied) == 0 {
			l.add("results, result_id, result_status and applied are required to read per-target outcomes (results: . when the answer is the list itself)", at("bulk")...)
		}
	case ResultByPosition:
		if b.Results == "" || b.ResultStatus == "" || len(b.Applied) == 0 {
			l.add("results, result_status and applied are required to read per-target outcomes (results: . when the answer is the list itself)", at("bulk")...)
		}
		if b.ResultID != "" {
			l.add("result_id names a result's target; results matched by position name none", at("bulk", "result_id")...)
		}
	default:
		l.add("use id (each result names its target at result_id) or position (the i-th result answers the i-th target)", at("bulk", "result_match")...)
	}
	for _, p := range []struct{ key, path string }{{"results", b.Results}, {"result_id", b.ResultID}, {"result_status", b.ResultStatus}, {"result_item", b.ResultItem}} {
		if msg := answerPathProblem(p.path, p.key == "results"); msg != "" {
			l.add(msg, at("bulk", p.key)...)
		}
	}
	if b.Each != nil && !strings.Contains(fmt.Sprint(b.Body), "{{each}}") {
		l.add("each is rendered per target for the body's {{each}}; the body does not use it", at("bulk", "each")...)
	}
}

// answerPathProblem says what is wrong with a path into a bulk answer, as
// ParseBulk reads it: a dotted path of members and list indexes
// (responses, data.results, body.status), or, where whole, . for the
// answer itself (CouchDB's _bulk_docs answers a bare list). "" when it is
// one, or absent.
func answerPathProblem(p string, whole bool) string {
	switch {
	case p == "" || whole && p == ".":
		return ""
	case p == ".":
		return "names a member of each result; . (the result itself) is not read here"
	case strings.HasPrefix(p, "$") || strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is not read: write a dotted path (data.results), not JSONPath or a JSON Pointer", p)
	case slices.Contains(strings.Split(p, "."), ""):
		if whole {
			return fmt.Sprintf("%q has an empty step: write a dotted path (data.results), or . for the answer itself", p)
		}
		return fmt.Sprintf("%q has an empty step: write a dotted path (body.status)", p)
	}
	return ""
}

// validateConditional checks how the precondition is enforced at write
// time, against what the resource r offers (nil when not declared).
func validateConditional(l *errList, a *ActionConfig, r *ResourceConfig, at func(k ...string) []string) {
	switch a.Conditional {
	case CondIfMatch, CondVersion:
		if r != nil && r.VersionField == "" {
			l.add("needs the resource's version_field", at("conditional")...)
		} else if r != nil && r.Fields[r.VersionField] == nil {
			l.add(fmt.Sprintf("the resource's version_field %q is not among its declared fields: the condition could not be read from items", r.VersionField), at("conditional")...)
		}
	case CondReread:
		if r != nil && r.Get == nil {
			l.add("needs the resource's get endpoint", at("conditional")...)
		}
	case "":
		l.add("required: if_match, version or reread (how the precondition is enforced at write time)", at("conditional")...)
	default:
		l.add("use if_match, version or reread", at("conditional")...)
	}
	if a.Conditional == CondIfMatch && a.Bulk != nil {
		l.add("if_match needs one request per target; use version or reread with bulk", at("conditional")...)
	}
}

// validateEffect checks the effect and the precondition: their operators,
// and that they name fields of the resource r (nil when not declared).
func validateEffect(l *errList, a *ActionConfig, r *ResourceConfig, at func(k ...string) []string) {
	if len(a.Effect) == 0 {
		l.add("required: the fields the action changes (effect)", at("effect")...)
	}
	for i, e := range a.Effect {
		if e.Op != "" && e.Op != EffectSet && e.Op != EffectAdd && e.Op != EffectRemove {
			l.add("op must be set, add or remove", at("effect", strconv.Itoa(i), "op")...)
		}
		if r != nil {
			fd, declared := r.Fields[e.Field]
			switch {
			case !declared:
				l.add(fmt.Sprintf("field %q is not declared on the resource", e.Field), at("effect", strconv.Itoa(i))...)
			case e.PerTarget() && fd != nil && fd.Type != "array":
				l.add(fmt.Sprintf("%s changes an array field; %q is declared %s", e.Op, e.Field, fd.Type), at("effect", strconv.Itoa(i), "op")...)
			}
		}
	}
	for i, rule := range a.Precondition {
		if !ruleOps[rule.Op] {
			l.add("op must be one of eq, ne, in, not_in, contains, not_contains, gt, gte, lt, lte", at("precondition", strconv.Itoa(i), "op")...)
		}
		if r != nil {
			if _, declared := r.Fields[rule.Field]; !declared {
				l.add(fmt.Sprintf("field %q is not declared on the resource", rule.Field), at("precondition", strconv.Itoa(i))...)
			}
		}
	}
}

// validateResponseContract checks the fields and invariants a write's
// answer is held to.
func validateResponseContract(l *errList, rc *ResponseContract, at func(k ...string) []string) {
	for _, fname := range slices.Sorted(maps.Keys(rc.Fields)) {
		if f := rc.Fields[fname]; f != nil {
			if !fieldTypes[f.Type] {
				l.add("type must be one of string, integer, number, boolean, timestamp, array, object", at("response", "fields", fname, "type")...)
			}
			validateFieldContract(l, f, at("response", "fields", fname))
		}
	}
	validateInvariants(l, rc.Fields, rc.Invariants, at("response", "invariants"))
}

// validateApproval checks the approval policy; with the resource r (nil
// when not declared), that unknown_category names groups a preview counts.
func validateApproval(l *errList, ap *ApprovalConfig, r *ResourceConfig, at func(k ...string) []string) {
	switch ap.Mode {
	case "none", "client", "operator":
	default:
		l.add("mode must be none, client or operator", at("approval", "mode")...)
	}
	if ap.AboveTargets < 0 {
		l.add("above_targets must be 0 (off) or more", at("approval", "above_targets")...)
	}
	if ap.TTL < 0 {
		l.add("ttl must be positive", at("approval", "ttl")...)
	}
	validatePrincipals(l, ap.Approvers, at("approval", "approvers"))
	if r == nil {
		return
	}
	// The groups a preview counts: review_groups, or else the review
	// fields with an enum.
	groups := map[string]bool{}
	for _, g := range r.ReviewGroups {
		groups[g] = true
	}
	if len(r.ReviewGroups) == 0 {
		for _, f := range r.ReviewFields {
			if fc := r.Fields[f]; fc != nil && len(fc.Enum) > 0 {
				groups[f] = true
			}
		}
	}
	for i, dim := range ap.UnknownGroup {
		if !groups[dim] {
			l.add(fmt.Sprintf("%q is not one of the resource's review_groups: the rule compares the group values of each selection", dim), at("approval", "unknown_category", strconv.Itoa(i))...)
		}
	}
}

// validatePrincipals checks a principals restriction: it names at least
// one group or scope, none of them empty.
func validatePrincipals(l *errList, p *PrincipalsConfig, at []string) {
	if p == nil {
		return
	}
	if len(p.Groups) == 0 && len(p.Scopes) == 0 {
		l.add("name at least one group or scope: an empty restriction would let nobody through", at...)
	}
	for _, v := range append(append([]string(nil), p.Groups...), p.Scopes...) {
		if strings.TrimSpace(v) == "" {
			l.add("a group or scope cannot be empty", at...)
			break
		}
	}
}

func writeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// validateTemplates renders every template of the action as a commit
// would, with data of the shape the commit has at each place (see
// commitVars), so that a template that could not be built fails check
// with its line, not a commit half-way.
func (c *Config) validateTemplates(l *errList, name string, a *ActionConfig, r *ResourceConfig, at func(k ...string) []string) {
	d := templateDecl{a: a, r: r}
	for _, other := range slices.Sorted(maps.Keys(c.Actions)) {
		o := c.Actions[other]
		if o == nil || o.Compensation != name {
			continue
		}
		if !d.compensates {
			d.compensates, d.restore = true, effectFields(o)
			continue
		}
		d.restore = slices.DeleteFunc(d.restore, func(f string) bool { return !slices.Contains(effectFields(o), f) })
	}
	target, bulk, effect := d, d, d
	target.place, bulk.place, effect.place = placeTarget, placeBulk, placeEffect
	if rc := a.Request; rc != nil {
		checkPathQuery(l, rc.Path, at("request", "path"))
		checkTemplate(l, target, rc.Path, at("request", "path"), renderPath)
		checkTemplate(l, target, strictyaml.JSONValue(rc.Body), at("request", "body"), renderValue)
		checkTemplate(l, target, strictyaml.JSONValue(rc.Variables), at("request", "variables"), renderValue)
		for _, h := range slices.Sorted(maps.Keys(rc.Headers)) {
			checkTemplate(l, target, rc.Headers[h], at("request", "headers", h), renderValue)
		}
	}
	if b := a.Bulk; b != nil {
		checkPathQuery(l, b.Path, at("bulk", "path"))
		checkTemplate(l, bulk, b.Path, at("bulk", "path"), renderPath)
		checkTemplate(l, bulk, strictyaml.JSONValue(b.Body), at("bulk", "body"), renderValue)
		// Each is rendered per target: it names the target as a
		// per-target request does.
		checkTemplate(l, target, strictyaml.JSONValue(b.Each), at("bulk", "each"), renderValue)
	}
	for i, e := range a.Effect {
		checkTemplate(l, effect, strictyaml.JSONValue(e.To), at("effect", strconv.Itoa(i), "to"), renderValue)
	}
}

// templateRefs lists the {{references}} in a template value.
func templateRefs(t any) []string {
	var out []string
	switch x := t.(type) {
	case string:
		out = append(out, template.Refs(x)...)
		if strings.Contains(x, "{{") && len(out) == 0 {
			out = append(out, strings.TrimSpace(strings.Trim(x[strings.Index(x, "{{"):], "{} ")))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, templateRefs(x[k])...)
		}
	case map[any]any:
		for _, e := range x {
			out = append(out, templateRefs(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, templateRefs(e)...)
		}
	}
	return out
}
