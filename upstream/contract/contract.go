package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.yaml.in/yaml/v3"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// Violation is one record breaking its contract.
type Violation struct {
	Field string
	// Rule is the broken rule: required, type, enum, format, null,
	// alias_conflict or invariant.
	Rule string
	// Decision is true when the field drives a decision: the record cannot
	// be used for one.
	Decision bool
	// Invariant describes a broken cross-field rule.
	Invariant string
}

// Describe says what broke in operational language.
func (v Violation) Describe() string {
	switch v.Rule {
	case "required":
		return "field " + v.Field + " missing"
	case "type":
		return "field " + v.Field + " has another type than declared"
	case "enum":
		return "field " + v.Field + " has a value outside its declared set"
	case "format":
		return "field " + v.Field + " does not have its declared format"
	case "null":
		return "field " + v.Field + " is null"
	case RuleDuplicateMember:
		return "field " + v.Field + " is named twice in the record"
	case "alias_conflict":
		return "field " + v.Field + " and its alias disagree"
	case "invariant":
		return "invariant broken: " + v.Invariant
	}
	return "field " + v.Field + " breaks its contract (" + v.Rule + ")"
}

// Contract checks items of one shape.
type Contract struct {
	schema     *jsonschema.Schema
	fields     map[string]*config.FieldConfig // by name
	paths      map[string]string              // path -> field name
	invariants []config.InvariantConfig
	decision   map[string]bool
	resource   *dialect.List // for rule evaluation (paths, normalization)
	// aliased lists the fields that have aliases, sorted.
	aliased []string
	// fast proves a document valid without the JSON Schema validator; nil
	// when the schema uses more than fastSchema understands (an external
	// schema file or OpenAPI document always goes through the validator).
	fast *fastSchema
}

// Compile builds a resource's contract: the declared fields as a
// JSON Schema (or the configured external schema).
func Compile(r *dialect.List, fields map[string]*config.FieldConfig, invariants []config.InvariantConfig, ext *config.ContractConfig, baseDir string) (*Contract, error) {
	c := &Contract{fields: fields, paths: map[string]string{}, invariants: invariants, decision: map[string]bool{}, resource: r}
	for name, f := range fields {
		if f == nil {
			continue
		}
		path := name
		if f.Path != "" {
			path = f.Path
		}
		c.paths[path] = name
		if f.Decision || f.Permission {
			c.decision[name] = true
		}
		if len(f.Aliases) > 0 {
			c.aliased = append(c.aliased, name)
		}
	}
	sort.Strings(c.aliased)
	for _, inv := range invariants {
		c.decision[inv.If.Field], c.decision[inv.Then.Field] = true, true
	}
	var doc []byte
	var ptr string
	var err error
	switch {
	case ext != nil && ext.Schema != "":
		doc, err = os.ReadFile(resolvePath(baseDir, ext.Schema))
		if err != nil {
			return nil, fmt.Errorf("contract schema: %w", err)
		}
	case ext != nil && ext.OpenAPI != nil:
		doc, err = openAPIDocument(resolvePath(baseDir, ext.OpenAPI.File))
		if err != nil {
			return nil, err
		}
		ptr = "#/components/schemas/" + ext.OpenAPI.Component
	default:
		doc, err = json.Marshal(fieldsSchema(fields))
		if err != nil {
			return nil, err
		}
	}
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	comp.AssertFormat = true
	url := "mem://airlock/contract.json"
	if err := comp.AddResource(url, bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	if c.schema, err = comp.Compile(url + ptr); err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	if ext == nil {
		c.fast = compileFastSchema(doc)
	}
	return c, nil
}

func resolvePath(baseDir, p string) string {
	if filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	return filepath.Join(baseDir, p)
}

// openAPIDocument reads an OpenAPI document as JSON, turning 3.0's
// `nullable: true` into a null type so that 2020-12 validation means the
// same thing.
func openAPIDocument(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("openapi document: %w", err)
	}
	doc = config.NormalizeValue(doc)
	var fix func(v any)
	fix = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if n, ok := x["nullable"].(bool); ok && n {
				if t, ok := x["type"].(string); ok {
					x["type"] = []any{t, "null"}
				}
				if e, ok := x["enum"].([]any); ok {
					x["enum"] = append(e, nil)
				}
				delete(x, "nullable")
			}
			for _, e := range x {
				fix(e)
			}
		case []any:
			for _, e := range x {
				fix(e)
			}
		}
	}
	fix(doc)
	return json.Marshal(doc)
}

var jsonTypes = map[string]string{"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
	"array": "array", "object": "object", "timestamp": "string"}

// fieldsSchema compiles declared fields into a 2020-12 schema; a field's
// path nests it.
func fieldsSchema(fields map[string]*config.FieldConfig) map[string]any {
	root := map[string]any{"type": "object", "properties": map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		if f == nil {
			continue
		}
		path := name
		if f.Path != "" {
			path = f.Path
		}
		parts := strings.Split(path, ".")
		node := root
		for _, p := range parts[:len(parts)-1] {
			props := node["properties"].(map[string]any)
			child, ok := props[p].(map[string]any)
			if !ok {
				child = map[string]any{"type": "object", "properties": map[string]any{}}
				setStep(node, p, child)
			}
			if _, ok := child["properties"].(map[string]any); !ok {
				// An object field declared whole (metadata) beside a field
				// inside it (metadata.uid).
				child["properties"] = map[string]any{}
			}
			if f.Required || f.Permission {
				addRequired(node, p)
			}
			node = child
		}
		leaf := parts[len(parts)-1]
		s := map[string]any{}
		types := []any{jsonTypes[f.Type]}
		if f.Permission {
			types = []any{"boolean"}
		}
		if f.Nullable && !f.Permission {
			types = append(types, "null")
		}
		s["type"] = types
		if len(f.Enum) > 0 {
			e := make([]any, 0, len(f.Enum)+1)
			for _, v := range f.Enum {
				e = append(e, v)
			}
			if f.Nullable {
				e = append(e, nil)
			}
			s["enum"] = e
		}
		switch {
		case f.Format != "":
			s["format"] = f.Format
		case f.Type == "timestamp":
			s["format"] = "date-time"
		}
		if prev, ok := node["properties"].(map[string]any)[leaf].(map[string]any); ok && prev["properties"] != nil {
			// Fields inside this one were declared first: keep them.
			for _, k := range []string{"properties", "required", "prefixItems", "minItems"} {
				if v, ok := prev[k]; ok {
					s[k] = v
				}
			}
			if prev["prefixItems"] != nil {
				allowArray(s)
			}
		}
		setStep(node, leaf, s)
		if f.Required || f.Permission {
			addRequired(node, leaf)
		}
	}
	return root
}

// setStep places a step's schema in its parent's: as a member of an
// object, and, for a step that is an element's index (custom_fields.1),
// also as that element of an array, since a field's path is read through
// either (jsonvalue.Get). A required index asks for that many elements.
func setStep(node map[string]any, step string, s map[string]any) {
	node["properties"].(map[string]any)[step] = s
	i, err := strconv.Atoi(step)
	if err != nil || i < 0 || strconv.Itoa(i) != step {
		return
	}
	allowArray(node)
	items, _ := node["prefixItems"].([]any)
	for len(items) <= i {
		items = append(items, map[string]any{})
	}
	items[i] = s
	node["prefixItems"] = items
}

// allowArray adds array to a schema's types.
func allowArray(node map[string]any) {
	switch t := node["type"].(type) {
	case string:
		if t != "array" {
			node["type"] = []any{t, "array"}
		}
	case []any:
		if !slices.Contains(t, any("array")) {
			node["type"] = append(t, "array")
		}
	}
}

func addRequired(node map[string]any, name string) {
	if i, err := strconv.Atoi(name); err == nil && i >= 0 && strconv.Itoa(i) == name && node["prefixItems"] != nil {
		if n, _ := node["minItems"].(int); n < i+1 {
			node["minItems"] = i + 1
		}
	}
	req, _ := node["required"].([]any)
	for _, r := range req {
		if r == name {
			return
		}
	}
	node["required"] = append(req, name)
}

// Check validates an item. decision adds fields that drive the current
// decision (filters, exclusions, preconditions). It resolves aliases in
// place (the canonical field takes the alias's value) and reports which
// aliases it used.
func (c *Contract) Check(doc map[string]any, decision map[string]bool) (vs []Violation, aliasesUsed []string) {
	isDecision := func(field string) bool { return c.decision[field] || decision[field] }
	for _, name := range c.aliased {
		f := c.fields[name]
		path := c.resource.FieldPath(name)
		canon, hasCanon := jsonvalue.Get(doc, path)
		for _, a := range f.Aliases {
			av, hasAlias := jsonvalue.Get(doc, a.Name)
			switch {
			case !hasAlias:
			case hasCanon && !jsonvalue.Equal(config.NormalizeValue(canon), config.NormalizeValue(av)):
				vs = append(vs, Violation{Field: name, Rule: "alias_conflict", Decision: isDecision(name)})
			case !hasCanon:
				jsonvalue.Put(doc, path, av)
				canon, hasCanon = av, true
				aliasesUsed = append(aliasesUsed, a.Name)
			}
		}
	}
	// The fast check only ever proves a document valid; a document it
	// cannot prove valid goes to the validator, which names the violations.
	if c.fast == nil || !c.fast.valid(doc) {
		vs = c.schemaViolations(doc, isDecision, vs)
	}
	for i, inv := range c.invariants {
		if m, ok := c.resource.EvalRule(doc, inv.If); ok && m {
			if m2, ok2 := c.resource.EvalRule(doc, inv.Then); !ok2 || !m2 {
				desc := inv.Description
				if desc == "" {
					desc = fmt.Sprintf("invariant %d (%s %s %s implies %s %s %s)", i, inv.If.Field, inv.If.Op, jsonvalue.String(inv.If.Value), inv.Then.Field, inv.Then.Op, jsonvalue.String(inv.Then.Value))
				}
				vs = append(vs, Violation{Field: inv.Then.Field, Rule: "invariant", Decision: true, Invariant: desc})
			}
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Field < vs[j].Field })
	return vs, aliasesUsed
}

// schemaViolations runs the JSON Schema validator and appends the
// violations it reports to vs, one per field and rule.
func (c *Contract) schemaViolations(doc map[string]any, isDecision func(string) bool, vs []Violation) []Violation {
	seen := map[string]bool{}
	for _, vio := range envelope.NewValidator(c.schema).Violations(doc) {
		base := strings.ReplaceAll(strings.TrimPrefix(vio.Pointer, "/"), "/", ".")
		paths := []string{base}
		if vio.Keyword == "required" {
			paths = nil
			for _, name := range vio.Names {
				paths = append(paths, strings.TrimPrefix(base+"."+name, "."))
			}
		}
		for _, p := range paths {
			field := c.paths[p]
			if field == "" {
				field = p
			}
			rule := vio.Keyword
			if rule == "type" {
				if v, ok := jsonvalue.Get(doc, p); ok && v == nil {
					rule = "null"
				}
			}
			k := field + "/" + rule
			if seen[k] {
				continue
			}
			seen[k] = true
			vs = append(vs, Violation{Field: field, Rule: rule, Decision: isDecision(field)})
		}
	}
	return vs
}

// fastSchema is the subset of JSON Schema that fieldsSchema generates:
// type, enum (of strings and null), format, properties, required,
// prefixItems and minItems. It
// answers one question, whether a document is certainly valid, with the
// validator's own rules: its answer is "valid" only when the validator
// would report nothing; every other case (a violation, a value or keyword
// it does not handle) is left to the validator.
type fastSchema struct {
	types    []string // nil: no type keyword
	enum     []any    // strings and nil; nil slice: no enum keyword
	hasEnum  bool
	format   func(any) bool
	props    map[string]*fastSchema
	required []string
	// items and minItems check an array through which a field's path
	// leads by an element's index.
	items    []*fastSchema
	minItems int
}

// compileFastSchema reads a generated schema document as the validator's
// compiler does (numbers as json.Number) and returns nil when any part of
// it is outside the subset.
func compileFastSchema(doc []byte) *fastSchema {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	fs, ok := fastNode(v)
	if !ok {
		return nil
	}
	return fs
}

func fastNode(v any) (*fastSchema, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	fs := &fastSchema{}
	for k, x := range m {
		switch k {
		case "type":
			var names []any
			switch t := x.(type) {
			case string:
				names = []any{t}
			case []any:
				names = t
			default:
				return nil, false
			}
			fs.types = []string{}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil, false
				}
				switch s {
				case "null", "boolean", "number", "integer", "string", "array", "object":
				default:
					return nil, false
				}
				fs.types = append(fs.types, s)
			}
		case "enum":
			vals, ok := x.([]any)
			if !ok || len(vals) == 0 {
				return nil, false
			}
			for _, e := range vals {
				if _, isStr := e.(string); !isStr && e != nil {
					return nil, false
				}
			}
			fs.enum, fs.hasEnum = vals, true
		case "format":
			name, ok := x.(string)
			if !ok {
				return nil, false
			}
			// The compiler asserts the formats it knows and ignores the
			// others; the same function is used here.
			fs.format = jsonschema.Formats[name]
		case "properties":
			props, ok := x.(map[string]any)
			if !ok {
				return nil, false
			}
			fs.props = map[string]*fastSchema{}
			for name, sub := range props {
				child, ok := fastNode(sub)
				if !ok {
					return nil, false
				}
				fs.props[name] = child
			}
		case "prefixItems":
			items, ok := x.([]any)
			if !ok {
				return nil, false
			}
			for _, sub := range items {
				child, ok := fastNode(sub)
				if !ok {
					return nil, false
				}
				fs.items = append(fs.items, child)
			}
		case "minItems":
			n, ok := x.(json.Number)
			i, err := n.Int64()
			if !ok || err != nil || i < 0 {
				return nil, false
			}
			fs.minItems = int(i)
		case "required":
			names, ok := x.([]any)
			if !ok {
				return nil, false
			}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil, false
				}
				fs.required = append(fs.required, s)
			}
		default:
			return nil, false
		}
	}
	return fs, true
}

// valid reports whether v certainly satisfies the schema.
func (fs *fastSchema) valid(v any) bool {
	if fs.types != nil {
		vt, ok := fastJSONType(v)
		if !ok {
			return false
		}
		matched := false
		for _, t := range fs.types {
			if t == vt || (t == "integer" && vt == "number" && jsonvalue.IsInteger(v)) {
				matched = true
				break
			}
		}
		if !matched {
			return false
		}
	}
	if fs.hasEnum {
		found := false
		switch x := v.(type) {
		case string:
			for _, e := range fs.enum {
				if s, ok := e.(string); ok && s == x {
					found = true
					break
				}
			}
		case nil:
			for _, e := range fs.enum {
				if e == nil {
					found = true
					break
				}
			}
		}
		if !found {
			return false
		}
	}
	if fs.format != nil && !fs.format(v) {
		return false
	}
	if arr, isArr := v.([]any); isArr {
		if len(arr) < fs.minItems {
			return false
		}
		for i, sub := range fs.items {
			if i < len(arr) && !sub.valid(arr[i]) {
				return false
			}
		}
		return true
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		return true
	}
	for _, name := range fs.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	for name, sub := range fs.props {
		if pv, ok := obj[name]; ok && !sub.valid(pv) {
			return false
		}
	}
	return true
}

// fastJSONType is the validator's JSON type of a decoded value; false for a
// value the fast check leaves to the validator.
func fastJSONType(v any) (string, bool) {
	switch v.(type) {
	case nil:
		return "null", true
	case bool:
		return "boolean", true
	case json.Number:
		return "number", true
	case string:
		return "string", true
	case []any:
		return "array", true
	case map[string]any:
		return "object", true
	}
	return "", false
}

// WarningsFor turns the non-decision violations of a scan into warnings:
// UNKNOWN_ENUM_VALUE for values outside a declared set, FIELD_DRIFT for
// the rest.
func WarningsFor(source string, enumFields, driftFields map[string]bool) []envelope.Warning {
	var out []envelope.Warning
	if len(enumFields) > 0 {
		w := envelope.NewWarning(envelope.WarnUnknownEnumValue, source)
		w.Fields = slices.Sorted(maps.Keys(enumFields))
		out = append(out, w)
	}
	if len(driftFields) > 0 {
		w := envelope.NewWarning(envelope.WarnFieldDrift, source)
		w.Fields = slices.Sorted(maps.Keys(driftFields))
		out = append(out, w)
	}
	return out
}

// RuleDuplicateMember is the violation of a record that names a member
// twice: neither value is read, and the record is ambiguous.
const RuleDuplicateMember = "duplicate_member"
