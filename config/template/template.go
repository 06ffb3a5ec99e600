// Package template is the template language of actions: the
// {{references}} a write's path, headers, body, variables and effect are
// written with, and their rendering from the values a commit has (Vars). A
// reference is a name in lower case, its steps joined by dots
// ({{before.status}}); one without a value is an error, never empty text.
//
// It must never read a secret or the environment (no reference names
// them), or depend on the configuration that holds the templates.
package template

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
)

// Vars are the values a write template may use. A name whose value is
// absent or empty has none: a template naming it is not rendered (airlock
// check renders every template with the data a commit fills in at its
// place).
type Vars struct {
	ID string
	// IDValue is the id in its declared type (a number for an integer id
	// field), for a template that is exactly {{id}} (a JSON body, a
	// GraphQL variable); in a path or inside text the id is a string.
	IDValue any
	Version string
	// VersionValue is the version in its declared type (a number for an
	// integer version field), as the upstream expects it back.
	VersionValue any
	Params       map[string]any
	Before       map[string]any
	After        map[string]any
	Restore      map[string]any
	// Record is the target's whole record as the upstream holds it (read
	// right before the write) with the effect applied, in the API's own
	// shape and encoding, its version member included: {{after}}, for an
	// API that replaces a whole record on PUT (CouchDB).
	Record      map[string]any
	OperationID string
	Targets     []map[string]any
	// Each is a bulk body's per-target objects (bulk.each rendered per
	// target).
	Each []any
}

// WholeRecord reports whether a template sends the target's whole record
// ({{after}}): the write then needs the record read right before it.
func WholeRecord(t any) bool {
	switch x := t.(type) {
	case string:
		for _, m := range tmplRef.FindAllStringSubmatch(x, -1) {
			if m[1] == "after" {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if WholeRecord(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if WholeRecord(e) {
				return true
			}
		}
	}
	return false
}

var tmplRef = regexp.MustCompile(`\{\{\s*([a-z_]+(?:\.[A-Za-z0-9_]+)*)\s*\}\}`)

// Refs lists the names of the references in s, in order ("before.status"
// for {{before.status}}).
func Refs(s string) []string {
	var out []string
	for _, m := range tmplRef.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Strip is s without its references: what of it is sent as written. A
// {{ left in it is text the renderer does not read as a reference.
func Strip(s string) string { return tmplRef.ReplaceAllString(s, "") }

// Has reports whether the reference named ref has a value in v, so that a
// template naming it renders.
func (v Vars) Has(ref string) bool {
	_, ok := v.lookup(ref)
	return ok
}

func (v Vars) lookup(ref string) (any, bool) {
	if ref == "after" {
		return v.Record, v.Record != nil
	}
	parts := strings.SplitN(ref, ".", 2)
	switch parts[0] {
	case "id":
		// An empty id is none: nothing names the target.
		if v.IDValue != nil {
			return v.IDValue, true
		}
		return v.ID, v.ID != ""
	case "version":
		if v.VersionValue != nil {
			return v.VersionValue, true
		}
		return v.Version, v.Version != ""
	case "operation_id":
		return v.OperationID, v.OperationID != ""
	case "targets":
		// Only a bulk request has targets: elsewhere the list is absent,
		// never empty.
		if v.Targets == nil {
			return nil, false
		}
		out := make([]any, len(v.Targets))
		for i, t := range v.Targets {
			out[i] = t
		}
		return out, true
	case "each":
		if v.Each == nil {
			return nil, false
		}
		return v.Each, true
	case "ids":
		if v.Targets == nil {
			return nil, false
		}
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
	x, ok := jsonvalue.Get(m, parts[1])
	return x, ok
}

// Render fills a template value: a string that is exactly one reference
// takes the referenced value with its type; references inside a longer
// string are formatted as text. Unknown references are errors.
func (v Vars) Render(t any) (any, error) {
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
			return jsonvalue.String(val)
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
func (v Vars) RenderPath(p string) (string, error) {
	var err error
	out := tmplRef.ReplaceAllStringFunc(p, func(s string) string {
		ref := tmplRef.FindStringSubmatch(s)[1]
		val, ok := v.lookup(ref)
		if !ok {
			err = fmt.Errorf("template reference %q has no value", ref)
			return ""
		}
		return url.PathEscape(jsonvalue.String(val))
	})
	return out, err
}
