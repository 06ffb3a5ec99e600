package draft

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-mcp/airlock/config"
)

// versionBodyNames are request body properties that carry the version a
// write expects.
var versionBodyNames = map[string]bool{"expected_version": true, "if_version": true, "version": true, "lock_version": true, "etag": true}

// itemActions drafts an action for each write on the list's item path:
// PATCH, PUT and DELETE on /things/{id}, POST on /things/{id}/verb.
func itemActions(t *openapi3.T, listPath string, r *resourceDraft) []*actionDraft {
	itemPath, param := itemPathOf(t, listPath)
	if itemPath == "" {
		return nil
	}
	var out []*actionDraft
	for _, p := range slices.Sorted(slices.Values(t.Paths.Keys())) {
		if p != itemPath && !(strings.HasPrefix(p, itemPath+"/") && !strings.Contains(p[len(itemPath)+1:], "/") && !strings.Contains(p[len(itemPath)+1:], "{")) {
			continue
		}
		item := t.Paths.Value(p)
		verb := strings.TrimPrefix(strings.TrimPrefix(p, itemPath), "/")
		for _, m := range []struct {
			method string
			op     *openapi3.Operation
		}{{http.MethodPatch, item.Patch}, {http.MethodPut, item.Put}, {http.MethodPost, item.Post}, {http.MethodDelete, item.Delete}} {
			if m.op == nil || (m.method == http.MethodPost && verb == "") {
				continue
			}
			out = append(out, action(r, item, m.method, parentParams(p, param), verb, m.op))
		}
	}
	return out
}

// templateName is a name a template's step can hold.
var templateName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

func action(r *resourceDraft, item *openapi3.PathItem, method, path, verb string, op *openapi3.Operation) *actionDraft {
	a := &actionDraft{resource: r.name, method: method, path: path, approval: "client"}
	switch {
	case op.OperationID != "":
		a.name = snake(op.OperationID)
	case verb != "":
		a.name = snake(verb) + "_" + singular(r.name)
	case method == http.MethodDelete:
		a.name = "delete_" + singular(r.name)
	default:
		a.name = "update_" + singular(r.name)
	}
	a.description = firstSentence(op.Summary)
	if a.description == "" {
		a.description = firstSentence(op.Description)
	}
	fields := map[string]bool{}
	for _, f := range r.fields {
		fields[f.name] = true
	}
	headers := headerParams(item, op)
	if headers["idempotency-key"] != nil {
		a.idempotency = headers["idempotency-key"].Name
	}
	body := (*openapi3.Schema)(nil)
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		body = mediaSchema(op.RequestBody.Value.Content)
	}
	var versionProp string
	props := map[string]any{}
	for _, name := range sortedProps(body) {
		ps := resolve(body.Properties[name])
		if ps == nil {
			continue
		}
		if versionBodyNames[snake(name)] && r.versionFld != "" && !config.IsTodo(r.versionFld) {
			versionProp = name
			a.body = append(a.body, [2]string{name, quote("{{version}}")})
			continue
		}
		if !templateName.MatchString(name) {
			// {{params.NAME}} takes letters, digits and _: a property the
			// template language cannot name (OData's @odata.type) is left
			// for a person to write, never drafted as a template that
			// renders as text.
			a.notes = append(a.notes, fmt.Sprintf("body property %q cannot be named in a template ({{params.NAME}} takes letters, digits and _): it is not drafted", name))
			continue
		}
		props[name] = paramSchema(ps, name, &a.notes)
		a.body = append(a.body, [2]string{name, quote("{{params." + name + "}}")})
		if fields[snake(name)] {
			a.effect = append(a.effect, [2]string{snake(name), quote("{{params." + name + "}}")})
		}
	}
	if len(props) > 0 {
		names := make([]any, 0, len(props))
		for _, k := range slices.Sorted(maps.Keys(props)) {
			names = append(names, k)
		}
		a.params = map[string]any{"type": "object", "properties": props, "required": names, "additionalProperties": false}
		a.notes = append(a.notes, "every body property is a required parameter: remove the ones this action does not set")
	}
	switch {
	case headers["if-match"] != nil && r.versionFld != "":
		a.conditional = config.CondIfMatch
		a.headers = append(a.headers, [2]string{headers["if-match"].Name, quote("{{version}}")})
		a.condNote = "the operation declares If-Match: the write carries the item's version"
	case headers["if-match"] != nil:
		a.conditional = config.Todo("if_match needs a version_field on the items; or reread")
	case versionProp != "":
		a.conditional = config.CondVersion
		a.condNote = "the body carries the expected version (" + versionProp + ")"
	case r.get != nil:
		a.conditional = config.CondReread
		a.condNote = "no If-Match or version in the request: the target is re-read and compared before the write"
	default:
		a.conditional = config.Todo("if_match, version or reread; the API shows no condition and no GET by id")
	}
	if method == http.MethodDelete {
		a.destructive, a.approval = true, "operator"
		if !config.IsTodo(r.idField) {
			a.effect = [][2]string{{r.idField, "null"}}
			a.effectNote = "a delete's effect is the record's absence, shown as its id becoming null"
		}
	}
	if len(a.effect) == 0 {
		// What the write changes is not in the document's words: the
		// action is written commented out, for a person to complete,
		// rather than drafted around a guess.
		a.commented = true
		a.effect = [][2]string{{config.Todo("the field this action changes"), quote(config.Todo("its value after the write"))}}
	}
	if config.IsTodo(a.conditional) {
		// No condition can be derived (no If-Match, no version, no GET
		// by id): such a write is never sent unconditionally.
		a.commented = true
	}
	return a
}

// paramSchema keeps the parts of a body property's schema that a caller's
// argument is checked against.
func paramSchema(s *openapi3.Schema, name string, notes *[]string) map[string]any {
	out := map[string]any{}
	typ := "string"
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != "null" {
				typ = t
			}
		}
	}
	if s.Nullable || isType(s, "null") {
		out["type"] = []any{typ, "null"}
	} else {
		out["type"] = typ
	}
	if len(s.Enum) > 0 {
		out["enum"] = s.Enum
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			// A pattern written for another regex engine (JavaScript's
			// lookahead): airlock checks arguments with Go's.
			*notes = append(*notes, fmt.Sprintf("%s's pattern %q is left out: Go's regular expressions cannot read it", name, s.Pattern))
		} else {
			out["pattern"] = s.Pattern
		}
	}
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	if typ == "array" && s.Items != nil {
		if is := resolve(s.Items); is != nil {
			out["items"] = paramSchema(is, name+"[]", notes)
		}
	}
	return out
}

func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "ies"):
		return strings.TrimSuffix(s, "ies") + "y"
	case strings.HasSuffix(s, "ses"):
		return strings.TrimSuffix(s, "es")
	case strings.HasSuffix(s, "s"):
		return strings.TrimSuffix(s, "s")
	}
	return s
}
