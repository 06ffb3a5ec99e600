// Package draft writes a first configuration for an HTTP API, from an
// OpenAPI 3.0 or 3.1 document or from a sample of the live list endpoint:
// `airlock init`. The output is deterministic, commented YAML in the shape
// docs/config.md describes.
//
// It must never present a guess as a fact: what it cannot decide it writes
// as a TODO(...) value, which `airlock check` and every command that runs
// the configuration refuse until a person resolves it. It never writes a
// credential's value, only the environment variable that holds it.
package draft

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/airlock-mcp/airlock/config"
)

// Options shape a draft.
type Options struct {
	// BaseURL overrides the document's servers (or the sample's origin).
	BaseURL string
	// Resources drafts only these resources, each named by its drafted
	// name or its list path (/v1/customers); with Tags, the union. Empty
	// (and no Tags) drafts the few list operations the document describes
	// best. A name or path no list operation has is an error.
	Resources []string
	// Tags drafts the list operations carrying one of these tags.
	Tags []string
	// Environment names the environment; empty leaves a TODO.
	Environment string
	// Source is named in the header comment (a file name or URL).
	Source string
	// Location is where the OpenAPI document was read from: external
	// $refs to files resolve against it. Empty refuses them.
	Location string
	// RemoteRefs lets external $refs to http(s) URLs be fetched; without
	// it, such a document is refused naming the reference.
	RemoteRefs bool
}

// Draft is a drafted configuration.
type Draft struct {
	// YAML is the configuration file.
	YAML []byte
	// TODOs are the decisions left to a person, in file order.
	TODOs []string
	// Warnings are the document's flaws the draft was made despite
	// (conflicting paths, schemas that do not validate, a conversion from
	// Swagger 2.0): each is also a comment at the top of the YAML.
	Warnings []string
}

// draftConfig is what a draft holds before it is written out.
type draftConfig struct {
	source      string
	environment string
	upstream    upstreamDraft
	resources   []*resourceDraft
	actions     []*actionDraft
	notes       []string // header comments: what was left out and why
	warnings    []string // the document's flaws
}

type upstreamDraft struct {
	name     string
	baseURL  string
	baseNote string
	cred     *credDraft
	credNote string
	// jsonTypes are media types the sample answered JSON in besides
	// application/json and +json (json_media_types).
	jsonTypes []string
}

type credDraft struct {
	env    string
	header string // "" = Authorization
	scheme *string
	// query, basic (user and env the password) and oauth: see credential.go.
	query string
	user  string
	basic bool
	oauth *oauthDraft
	// sigv4: AWS Signature Version 4 for region and service, the keys
	// read from AWS's usual variables.
	sigv4 *SampleSigV4
}

type resourceDraft struct {
	name        string
	description string
	path        string
	params      [][2]string
	method      string      // POST for a list asked by POST ("" is GET)
	body        string      // a POST list's body, as a JSON (YAML flow) object
	headers     [][2]string // the list's own headers (an operation named in X-Amz-Target)
	encoding    string      // item_encoding: how the items' values are written (dynamodb)
	graphql     string      // the list's query document (dialect graphql)
	items       string
	scalarField string
	itemsNote   string
	pagination  [][2]string // ordered key/value pairs, values already YAML
	pageNote    []string
	idField     string
	versionFld  string
	versionNote string
	fields      []*fieldDraft
	filters     []*filterDraft
	filterNotes []string
	get         *getDraft
	notes       []string
}

type getDraft struct{ path, item, note string }

type fieldDraft struct {
	name        string
	path        string
	typ         string
	elements    string // an array's element type, when every element has one
	nullable    bool
	enum        []string
	format      string
	layout      string
	nullValues  []string
	sensitive   bool
	required    bool
	description string
	note        string
}

type filterDraft struct {
	name, field, param, op, multi string
	note                          string
}

type actionDraft struct {
	name         string
	resource     string
	description  string
	method, path string
	headers      [][2]string
	body         [][2]string // key -> template (YAML value)
	params       map[string]any
	conditional  string
	condNote     string
	effect       [][2]string // field -> to (YAML value)
	effectNote   string
	idempotency  string
	destructive  bool
	approval     string
	notes        []string
	// commented writes the action as comments: its effect is not in the
	// document, and a person completes it.
	commented bool
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// snake turns an identifier (camelCase, kebab-case, words) into
// snake_case the way a person would write it: an acronym stays one word,
// with its plural (APIs is apis, OutboundIPs is outbound_ips), and a sign
// before a number is spelled (+1 is plus_1, -1 is minus_1), so that
// reactions.+1 and reactions.-1 keep distinct names.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	isLower := func(i int) bool { return i >= 0 && i < len(rs) && unicode.IsLower(rs[i]) }
	isUpper := func(i int) bool { return i >= 0 && i < len(rs) && unicode.IsUpper(rs[i]) }
	for i, r := range rs {
		switch {
		case (r == '+' || r == '-') && i+1 < len(rs) && unicode.IsDigit(rs[i+1]) && (i == 0 || !unicode.IsLetter(rs[i-1]) && !unicode.IsDigit(rs[i-1])):
			if r == '+' {
				b.WriteString("_plus_")
			} else {
				b.WriteString("_minus_")
			}
			continue
		case unicode.IsUpper(r):
			// A word starts at an upper-case letter after a lower-case one
			// or a digit, and at the last capital of an acronym that a
			// lower-case word follows (HTTPServer: http_server), but not
			// before the plural s of an acronym (APIs, IPs).
			acronymPlural := isUpper(i-1) && i+1 < len(rs) && rs[i+1] == 's' && !isLower(i+2)
			if i > 0 && (isLower(i-1) || unicode.IsDigit(rs[i-1]) || (isLower(i+1) && isUpper(i-1) && !acronymPlural)) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	out := nonWord.ReplaceAllString(b.String(), "_")
	return strings.Trim(out, "_")
}

// envName is an environment variable name for an upstream's credential.
func envName(upstreamName string) string {
	return strings.ToUpper(snake(upstreamName)) + "_TOKEN"
}

// render writes the configuration as commented YAML and collects the
// TODOs it holds.
func (c *draftConfig) render() *Draft {
	w := &writer{}
	w.comment(0, "airlock configuration drafted by `airlock init`"+fromSource(c.source)+".")
	w.comment(0, "Read it through: every guess is commented. A value reading TODO and what to decide is a decision")
	w.comment(0, "left to you; `airlock check` refuses the file until none is left. Then run")
	w.comment(0, "`airlock probe --config FILE` to check each assumption against the live API.")
	w.comment(0, "Reference: docs/config.md.")
	for _, n := range c.notes {
		w.comment(0, n)
	}
	if len(c.warnings) > 0 {
		what := "warning"
		if len(c.warnings) > 1 {
			what = "warnings"
		}
		w.comment(0, fmt.Sprintf("%d %s about the document; the draft keeps what could be read:", len(c.warnings), what))
		for i, n := range c.warnings {
			if i == maxWarnings {
				w.comment(0, fmt.Sprintf("  ... and %d more", len(c.warnings)-maxWarnings))
				break
			}
			w.comment(0, "  "+n)
		}
	}
	w.kv(0, "environment", quote(c.environment), "shown beside every answer (scope.environment)")
	w.line(0, "upstreams:")
	u := c.upstream
	w.line(1, u.name+":")
	w.kv(2, "base_url", quote(u.baseURL), u.baseNote)
	if u.cred != nil {
		if u.credNote != "" {
			w.comment(2, u.credNote)
		}
		u.cred.render(w)
	} else if u.credNote != "" {
		w.comment(2, u.credNote)
	}
	if len(u.jsonTypes) > 0 {
		w.kv(2, "json_media_types", "["+strings.Join(u.jsonTypes, ", ")+"]", "the sample answered JSON in this type")
	}
	w.kv(2, "timeout", "10s", "")
	w.line(0, "resources:")
	for i, r := range c.resources {
		if i > 0 {
			w.blank()
		}
		r.render(w, u.name)
	}
	var drafted, commented []*actionDraft
	for _, a := range c.actions {
		if a.commented {
			commented = append(commented, a)
		} else {
			drafted = append(drafted, a)
		}
	}
	if len(drafted) > 0 {
		w.line(0, "actions:")
		for i, a := range drafted {
			if i > 0 {
				w.blank()
			}
			a.render(w)
		}
	}
	if len(commented) > 0 {
		w.blank()
		w.comment(0, "Writes the document shows whose effect on the item, or whose condition, it does not establish: each is left")
		w.comment(0, "commented out, never drafted around a guess.")
		w.comment(0, "To use one, uncomment it (under actions:) and complete its TODOs.")
		for _, a := range commented {
			sub := &writer{}
			a.render(sub)
			for _, line := range strings.Split(strings.TrimRight(sub.b.String(), "\n"), "\n") {
				w.b.WriteString("# " + line + "\n")
			}
		}
	}
	return &Draft{YAML: []byte(w.b.String()), TODOs: w.todos, Warnings: c.warnings}
}

func fromSource(s string) string {
	if s == "" {
		return ""
	}
	return " from " + s
}

func (r *resourceDraft) render(w *writer, upstreamName string) {
	for _, n := range r.notes {
		w.comment(1, n)
	}
	w.line(1, quote(r.name)+":")
	w.kv(2, "upstream", upstreamName, "")
	if r.description != "" {
		w.kv(2, "description", quote(r.description), "")
	}
	w.line(2, "list:")
	w.kv(3, "path", quote(r.path), "")
	if len(r.params) > 0 {
		var parts []string
		for _, p := range r.params {
			parts = append(parts, quote(p[0])+": "+quote(p[1]))
		}
		w.kv(3, "params", "{"+strings.Join(parts, ", ")+"}", "always sent")
	}
	if r.method != "" {
		w.kv(3, "method", r.method, "")
		w.kv(3, "body", r.body, "the sample's body, less what pages it")
	}
	if len(r.headers) > 0 {
		var parts []string
		for _, h := range r.headers {
			parts = append(parts, quote(h[0])+": "+quote(h[1]))
		}
		w.kv(3, "headers", "{"+strings.Join(parts, ", ")+"}", "sent as the sample sent them")
	}
	if r.graphql != "" {
		w.kv(3, "graphql", quote(r.graphql), "")
	} else {
		w.kv(3, "items", quote(r.items), r.itemsNote)
	}
	if r.scalarField != "" {
		w.kv(3, "scalar_item_field", quote(r.scalarField), "each item is a plain value, read as {"+r.scalarField+": value}")
	}
	for _, n := range r.pageNote {
		w.comment(2, n)
	}
	var parts []string
	for _, p := range r.pagination {
		parts = append(parts, p[0]+": "+p[1])
	}
	w.kv(2, "pagination", "{"+strings.Join(parts, ", ")+"}", "")
	if r.encoding != "" {
		w.kv(2, "item_encoding", r.encoding, "every attribute of the sampled items is a typed value ({\"S\": \"x\"}): fields read through it")
	}
	w.kv(2, "id_field", quote(r.idField), "each item's stable id")
	if r.versionFld != "" {
		w.kv(2, "version_field", quote(r.versionFld), r.versionNote)
	} else if r.versionNote != "" {
		w.comment(2, r.versionNote)
	}
	w.line(2, "fields:")
	if len(r.fields) == 0 {
		w.kv(3, quote(config.Todo("the items' schema names no field: declare the fields airlock may read")), "{type: string}", "")
	}
	for _, f := range r.fields {
		w.kv(3, quote(f.name), f.flow(), f.note)
	}
	if len(r.filters) > 0 || len(r.filterNotes) > 0 {
		for _, n := range r.filterNotes {
			w.comment(2, n)
		}
	}
	if len(r.filters) > 0 {
		w.line(2, "filters:")
		for _, f := range r.filters {
			w.kv(3, quote(f.name), f.flow(), f.note)
		}
	}
	if r.get != nil {
		v := "{path: " + quote(r.get.path)
		if r.get.item != "" {
			v += ", item: " + quote(r.get.item)
		}
		note := "read one item by id: re-reads before and after writes"
		if r.get.note != "" {
			note += "; " + r.get.note
		}
		w.kv(2, "get", v+"}", note)
	}
}

func (f *fieldDraft) flow() string {
	var parts []string
	if f.path != "" && f.path != f.name {
		parts = append(parts, "path: "+quote(f.path))
	}
	parts = append(parts, "type: "+f.typ)
	if f.elements != "" {
		parts = append(parts, "elements: "+f.elements)
	}
	if f.nullable {
		parts = append(parts, "nullable: true")
	}
	if len(f.nullValues) > 0 {
		var vs []string
		for _, v := range f.nullValues {
			vs = append(vs, quote(v))
		}
		parts = append(parts, "null_values: ["+strings.Join(vs, ", ")+"]")
	}
	if len(f.enum) > 0 {
		var vs []string
		for _, v := range f.enum {
			vs = append(vs, quote(v))
		}
		parts = append(parts, "enum: ["+strings.Join(vs, ", ")+"]")
	}
	if f.format != "" {
		parts = append(parts, "format: "+quote(f.format))
	}
	if f.layout != "" {
		parts = append(parts, "layout: "+quote(f.layout))
	}
	if f.required {
		parts = append(parts, "required: true")
	}
	if f.sensitive {
		parts = append(parts, "sensitive: true")
	}
	if f.description != "" {
		parts = append(parts, "description: "+quote(f.description))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (f *filterDraft) flow() string {
	var parts []string
	if f.field != "" && f.field != f.name {
		parts = append(parts, "field: "+quote(f.field))
	}
	if f.param != "" {
		parts = append(parts, "param: "+quote(f.param))
	}
	if f.op != "" {
		parts = append(parts, "op: "+f.op)
	}
	if f.multi != "" {
		parts = append(parts, "multi: "+f.multi)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (a *actionDraft) render(w *writer) {
	for _, n := range a.notes {
		w.comment(1, n)
	}
	w.line(1, quote(a.name)+":")
	w.kv(2, "resource", quote(a.resource), "")
	if a.description != "" {
		w.kv(2, "description", quote(a.description), "")
	}
	if a.destructive {
		w.kv(2, "destructive", "true", "")
	}
	w.line(2, "request:")
	w.kv(3, "method", a.method, "")
	w.kv(3, "path", quote(a.path), "")
	if len(a.headers) > 0 {
		var parts []string
		for _, h := range a.headers {
			parts = append(parts, quote(h[0])+": "+h[1])
		}
		w.kv(3, "headers", "{"+strings.Join(parts, ", ")+"}", "")
	}
	if len(a.body) > 0 {
		var parts []string
		for _, b := range a.body {
			parts = append(parts, quote(b[0])+": "+b[1])
		}
		w.kv(3, "body", "{"+strings.Join(parts, ", ")+"}", "")
	}
	if len(a.params) > 0 {
		w.kv(2, "params", flowJSON(a.params), "the arguments an agent passes, as a JSON Schema")
	}
	w.comment(2, "precondition: the records this action may touch, e.g. [{field: status, op: eq, value: active}]")
	w.kv(2, "conditional", quote(a.conditional), a.condNote)
	if a.effectNote != "" {
		w.comment(2, a.effectNote)
	}
	var parts []string
	for _, e := range a.effect {
		parts = append(parts, "{field: "+quote(e[0])+", to: "+e[1]+"}")
	}
	w.kv(2, "effect", "["+strings.Join(parts, ", ")+"]", "")
	if a.idempotency != "" {
		w.kv(2, "idempotency_header", quote(a.idempotency), "a key derived from (operation, target)")
	}
	w.kv(2, "approval", "{mode: "+a.approval+"}", approvalNote(a))
}

func approvalNote(a *actionDraft) string {
	if a.approval == "operator" {
		return "a person approves outside the agent's channel (airlock approve)"
	}
	return "the MCP client asks the user; raise to operator for anything irreversible"
}

// flowJSON writes a JSON-like value as a YAML flow value with sorted keys.
func flowJSON(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, quote(k)+": "+flowJSON(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, flowJSON(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		var parts []string
		for _, e := range x {
			parts = append(parts, quote(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		return quote(x)
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(x)
	case float64:
		return fmt.Sprint(x)
	case int:
		return fmt.Sprint(x)
	case uint64:
		return fmt.Sprint(x)
	}
	return quote(fmt.Sprint(v))
}

var plainSafe = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./-]*$`)

var yamlWords = map[string]bool{"true": true, "false": true, "null": true, "yes": true, "no": true, "on": true, "off": true, "y": true, "n": true, "~": true}

// quote writes a string as a YAML scalar that reads back as the same
// string in block and flow context alike: plain when that is safe, else
// double-quoted (a JSON string is a valid YAML double-quoted scalar).
func quote(s string) string {
	if plainSafe.MatchString(s) && !yamlWords[strings.ToLower(s)] {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writer builds the YAML text line by line.
type writer struct {
	b     strings.Builder
	todos []string
}

func (w *writer) line(indent int, s string) {
	w.b.WriteString(strings.Repeat("  ", indent))
	w.b.WriteString(s)
	w.b.WriteByte('\n')
	w.collect(s)
}

func (w *writer) blank() { w.b.WriteByte('\n') }

// kv writes key: value with an optional trailing comment.
func (w *writer) kv(indent int, key, value, note string) {
	s := key + ": " + value
	if note != "" {
		s += "  # " + note
	}
	w.line(indent, s)
}

func (w *writer) comment(indent int, s string) {
	w.b.WriteString(strings.Repeat("  ", indent))
	w.b.WriteString("# " + s + "\n")
}

// collect records each TODO(...) written on a line.
func (w *writer) collect(s string) {
	for {
		i := strings.Index(s, config.TodoPrefix)
		if i < 0 {
			return
		}
		rest := s[i:]
		end := strings.Index(rest, ")")
		if end < 0 {
			w.todos = append(w.todos, rest)
			return
		}
		w.todos = append(w.todos, rest[:end+1])
		s = rest[end+1:]
	}
}
