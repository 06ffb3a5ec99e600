package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
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
	Response *Contract
}

func newAction(name string, cfg config.ActionConfig, r *Resource) *Action {
	cfg = config.ResolveAction(cfg)
	b, _ := json.Marshal(cfg)
	sum := sha256.Sum256(append([]byte(name+"\x00"), b...))
	return &Action{Name: name, Config: cfg, Resource: r, SpecDigest: "sha256:" + hex.EncodeToString(sum[:])}
}

// GetPath reads a dotted path from a decoded item.
func GetPath(doc any, path string) (any, bool) { return jsonvalue.Get(doc, path) }

// After returns the effect's after-values for a target: the same for
// every target unless the effect refers to the target's restore values.
func (a *Action) After(params map[string]any) (map[string]any, error) {
	return a.AfterFor(params, nil)
}

// AfterFor returns the effect's after-values for one target.
func (a *Action) AfterFor(params, restore map[string]any) (map[string]any, error) {
	out := map[string]any{}
	vars := config.TemplateVars{Params: params, Restore: restore}
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
