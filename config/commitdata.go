package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/config/template"
)

// check renders every template of an action with the renderer a commit
// uses (template.Vars) and with data of the shape the commit fills in,
// placeholders of the declared types standing for the values: a template
// check accepts is one the commit can build, and one it refuses is told
// what the commit has.

// templatePlace is where a commit renders a template; each place has its
// own data.
type templatePlace int

const (
	// placeTarget is a per-target request (path, headers, body,
	// variables) and bulk.each, rendered once per target.
	placeTarget templatePlace = iota
	// placeBulk is a bulk request's path and body, rendered once per
	// batch.
	placeBulk
	// placeEffect is an effect's to, computed for every target before
	// anything is sent.
	placeEffect
)

// what names a place in a message.
func (p templatePlace) what() string {
	switch p {
	case placeBulk:
		return "a bulk path or body"
	case placeEffect:
		return "an effect's to"
	}
	return "a per-target template"
}

// templateDecl is what decides the data at a place: the action, its
// resource, and the fields restore holds when it runs as a compensation.
type templateDecl struct {
	place templatePlace
	a     *ActionConfig
	r     *ResourceConfig
	// compensates is whether another action names this one as its
	// compensation; restore is then the fields every such action's effect
	// changes (what the compensated operation journaled).
	compensates bool
	restore     []string
}

// templateNames is every name a template may read: how a commit fills it
// at each place, here with a placeholder of its declared type, and what it
// holds there. fill reports whether the commit has the name at d's place
// and what to tell an author whose template asks for more (what it holds,
// or why it has none; "" when the name says it all). A name templates may
// read is one row here, beside its field in template.Vars and its case in
// the lookup of Vars.
var templateNames = []struct {
	name string
	fill func(v *template.Vars, d templateDecl) (has bool, says string)
}{
	{"id", func(v *template.Vars, d templateDecl) (bool, string) {
		switch d.place {
		case placeTarget:
			v.ID, v.IDValue = "1", placeholder(d.r.Fields[d.r.IDField])
			return true, ""
		case placeBulk:
			return false, "a bulk path or body names its targets through {{targets}} or {{ids}}; bulk.each names each one's {{id}}"
		}
		return false, ""
	}},
	{"version", func(v *template.Vars, d templateDecl) (bool, string) {
		switch d.place {
		case placeTarget:
			if d.r.VersionField == "" {
				return false, "the resource declares no version_field: a commit has no version to send"
			}
			v.Version, v.VersionValue = "1", placeholder(d.r.Fields[d.r.VersionField])
			return true, ""
		case placeBulk:
			return false, "a bulk path or body names each target's version through {{targets}}; bulk.each names each one's {{version}}"
		}
		return false, ""
	}},
	{"params", func(v *template.Vars, d templateDecl) (bool, string) {
		var optional []string
		v.Params, optional = requiredParams(d.a)
		names := slices.Sorted(maps.Keys(v.Params))
		says := "params holds only the properties the action's params require: " + strings.Join(names, ", ")
		if len(names) == 0 {
			says = "params holds only the properties the action's params require, and they require none"
		}
		if len(optional) > 0 {
			says += " (an optional one may be absent at commit: " + strings.Join(optional, ", ") + ")"
		}
		return true, says
	}},
	{"before", func(v *template.Vars, d templateDecl) (bool, string) {
		switch d.place {
		case placeTarget:
			v.Before = fieldPlaceholders(d.r, effectFields(d.a))
			return true, "before holds only the fields the effect changes: " + strings.Join(effectFields(d.a), ", ")
		case placeBulk:
			return false, "bulk.each renders each target's own values, before among them"
		}
		return false, ""
	}},
	{"after", func(v *template.Vars, d templateDecl) (bool, string) {
		switch d.place {
		case placeTarget:
			v.After = fieldPlaceholders(d.r, effectFields(d.a))
			if d.r.Get != nil && d.a.Bulk == nil {
				// {{after}} alone: the whole record, read right before
				// the write, with the effect applied.
				v.Record = fieldPlaceholders(d.r, slices.Sorted(maps.Keys(d.r.Fields)))
			}
		case placeBulk:
			// Rendered once per batch from the params alone: an add's or
			// a remove's after is the element it names, and an effect
			// that reads restore has none; bulk.each has each target's.
			params, _ := requiredParams(d.a)
			for _, e := range d.a.Effect {
				if _, err := (template.Vars{Params: params}).Render(strictyaml.JSONValue(e.To)); err != nil {
					return false, "a bulk body's after is the effect's to rendered from params alone, and this effect's reads more; bulk.each renders each target's after"
				}
			}
			v.After = effectPlaceholders(d.r, d.a.Effect)
		default:
			return false, ""
		}
		return true, "after holds only the fields the effect changes: " + strings.Join(effectFields(d.a), ", ")
	}},
	{"restore", func(v *template.Vars, d templateDecl) (bool, string) {
		switch {
		case d.place == placeBulk:
			return false, "bulk.each renders each target's own values, restore among them"
		case !d.compensates:
			return false, "restore holds what a compensated operation journaled, and no action names this one as its compensation"
		}
		v.Restore = fieldPlaceholders(d.r, d.restore)
		if len(d.restore) == 0 {
			return true, "restore holds only the fields that every action it compensates changes, and they share none"
		}
		return true, "restore holds only the fields the effect of the action it compensates changes: " + strings.Join(d.restore, ", ")
	}},
	{"operation_id", func(v *template.Vars, d templateDecl) (bool, string) {
		if d.place == placeEffect {
			return false, ""
		}
		v.OperationID = "op"
		return true, ""
	}},
	{"targets", fillTargets},
	{"ids", fillTargets},
	{"each", func(v *template.Vars, d templateDecl) (bool, string) {
		switch {
		case d.place == placeTarget:
			return false, "{{each}} is the list a bulk body takes from bulk.each"
		case d.place == placeBulk && d.a.Bulk != nil && d.a.Bulk.Each != nil:
			v.Each = []any{map[string]any{}}
			return true, ""
		case d.place == placeBulk:
			return false, "{{each}} is the list bulk.each renders per target: set bulk.each"
		}
		return false, ""
	}},
}

// requiredParams holds a placeholder for each property the action's params
// require: a commit has the params the caller sent, checked against the
// schema, so only those are sure to be there. optional lists the others.
func requiredParams(a *ActionConfig) (params map[string]any, optional []string) {
	schema := asMap(strictyaml.JSONValue(a.Params))
	props := asMap(schema["properties"])
	required := asList(schema["required"])
	params = map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if !slices.Contains(required, any(name)) {
			optional = append(optional, name)
			continue
		}
		params[name] = placeholder(&FieldConfig{Type: jsonString(asMap(props[name])["type"])})
	}
	return params, optional
}

// fillTargets is targets and ids: a bulk request's list of its targets.
func fillTargets(v *template.Vars, d templateDecl) (bool, string) {
	switch d.place {
	case placeBulk:
		v.Targets = []map[string]any{{"id": "1", "version": "1"}}
		return true, ""
	case placeTarget:
		return false, "{{targets}} and {{ids}} are a bulk body's list of targets"
	}
	return false, ""
}

// commitVars is the data a commit renders templates with at d's place,
// with placeholders for the values.
func commitVars(d templateDecl) template.Vars {
	var v template.Vars
	for _, n := range templateNames {
		n.fill(&v, d)
	}
	return v
}

// explain says why a reference has no value at d's place: what the commit
// has under its name, or which names it has there.
func explain(d templateDecl, ref string) string {
	root, _, _ := strings.Cut(ref, ".")
	var has []string
	says, known := "", false
	for _, n := range templateNames {
		var scratch template.Vars
		ok, s := n.fill(&scratch, d)
		if ok {
			has = append(has, n.name)
		}
		if n.name == root {
			says, known = s, true
		}
	}
	switch {
	case says != "":
		return says
	case known:
		return fmt.Sprintf("%s has no %s; it has %s", d.place.what(), root, strings.Join(has, ", "))
	case root == "secret" || root == "secrets" || root == "credential" || root == "env":
		return "templates cannot read secrets or the environment; the credential is sent by the upstream's credential block"
	}
	return "unknown template reference"
}

// checkTemplate renders t as the commit would (render), and when that
// fails, or leaves a {{ it does not read as a reference, reports each
// string of t at fault with its own path: every reference the commit has
// no value for, said with what it has.
func checkTemplate(l *errList, d templateDecl, t any, where []string, render func(template.Vars, any) error) {
	v := commitVars(d)
	if render(v, t) == nil && !hasUnread(t) {
		return
	}
	walkTemplate(t, where, func(s string, at []string) {
		for _, ref := range template.Refs(s) {
			if !v.Has(ref) {
				l.add(fmt.Sprintf("{{%s}}: %s", ref, explain(d, ref)), at...)
			}
		}
		if rest := template.Strip(s); strings.Contains(rest, "{{") {
			frag := rest[strings.Index(rest, "{{"):]
			if end := strings.Index(frag, "}}"); end >= 0 {
				frag = frag[:end+2]
			}
			l.add(fmt.Sprintf("%s: not a reference a template can read (a name in lower case, its steps joined by dots: {{before.status}})", frag), at...)
		}
	})
}

// hasUnread reports whether a string of t holds a {{ that is not part of a
// reference: the renderer would send it as text.
func hasUnread(t any) bool {
	unread := false
	walkTemplate(t, nil, func(s string, _ []string) {
		unread = unread || strings.Contains(template.Strip(s), "{{")
	})
	return unread
}

// walkTemplate calls fn with every string of a template value and the path
// (of keys and list indexes, after where) that leads to it.
func walkTemplate(t any, where []string, fn func(s string, at []string)) {
	switch x := t.(type) {
	case string:
		fn(x, where)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			walkTemplate(x[k], append(append([]string(nil), where...), k), fn)
		}
	case []any:
		for i, e := range x {
			walkTemplate(e, append(append([]string(nil), where...), strconv.Itoa(i)), fn)
		}
	}
}

// renderValue renders a body, variables, header or effect template as the
// commit does.
func renderValue(v template.Vars, t any) error {
	_, err := v.Render(t)
	return err
}

// renderPath renders a path template (and its query) as the commit does.
func renderPath(v template.Vars, t any) error {
	s, _ := t.(string)
	_, _, err := v.RenderURL(s)
	return err
}

// effectFields lists the fields an action's effect changes, sorted.
func effectFields(a *ActionConfig) []string {
	var out []string
	for _, e := range a.Effect {
		if !slices.Contains(out, e.Field) {
			out = append(out, e.Field)
		}
	}
	slices.Sort(out)
	return out
}

// fieldPlaceholders holds a placeholder of each field's declared type.
func fieldPlaceholders(r *ResourceConfig, fields []string) map[string]any {
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = placeholder(r.Fields[f])
	}
	return out
}

// effectPlaceholders holds what a batch's after holds for each effect: the
// field's value for a set, the element an add or a remove names.
func effectPlaceholders(r *ResourceConfig, effect []EffectConfig) map[string]any {
	out := make(map[string]any, len(effect))
	for _, e := range effect {
		fd := r.Fields[e.Field]
		if e.PerTarget() && fd != nil {
			fd = &FieldConfig{Type: fd.Elements}
		}
		out[e.Field] = placeholder(fd)
	}
	return out
}

// placeholder stands for a value of the field's declared type.
func placeholder(fd *FieldConfig) any {
	if fd == nil {
		return "x"
	}
	switch fd.Type {
	case "integer":
		return json.Number("1")
	case "number":
		return json.Number("1.5")
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

// jsonString is a decoded JSON value that is a string, or "".
func jsonString(v any) string {
	s, _ := v.(string)
	return s
}

// asList is a decoded JSON value that is an array, or nil.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
