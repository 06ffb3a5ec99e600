package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/contract"
)

// Action is an initialized action.
type Action struct {
	Name     string
	Config   config.ActionConfig
	Resource *Resource
	// SpecDigest binds a selection to this exact definition: a changed
	// configuration makes older previews stale.
	SpecDigest string
	// Response checks the write's answer; nil when none is declared.
	Response *contract.Contract
}

func newAction(name string, cfg config.ActionConfig, r *Resource) *Action {
	cfg = config.ResolveAction(cfg)
	b, _ := json.Marshal(cfg)
	sum := sha256.Sum256(append([]byte(name+"\x00"), b...))
	return &Action{Name: name, Config: cfg, Resource: r, SpecDigest: "sha256:" + hex.EncodeToString(sum[:])}
}

// After returns the effect's rendered values (the To of each effect): the
// after-value of a set, the element an add or a remove names. A target's
// whole after-values come from AfterFor.
func (a *Action) After(params map[string]any) (map[string]any, error) {
	out := map[string]any{}
	vars := template.Vars{Params: params}
	for _, e := range a.Config.Effect {
		v, err := vars.Render(e.To)
		if err != nil {
			return nil, err
		}
		out[e.Field] = v
	}
	return out, nil
}

// AfterFor returns one target's whole after-values: each effect's value
// rendered (from the target's restore values for a compensation) and
// applied to the target's before-value (an add's list is the before list
// and the element).
func (a *Action) AfterFor(params, before, restore map[string]any) (map[string]any, error) {
	out := map[string]any{}
	vars := template.Vars{Params: params, Restore: restore}
	for _, e := range a.Config.Effect {
		v, err := vars.Render(e.To)
		if err != nil {
			return nil, err
		}
		fd, _ := a.Resource.Field(e.Field)
		out[e.Field] = e.After(before[e.Field], v, fd)
	}
	return out, nil
}

// VerifyByReread reports whether the action's answers are not evidence of
// its writes (verify: reread, on the action or its upstream): every
// target is re-read after its write.
func (a *Action) VerifyByReread() bool {
	v := a.Config.Verify
	if v == "" && a.Resource != nil && a.Resource.Upstream != nil {
		v = a.Resource.Upstream.Verify
	}
	return v == config.VerifyReread
}

// Deletes reports whether the action deletes its targets: its effect is
// their absence, which only a re-read shows.
func (a *Action) Deletes() bool {
	return a.Config.Request != nil && a.Config.Request.Method == http.MethodDelete
}

// WholeRecord reports whether the action's request sends the target's
// whole record ({{after}}): each write then reads it right before.
func (a *Action) WholeRecord() bool {
	rq := a.Config.Request
	if rq == nil {
		return false
	}
	if template.WholeRecord(rq.Body) || template.WholeRecord(rq.Variables) || template.WholeRecord(rq.Path) {
		return true
	}
	for _, h := range rq.Headers {
		if template.WholeRecord(h) {
			return true
		}
	}
	return false
}

// RecordAfter is a record as the upstream sent it (raw, before decoding)
// with the effect's after-values set at their fields' paths, in the API's
// encoding: the whole record a replacing write sends.
func (a *Action) RecordAfter(raw, after map[string]any) map[string]any {
	out := CopyDoc(raw)
	for _, e := range a.Config.Effect {
		jsonvalue.Put(out, a.Resource.FieldPath(e.Field), a.Resource.Encode(e.Field, after[e.Field]))
	}
	return out
}

// PerTarget reports whether any effect's after-value depends on the
// target (its before-value, or its restore values).
func (a *Action) PerTarget() bool {
	for _, e := range a.Config.Effect {
		if e.PerTarget() {
			return true
		}
	}
	return false
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

// FieldName maps a field an upstream named in its answer to a write: the
// action parameter the request body took it from (action.params.X), else
// a declared field of the resource (see dialect.List.FieldName); "" otherwise.
func (a *Action) FieldName(name string) string {
	if p := a.Config.ParamFor(name); p != "" {
		return p
	}
	if a.Resource != nil {
		return a.Resource.FieldName(name)
	}
	return ""
}
