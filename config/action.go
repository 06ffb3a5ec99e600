package config

import (
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/jsonvalue"
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
	// Verify is what proves a write: answer (the default: an answer that
	// is the target's own record, showing the effect; anything else is
	// settled by a re-read) or reread (every target is re-read after its
	// write, for an API whose answers only echo the request). Unset, the
	// upstream's verify applies.
	Verify string `yaml:"verify"`
	// Principals, when set, restricts who may preview and commit the
	// action to OAuth principals holding one of its groups or scopes.
	Principals *PrincipalsConfig `yaml:"principals" json:",omitempty"`
}

// PrincipalsConfig names the groups and scopes that let an OAuth principal
// through a restriction: holding any one of them is enough.
type PrincipalsConfig struct {
	Groups []string `yaml:"groups"`
	Scopes []string `yaml:"scopes"`
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
	// FourEyes refuses an approval by the principal who previewed the
	// selection.
	FourEyes bool `yaml:"four_eyes" json:",omitempty"`
	// Approvers, when set, restricts who may approve to OAuth principals
	// holding one of its groups or scopes.
	Approvers *PrincipalsConfig `yaml:"approvers" json:",omitempty"`
}

// WriteRequestConfig is the per-target request. Path, headers and body are
// templates: {{id}}, {{version}}, {{params.NAME}}, {{before.FIELD}},
// {{after.FIELD}}, {{operation_id}} (see templateNames). In the path,
// values are escaped.
type WriteRequestConfig struct {
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	// Headers are sent with each target's request, each replacing the
	// upstream's header of the same name.
	Headers map[string]string `yaml:"headers"`
	Body    any               `yaml:"body"`
	// GraphQL is a mutation document, sent by POST to Path with
	// Variables (a template) as its variables; the answer's errors and
	// the declared UserErrors list decide its outcome.
	GraphQL    string `yaml:"graphql"`
	Variables  any    `yaml:"variables"`
	UserErrors string `yaml:"user_errors"`
	// Encoding is how Body is sent: json (the default) or form
	// (application/x-www-form-urlencoded).
	Encoding string `yaml:"encoding"`
	// Outcome decides the write's outcome from a member of its answer
	// (etcd's txn: succeeded). See OutcomeConfig.
	Outcome *OutcomeConfig `yaml:"outcome"`
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
	// Each is a template rendered once per target with that target's
	// values ({{id}}, {{version}}, {{before.F}}, {{after.F}}): the body
	// takes the list as {{each}} (WordPress's /batch/v1 takes one request
	// object per target).
	Each any `yaml:"each"`
	// ResultMatch is how a result names its target: id (result_id, the
	// default) or position (the i-th result answers the i-th target, as
	// WordPress's batch responses do).
	ResultMatch string `yaml:"result_match"`
	// ResultItem is where a result holds its target's record as the write
	// left it (WordPress's body): a record without the effect contradicts
	// the result's status, and the target is unknown until re-read.
	ResultItem string `yaml:"result_item"`
}

// ResultsPath is where a bulk answer holds its results, as jsonvalue.Get
// reads it: "" for the answer itself (results: ., as CouchDB's _bulk_docs
// answers a bare list).
func (b *BulkConfig) ResultsPath() string {
	if b.Results == "." {
		return ""
	}
	return b.Results
}

// Bulk result matching.
const (
	ResultByID       = "id"
	ResultByPosition = "position"
)

// EffectConfig says what a field becomes: To is a value or a template. Op
// is set (the field becomes To), add (the array field gains To) or remove
// (it loses every element equal to To).
type EffectConfig struct {
	Field string `yaml:"field"`
	Op    string `yaml:"op"`
	To    any    `yaml:"to"`
}

// Effect operators.
const (
	EffectSet    = "set"
	EffectAdd    = "add"
	EffectRemove = "remove"
)

// PerTarget reports whether the effect's after-value depends on each
// target's before-value (add, remove).
func (e EffectConfig) PerTarget() bool { return e.Op == EffectAdd || e.Op == EffectRemove }

// After computes the whole after-value of the field from its before-value
// and the effect's rendered value to: to itself for set; for add, the
// before list with to appended unless an element already equals it; for
// remove, the before list without the elements equal to it. Elements
// compare in the field's element type (fd may be nil). What an API that
// replaces a list is sent, and what a re-read must show, is this whole
// value, never to alone.
func (e EffectConfig) After(before, to any, fd *FieldConfig) any {
	if !e.PerTarget() {
		return to
	}
	if fd != nil && fd.Elements != "" {
		if c, ok := ConvertScalar(to, fd.Elements); ok {
			to = c
		}
	}
	list, _ := strictyaml.JSONValue(before).([]any)
	out := make([]any, 0, len(list)+1)
	has := false
	for _, x := range list {
		if EqualInType(x, to, fd) {
			has = true
			if e.Op == EffectRemove {
				continue
			}
		}
		out = append(out, x)
	}
	if e.Op == EffectAdd && !has {
		out = append(out, to)
	}
	return out
}

// Applied reports whether a re-read value shows the effect's whole
// after-value: for add and remove, the same elements as after (in any
// order: a lost element, or one more, contradicts the effect); for set,
// an equal value (a list in any order).
func (e EffectConfig) Applied(got, after any, fd *FieldConfig) bool {
	if e.PerTarget() {
		g, ok1 := got.([]any)
		a, ok2 := strictyaml.JSONValue(after).([]any)
		if !ok1 || !ok2 {
			return false
		}
		return sameElements(g, a, fd) && sameElements(a, g, fd)
	}
	g, ok1 := got.([]any)
	a, ok2 := strictyaml.JSONValue(after).([]any)
	if ok1 && ok2 {
		// A list set whole may come back in another order (WordPress
		// orders a post's tags by name): the same elements, as many times
		// each, are the effect.
		return len(g) == len(a) && sameElements(g, a, fd) && sameElements(a, g, fd)
	}
	return jsonvalue.Equal(strictyaml.JSONValue(got), strictyaml.JSONValue(after))
}

// sameElements reports whether every element of a has an equal in b.
func sameElements(a, b []any, fd *FieldConfig) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if EqualInType(x, y, fd) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
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
	// GraphQL is a query document taking the item's id as $id, sent by
	// POST to Path; Item is then the item's path in the answer
	// (data.accountById), and a null item is not found.
	GraphQL string `yaml:"graphql"`
	// Missing is a path in the item whose value true says the item does
	// not exist: MediaWiki answers ?pageids= for a deleted page with
	// {"pageid": 5, "missing": true}, an answer that holds the id.
	Missing string `yaml:"missing"`
	// Method POST reads the item by posting Body (a template taking
	// {{id}}) to Path (etcd's range by key); Item may then be a list of
	// at most one item. Absent not_found says that an answer without the
	// item (proto3 JSON omits an empty kvs) means there is none.
	Method string `yaml:"method"`
	Body   any    `yaml:"body"`
	Absent string `yaml:"absent"`
	// Headers are sent with the read, each replacing the upstream's
	// header of the same name (list.headers).
	Headers map[string]string `yaml:"headers"`
}

// Write verification (verify).
const (
	VerifyAnswer = "answer"
	VerifyReread = "reread"
)

// Conditional write modes.
const (
	CondIfMatch = "if_match"
	CondVersion = "version"
	CondReread  = "reread"
)

// ParamFor maps a field an upstream named in its validation errors back to
// the action parameter the write template filled it from ("" when none).
func (a *ActionConfig) ParamFor(field string) string {
	var body any
	if a.Request != nil {
		body = a.Request.Body
	} else if a.Bulk != nil {
		body = a.Bulk.Body
	}
	t, ok := jsonvalue.Get(body, field)
	if !ok {
		return ""
	}
	s, _ := t.(string)
	if refs := template.Refs(s); len(refs) > 0 && strings.HasPrefix(refs[0], "params.") {
		return "action." + refs[0]
	}
	return ""
}
