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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
)

// ActionConfig describes a write airlock may carry out on a resource's
// members: one request per target, or a bulk endpoint.
type ActionConfig struct {
	Resource          string              `yaml:"resource"`
	Description       string              `yaml:"description"`
	Destructive       bool                `yaml:"destructive"`
	Request           *WriteRequestConfig `yaml:"request"`
	Bulk              *BulkConfig         `yaml:"bulk"`
	Params            map[string]any      `yaml:"params"`
	Precondition      []RuleConfig        `yaml:"precondition"`
	Conditional       string              `yaml:"conditional"`
	Effect            []EffectConfig      `yaml:"effect"`
	IdempotencyHeader string              `yaml:"idempotency_header"`
	MaxTargets        int                 `yaml:"max_targets"`
	Concurrency       int                 `yaml:"concurrency"`
	Timeout           time.Duration       `yaml:"timeout"`
	Stop              StopConfig          `yaml:"stop"`
	Irreversible      []string            `yaml:"irreversible"`
	ExpiresAfter      time.Duration       `yaml:"selection_ttl"`
	Approval          *ApprovalConfig     `yaml:"approval"`
	// Response is the contract of the write's answer; an answer that breaks
	// it stops the operation.
	Response *ResponseContract `yaml:"response"`
	// Compensation names the action that undoes this one: preview_selection
	// with compensate builds its selection from the journal.
	Compensation string `yaml:"compensation"`
	// MaxAttempts bounds how often one target is sent, re-sends after an
	// unobserved outcome included (default 3).
	MaxAttempts int `yaml:"max_attempts"`
	// Reconcile is how a write whose outcome was not observed is settled.
	Reconcile ReconcileConfig `yaml:"reconcile"`
}

// ReconcileConfig bounds the re-reads that settle an unknown outcome: up
// to Rereads re-reads per round, waiting Backoff before the second and
// doubling up to MaxBackoff.
type ReconcileConfig struct {
	Rereads    int           `yaml:"rereads"`
	Backoff    time.Duration `yaml:"backoff"`
	MaxBackoff time.Duration `yaml:"max_backoff"`
}

// ApprovalConfig is an action's approval policy (see the approval docs).
type ApprovalConfig struct {
	Mode         string        `yaml:"mode"`
	AboveTargets int           `yaml:"above_targets"`
	Destructive  bool          `yaml:"destructive"`
	Environments []string      `yaml:"environments"`
	UnknownGroup []string      `yaml:"unknown_category"`
	TTL          time.Duration `yaml:"ttl"`
}

// WriteRequestConfig is the per-target request. Path, headers and body are
// templates: {{id}}, {{version}}, {{params.NAME}}, {{before.FIELD}},
// {{after.FIELD}}, {{operation_id}}. In the path, values are escaped.
type WriteRequestConfig struct {
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Headers map[string]string `yaml:"headers"`
	Body    any               `yaml:"body"`
}

// BulkConfig is a bulk endpoint: one request for up to MaxBatch targets,
// whose body template may use {{ids}} and {{targets}} (a list of {id,
// version}); the response lists a result per id.
type BulkConfig struct {
	Method       string   `yaml:"method"`
	Path         string   `yaml:"path"`
	Body         any      `yaml:"body"`
	MaxBatch     int      `yaml:"max_batch"`
	Results      string   `yaml:"results"`
	ResultID     string   `yaml:"result_id"`
	ResultStatus string   `yaml:"result_status"`
	Applied      []string `yaml:"applied"`
	Conflict     []string `yaml:"conflict"`
	NotFound     []string `yaml:"not_found"`
}

// RuleConfig is a comparison on a field: a precondition or an exclusion.
type RuleConfig struct {
	Field  string `yaml:"field" json:"field"`
	Op     string `yaml:"op" json:"op"`
	Value  any    `yaml:"value" json:"value"`
	Reason string `yaml:"reason" json:"reason,omitempty"`
}

// EffectConfig says what a field becomes: To is a value or a template. Op
// is set (the field becomes To) or add (the array field gains To).
type EffectConfig struct {
	Field string `yaml:"field"`
	Op    string `yaml:"op"`
	To    any    `yaml:"to"`
}

// Applied reports whether a re-read value shows the effect applied, and
// Untouched whether it still equals the before-value.
func (e EffectConfig) Applied(got, after any) bool {
	if e.Op == "add" {
		list, _ := got.([]any)
		for _, x := range list {
			if scalarEqual(x, after, nil) {
				return true
			}
		}
		return false
	}
	return sameJSON(got, after)
}

func sameJSON(a, b any) bool {
	ja, err1 := jsonMarshal(normalizeYAMLValue(a))
	jb, err2 := jsonMarshal(normalizeYAMLValue(b))
	return err1 == nil && err2 == nil && bytes.Equal(canonicalNumbers(ja), canonicalNumbers(jb))
}

// canonicalNumbers re-encodes a JSON document with sorted keys so that two
// encodings of one value compare equal.
func canonicalNumbers(b []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

// StopConfig is the failure-ratio stop rule.
type StopConfig struct {
	FailureRatio float64 `yaml:"failure_ratio"`
	MinAttempts  int     `yaml:"min_attempts"`
}

// GetConfig is a resource's single-item endpoint, used to re-read targets.
type GetConfig struct {
	Path string `yaml:"path"`
	Item string `yaml:"item"`
}

// Conditional write modes.
const (
	CondIfMatch = "if_match"
	CondVersion = "version"
	CondReread  = "reread"
)

// Rule operators.
var ruleOps = map[string]bool{"eq": true, "ne": true, "in": true, "not_in": true, "contains": true, "not_contains": true, "gt": true, "gte": true, "lt": true, "lte": true}

// Action is an initialized action.
type Action struct {
	Name     string
	Config   ActionConfig
	Resource *Resource
	// SpecDigest binds a selection to this exact definition: a changed
	// configuration makes older previews stale.
	SpecDigest string
	// Response checks the write's answer; nil when none is declared.
	Response *Contract
}

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
	item, _ := getPath(doc, a.Config.Response.Item)
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

func (c *Config) validateAction(l *errList, name string, a *ActionConfig) {
	p := []string{"actions", name}
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	r, ok := c.Resources[a.Resource]
	if a.Resource == "" {
		l.add("required", at("resource")...)
	} else if !ok || r == nil {
		l.add(fmt.Sprintf("no resource named %q", a.Resource), at("resource")...)
	}
	if (a.Request == nil) == (a.Bulk == nil) {
		l.add("set exactly one of request or bulk", at()...)
	}
	if a.Request != nil {
		if !writeMethod(a.Request.Method) {
			l.add("must be POST, PUT, PATCH or DELETE", at("request", "method")...)
		}
		if !strings.HasPrefix(a.Request.Path, "/") || !strings.Contains(a.Request.Path, "{{id}}") {
			l.add("must be an absolute path containing {{id}}", at("request", "path")...)
		}
	}
	if b := a.Bulk; b != nil {
		if !writeMethod(b.Method) {
			l.add("must be POST, PUT, PATCH or DELETE", at("bulk", "method")...)
		}
		if !strings.HasPrefix(b.Path, "/") {
			l.add("must be an absolute path", at("bulk", "path")...)
		}
		if b.MaxBatch <= 0 {
			l.add("required: a positive batch size", at("bulk", "max_batch")...)
		}
		if b.Results == "" || b.ResultID == "" || b.ResultStatus == "" || len(b.Applied) == 0 {
			l.add("results, result_id, result_status and applied are required to read per-target outcomes", at("bulk")...)
		}
	}
	switch a.Conditional {
	case CondIfMatch, CondVersion:
		if ok && r != nil && r.VersionField == "" {
			l.add("needs the resource's version_field", at("conditional")...)
		} else if ok && r != nil && r.Fields[r.VersionField] == nil {
			l.add(fmt.Sprintf("the resource's version_field %q is not among its declared fields: the condition could not be read from items", r.VersionField), at("conditional")...)
		}
	case CondReread:
		if ok && r != nil && r.Get == nil {
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
	if len(a.Effect) == 0 {
		l.add("required: the fields the action changes (effect)", at("effect")...)
	}
	for i, e := range a.Effect {
		if e.Op != "" && e.Op != "set" && e.Op != "add" {
			l.add("op must be set or add", at("effect", strconv.Itoa(i), "op")...)
		}
		if ok && r != nil {
			if _, declared := r.Fields[e.Field]; !declared {
				l.add(fmt.Sprintf("field %q is not declared on the resource", e.Field), at("effect", strconv.Itoa(i))...)
			}
		}
	}
	for i, rule := range a.Precondition {
		if !ruleOps[rule.Op] {
			l.add("op must be one of eq, ne, in, not_in, contains, not_contains, gt, gte, lt, lte", at("precondition", strconv.Itoa(i), "op")...)
		}
		if ok && r != nil {
			if _, declared := r.Fields[rule.Field]; !declared {
				l.add(fmt.Sprintf("field %q is not declared on the resource", rule.Field), at("precondition", strconv.Itoa(i))...)
			}
		}
	}
	if a.Params != nil {
		b, _ := json.Marshal(normalizeYAMLValue(a.Params))
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
	if ok && r != nil {
		c.validateTemplates(l, a, r, at)
	}
	if a.MaxTargets < 0 || a.Concurrency < 0 || a.Concurrency > 64 {
		l.add("max_targets and concurrency must be positive (concurrency at most 64)", at()...)
	}
	if a.Stop.FailureRatio < 0 || a.Stop.FailureRatio > 1 || a.Stop.MinAttempts < 0 {
		l.add("failure_ratio is between 0 and 1, min_attempts positive", at("stop")...)
	}
	if rc := a.Response; rc != nil {
		for _, fname := range sortedKeys(rc.Fields) {
			if f := rc.Fields[fname]; f != nil {
				if !fieldTypes[f.Type] {
					l.add("type must be one of string, integer, number, boolean, timestamp, array, object", at("response", "fields", fname, "type")...)
				}
				validateFieldContract(l, f, at("response", "fields", fname))
			}
		}
		validateInvariants(l, rc.Fields, rc.Invariants, at("response", "invariants"))
	}
	if a.Compensation != "" {
		other, ok := c.Actions[a.Compensation]
		if !ok || other == nil {
			l.add(fmt.Sprintf("no action named %q", a.Compensation), at("compensation")...)
		} else if other.Resource != a.Resource {
			l.add("the compensating action must act on the same resource", at("compensation")...)
		}
	}
	if ap := a.Approval; ap != nil {
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
		if ok && r != nil {
			// The groups a preview counts: review_groups, or else the
			// review fields with an enum.
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
	}
}

func writeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func newAction(name string, cfg ActionConfig, r *Resource) *Action {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Stop.FailureRatio == 0 {
		cfg.Stop.FailureRatio = 0.5
	}
	if cfg.Stop.MinAttempts == 0 {
		cfg.Stop.MinAttempts = 20
	}
	if cfg.MaxTargets == 0 {
		cfg.MaxTargets = 10000
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.Reconcile.Rereads == 0 {
		cfg.Reconcile.Rereads = 6
	}
	if cfg.Reconcile.Backoff == 0 {
		cfg.Reconcile.Backoff = 250 * time.Millisecond
	}
	if cfg.Reconcile.MaxBackoff == 0 {
		cfg.Reconcile.MaxBackoff = 4 * time.Second
	}
	cfg.Params = asMap(normalizeYAMLValue(cfg.Params))
	cfg.Precondition = normalizeRules(cfg.Precondition)
	for i := range cfg.Effect {
		cfg.Effect[i].To = normalizeYAMLValue(cfg.Effect[i].To)
	}
	if cfg.Request != nil {
		cfg.Request.Body = normalizeYAMLValue(cfg.Request.Body)
	}
	if cfg.Bulk != nil {
		cfg.Bulk.Body = normalizeYAMLValue(cfg.Bulk.Body)
	}
	b, _ := json.Marshal(cfg)
	sum := sha256.Sum256(append([]byte(name+"\x00"), b...))
	return &Action{Name: name, Config: cfg, Resource: r, SpecDigest: "sha256:" + hex.EncodeToString(sum[:])}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func normalizeRules(rs []RuleConfig) []RuleConfig {
	out := make([]RuleConfig, len(rs))
	for i, r := range rs {
		r.Value = normalizeYAMLValue(r.Value)
		out[i] = r
	}
	return out
}

// normalizeYAMLValue turns YAML-decoded values into JSON-decoded forms:
// numbers as json.Number, maps keyed by string.
func normalizeYAMLValue(v any) any {
	switch x := v.(type) {
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeYAMLValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalizeYAMLValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeYAMLValue(e)
		}
		return out
	}
	return v
}

// NormalizeValue exposes normalizeYAMLValue for configuration values read
// elsewhere (default filters).
func NormalizeValue(v any) any { return normalizeYAMLValue(v) }

// EvalRule evaluates a rule on an item. ok is false when the field is
// missing or has a type the operator cannot compare: the record is then
// ambiguous, never silently in or out.
func (r *Resource) EvalRule(doc map[string]any, rule RuleConfig) (match, ok bool) {
	got, present := getPath(doc, r.FieldPath(rule.Field))
	if !present {
		return false, false
	}
	fd, _ := r.Field(rule.Field)
	switch rule.Op {
	case "eq":
		return scalarEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "ne":
		return !scalarEqual(got, rule.Value, fd), comparable(got, rule.Value)
	case "in", "not_in":
		list, isList := rule.Value.([]any)
		if !isList {
			list = []any{rule.Value}
		}
		in := false
		for _, v := range list {
			if scalarEqual(got, v, fd) {
				in = true
			}
		}
		if rule.Op == "not_in" {
			in = !in
		}
		return in, got == nil || isScalar(got)
	case "contains", "not_contains":
		arr, isArr := got.([]any)
		if !isArr {
			return false, false
		}
		has := false
		for _, e := range arr {
			if scalarEqual(e, rule.Value, fd) {
				has = true
			}
		}
		if rule.Op == "not_contains" {
			has = !has
		}
		return has, true
	case "gt", "gte", "lt", "lte":
		g, ok1 := toFloat(got)
		w, ok2 := toFloat(rule.Value)
		if !ok1 || !ok2 {
			gs, isS1 := got.(string)
			ws, isS2 := rule.Value.(string)
			if !isS1 || !isS2 {
				return false, false
			}
			c := strings.Compare(gs, ws)
			return cmpOp(rule.Op, float64(c), 0), true
		}
		return cmpOp(rule.Op, g, w), true
	}
	return false, false
}

func cmpOp(op string, a, b float64) bool {
	switch op {
	case "gt":
		return a > b
	case "gte":
		return a >= b
	case "lt":
		return a < b
	}
	return a <= b
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, bool, json.Number, float64:
		return true
	}
	return false
}

// comparable reports whether an equality comparison is meaningful: the
// item's value is null or of the same kind as the rule's value.
func comparable(got, want any) bool {
	if got == nil || want == nil {
		return true
	}
	switch want.(type) {
	case string:
		_, ok := got.(string)
		return ok
	case bool:
		_, ok := got.(bool)
		return ok
	case json.Number, float64:
		_, ok := toFloat(got)
		return ok
	}
	return false
}

// GetPath reads a dotted path from a decoded item.
func GetPath(doc any, path string) (any, bool) { return getPath(doc, path) }

// Read fetches one item through the resource's get endpoint. found is false
// on 404. Errors are *HTTPError or bad-response errors.
func (r *Resource) Read(ctx context.Context, id, requestID string) (doc map[string]any, version string, found bool, err error) {
	g := r.Config.Get
	if g == nil {
		return nil, "", false, fmt.Errorf("resource %q has no get endpoint", r.Name)
	}
	if err := CheckPathID(id); err != nil {
		return nil, "", false, err
	}
	u := r.Upstream.ResolveURL(nil, strings.ReplaceAll(g.Path, "{{id}}", url.PathEscape(id)), nil)
	resp, err := r.Upstream.Do(ctx, Request{Method: http.MethodGet, URL: u, RequestID: requestID, Idempotent: true})
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
	item, _ := getPath(body, g.Item)
	m, ok := item.(map[string]any)
	if !ok {
		return nil, "", false, badResponse("the item is not a JSON object")
	}
	if r.Config.VersionField != "" {
		version, _ = itemID(m, r.FieldPath(r.Config.VersionField))
	}
	if version == "" {
		version = resp.Header.Get("ETag")
	}
	s := &Scan{r: r, normalized: map[string]bool{}}
	s.normalizeLocked(m)
	return m, version, true, nil
}

// TemplateVars are the values a write template may use.
type TemplateVars struct {
	ID      string
	Version string
	// VersionValue is the version in its declared type (a number for an
	// integer version field), as the upstream expects it back.
	VersionValue any
	Params       map[string]any
	Before       map[string]any
	After        map[string]any
	Restore      map[string]any
	OperationID  string
	Targets      []map[string]any
}

var tmplRef = regexp.MustCompile(`\{\{\s*([a-z_]+(?:\.[A-Za-z0-9_]+)*)\s*\}\}`)

func (v TemplateVars) lookup(ref string) (any, bool) {
	parts := strings.SplitN(ref, ".", 2)
	switch parts[0] {
	case "id":
		return v.ID, true
	case "version":
		if v.VersionValue != nil {
			return v.VersionValue, true
		}
		return v.Version, v.Version != ""
	case "operation_id":
		return v.OperationID, true
	case "targets":
		out := make([]any, len(v.Targets))
		for i, t := range v.Targets {
			out[i] = t
		}
		return out, true
	case "ids":
		out := make([]any, len(v.Targets))
		for i, t := range v.Targets {
			out[i] = t["id"]
		}
		return out, true
	}
	if len(parts) < 2 {
		return nil, false
	}
	var m map[string]any
	switch parts[0] {
	case "params":
		m = v.Params
	case "before":
		m = v.Before
	case "after":
		m = v.After
	case "restore":
		m = v.Restore
	}
	x, ok := getPath(m, parts[1])
	return x, ok
}

// Render fills a template value: a string that is exactly one reference
// takes the referenced value with its type; references inside a longer
// string are formatted as text. Unknown references are errors.
func (v TemplateVars) Render(t any) (any, error) {
	switch x := t.(type) {
	case string:
		if m := tmplRef.FindStringSubmatch(x); m != nil && m[0] == strings.TrimSpace(x) {
			val, ok := v.lookup(m[1])
			if !ok {
				return nil, fmt.Errorf("template reference %q has no value", m[1])
			}
			return val, nil
		}
		var err error
		out := tmplRef.ReplaceAllStringFunc(x, func(s string) string {
			ref := tmplRef.FindStringSubmatch(s)[1]
			val, ok := v.lookup(ref)
			if !ok {
				err = fmt.Errorf("template reference %q has no value", ref)
				return ""
			}
			return scalarString(val)
		})
		return out, err
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := v.Render(e)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := v.Render(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return t, nil
}

// RenderPath fills a path template, escaping each value.
func (v TemplateVars) RenderPath(p string) (string, error) {
	var err error
	out := tmplRef.ReplaceAllStringFunc(p, func(s string) string {
		ref := tmplRef.FindStringSubmatch(s)[1]
		val, ok := v.lookup(ref)
		if !ok {
			err = fmt.Errorf("template reference %q has no value", ref)
			return ""
		}
		return url.PathEscape(scalarString(val))
	})
	return out, err
}

// After returns the effect's after-values for a target: the same for
// every target unless the effect refers to the target's restore values.
func (a *Action) After(params map[string]any) (map[string]any, error) {
	return a.AfterFor(params, nil)
}

// AfterFor returns the effect's after-values for one target.
func (a *Action) AfterFor(params, restore map[string]any) (map[string]any, error) {
	out := map[string]any{}
	vars := TemplateVars{Params: params, Restore: restore}
	for _, e := range a.Config.Effect {
		v, err := vars.Render(e.To)
		if err != nil {
			return nil, err
		}
		out[e.Field] = v
	}
	return out, nil
}

// EffectFields lists the fields the action changes, sorted.
func (a *Action) EffectFields() []string {
	var out []string
	for _, e := range a.Config.Effect {
		out = append(out, e.Field)
	}
	sort.Strings(out)
	return out
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
// client (the commit engine journals and retries attempts itself) and never
// follows a redirect.
func (a *Action) WriteRequest(vars TemplateVars, requestID string) (Request, error) {
	if err := CheckPathID(vars.ID); err != nil {
		return Request{}, err
	}
	if (a.Config.Conditional == CondIfMatch || a.Config.Conditional == CondVersion) && vars.Version == "" {
		return Request{}, ErrNoVersion
	}
	vars.VersionValue = a.typedVersion(vars.Version)
	rc := a.Config.Request
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
		req.Header.Set(k, scalarString(v))
	}
	if rc.Body != nil {
		body, err := vars.Render(rc.Body)
		if err != nil {
			return Request{}, err
		}
		req.Body, _ = jsonMarshal(body)
	}
	if a.Config.Conditional == CondIfMatch {
		req.Header.Set("If-Match", vars.Version)
	}
	if h := a.Config.IdempotencyHeader; h != "" {
		req.Header.Set(h, IdempotencyKey(vars.OperationID, vars.ID))
	}
	return req, nil
}

// BulkRequest builds one bulk request for the targets.
func (a *Action) BulkRequest(vars TemplateVars, requestID string) (Request, error) {
	bc := a.Config.Bulk
	for _, t := range vars.Targets {
		v, _ := t["version"].(string)
		if a.Config.Conditional == CondVersion && v == "" {
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
			ids[i] = scalarString(t["id"])
		}
		req.Header.Set(h, IdempotencyKey(vars.OperationID, strings.Join(ids, ",")))
	}
	return req, nil
}

// ParamFor maps a field an upstream named in its validation errors back to
// the action parameter the write template filled it from ("" when none).
func (a *Action) ParamFor(field string) string {
	var body any
	if a.Config.Request != nil {
		body = a.Config.Request.Body
	} else if a.Config.Bulk != nil {
		body = a.Config.Bulk.Body
	}
	t, ok := getPath(body, field)
	if !ok {
		return ""
	}
	s, _ := t.(string)
	if m := tmplRef.FindStringSubmatch(s); m != nil && strings.HasPrefix(m[1], "params.") {
		return "action." + m[1]
	}
	return ""
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
	raw, _ := getPath(doc, bc.Results)
	list, ok := raw.([]any)
	if !ok {
		return nil, badResponse("bulk results are not an array at %q", bc.Results)
	}
	out := map[string]BulkOutcome{}
	for _, e := range list {
		id, ok := itemID(e, bc.ResultID)
		if !ok {
			return nil, badResponse("a bulk result has no id")
		}
		st, _ := getPath(e, bc.ResultStatus)
		s := scalarString(st)
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

// CheckWriteResponse accepts a 2xx write response: an empty body, or a
// JSON body that is not an error object.
func CheckWriteResponse(resp *Response) error {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	_, err := decodeJSONBody(resp, true)
	return err
}

// validateTemplates checks every {{reference}} of the action's request or
// bulk templates, so that a reference that can have no value fails check,
// not a commit half-way.
func (c *Config) validateTemplates(l *errList, a *ActionConfig, r *ResourceConfig, at func(k ...string) []string) {
	params := map[string]bool{}
	if props, ok := asMap(normalizeYAMLValue(a.Params))["properties"].(map[string]any); ok {
		for k := range props {
			params[k] = true
		}
	}
	effect := map[string]bool{}
	for _, e := range a.Effect {
		effect[e.Field] = true
	}
	check := func(t any, bulk bool, where ...string) {
		for _, ref := range templateRefs(t) {
			root, rest, _ := strings.Cut(ref, ".")
			var bad string
			switch root {
			case "id", "version":
				if bulk {
					bad = "a bulk template names each target through {{targets}} or {{ids}}"
				}
			case "targets", "ids":
				if !bulk {
					bad = "{{" + root + "}} is only for bulk templates"
				}
			case "operation_id":
			case "params":
				if !params[rest] {
					bad = fmt.Sprintf("the action's params declare no property %q", rest)
				}
			case "before":
				if r.Fields[rest] == nil {
					bad = fmt.Sprintf("the resource declares no field %q", rest)
				}
			case "after", "restore":
				if !effect[rest] {
					bad = fmt.Sprintf("%q is not a field of the action's effect", rest)
				}
			case "secret", "secrets", "credential", "env":
				bad = "templates cannot read secrets or the environment; the credential is sent by the upstream's credential block"
			default:
				bad = "unknown template reference"
			}
			if bad != "" {
				l.add(fmt.Sprintf("{{%s}}: %s", ref, bad), at(where...)...)
			}
		}
	}
	if rc := a.Request; rc != nil {
		check(rc.Path, false, "request", "path")
		check(rc.Body, false, "request", "body")
		for _, h := range sortedKeys(rc.Headers) {
			check(rc.Headers[h], false, "request", "headers", h)
		}
	}
	if b := a.Bulk; b != nil {
		check(b.Path, true, "bulk", "path")
		check(b.Body, true, "bulk", "body")
	}
}

// templateRefs lists the {{references}} in a template value.
func templateRefs(t any) []string {
	var out []string
	switch x := t.(type) {
	case string:
		for _, m := range tmplRef.FindAllStringSubmatch(x, -1) {
			out = append(out, m[1])
		}
		if strings.Contains(x, "{{") && len(out) == 0 {
			out = append(out, strings.TrimSpace(strings.Trim(x[strings.Index(x, "{{"):], "{} ")))
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
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
