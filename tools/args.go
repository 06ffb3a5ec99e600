package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// argChecker validates arguments against a tool's input schema and reports
// every violation as a field error.
type argChecker struct {
	once sync.Once
	v    *envelope.Validator
	err  error
}

var checkers sync.Map // tool name -> *argChecker

func schemaFor(name string, schema map[string]any) (*envelope.Validator, error) {
	c, _ := checkers.LoadOrStore(name, &argChecker{})
	ac := c.(*argChecker)
	ac.once.Do(func() {
		b, _ := json.Marshal(schema)
		ac.v, ac.err = envelope.CompileSchema(name+"-input", b)
	})
	return ac.v, ac.err
}

// decodeArgs validates raw against the schema, then decodes each top-level
// argument into dst independently, so that one bad argument does not hide
// the others from the semantic checks. It returns the schema's field errors
// and the set of argument names that had one.
func decodeArgs(name string, schema map[string]any, raw json.RawMessage, dst any) ([]envelope.FieldError, map[string]bool) {
	bad := map[string]bool{}
	doc, err := envelope.DecodeJSON(raw)
	if err != nil {
		return []envelope.FieldError{envelope.NewFieldError("arguments", envelope.FieldType, map[string]any{})}, map[string]bool{"*": true}
	}
	v, err := schemaFor(name, schema)
	if err != nil {
		panic("tools: input schema of " + name + " does not compile: " + err.Error())
	}
	var errs []envelope.FieldError
	seen := map[string]bool{}
	for _, fe := range roundedNumbers(doc) {
		// Said before the schema's own type error at the same field
		// (an id must be a string), which it replaces.
		seen[fe.Field+"/"+string(fe.Code)] = true
		bad[topLevel(fe.Field)] = true
		errs = append(errs, fe)
	}
	for _, vio := range v.Violations(doc) {
		for _, fe := range violationErrors("", vio, schema) {
			key := fe.Field + "/" + string(fe.Code)
			if seen[key] {
				continue
			}
			seen[key] = true
			bad[topLevel(fe.Field)] = true
			errs = append(errs, fe)
		}
	}
	// Lenient per-argument decode.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err == nil {
		rv := reflect.ValueOf(dst).Elem()
		rt := rv.Type()
		for i := 0; i < rt.NumField(); i++ {
			tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
			val, ok := fields[tag]
			if !ok || bad[tag] {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(val))
			dec.UseNumber()
			ptr := reflect.New(rt.Field(i).Type)
			if dec.Decode(ptr.Interface()) == nil {
				rv.Field(i).Set(ptr.Elem())
			} else if n, ok := integral(val); ok {
				setInt(rv.Field(i), n)
			}
		}
	}
	return errs, bad
}

// valueArgs are the arguments whose values airlock compares with an
// upstream's or writes to it: ids, filters, exclusions, groups and an
// action's parameters.
var valueArgs = []string{"ids", "filter", "exclude", "group", "action"}

// roundedNumbers refuses every number in a value argument that a double
// does not hold exactly (jsonvalue.Interoperable): a client that reads
// JSON numbers as doubles may have rounded it already (9007199254740993
// arrives as 9007199254740992, another record's id), and nothing in it
// tells. airlock hands such numbers out as strings (envelope.IJSON) and
// takes them back as strings, which are matched exactly.
func roundedNumbers(doc any) []envelope.FieldError {
	args, _ := doc.(map[string]any)
	var errs []envelope.FieldError
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case json.Number:
			if !jsonvalue.Interoperable(string(x)) {
				errs = append(errs, envelope.NumberAsStringError(path))
			}
		case []any:
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(joinPath(path, k), x[k])
			}
		}
	}
	for _, name := range valueArgs {
		if v, ok := args[name]; ok {
			walk(name, v)
		}
	}
	return errs
}

// integral reads a JSON number that is a whole number but that
// encoding/json will not put in an int (1e3, 1e21, 2^63): the value,
// saturated to the int range so that a budget check answers over_cap
// instead of the argument silently taking its default.
func integral(raw json.RawMessage) (int, bool) {
	lit := strings.TrimSpace(string(raw))
	if lit == "" || !(lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') {
		return 0, false
	}
	f, _, err := big.ParseFloat(lit, 10, 256, big.ToZero)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) || strings.Contains(err.Error(), "exponent overflow") {
			if lit[0] == '-' {
				return math.MinInt, true
			}
			return math.MaxInt, true
		}
		return 0, false
	}
	if !f.IsInt() {
		return 0, false
	}
	if f.Sign() > 0 && f.Cmp(new(big.Float).SetInt64(math.MaxInt)) >= 0 {
		return math.MaxInt, true
	}
	if f.Sign() < 0 && f.Cmp(new(big.Float).SetInt64(math.MinInt)) <= 0 {
		return math.MinInt, true
	}
	n, _ := f.Int64()
	return int(n), true
}

// setInt stores n in an int or *int field; other fields are left alone.
func setInt(v reflect.Value, n int) {
	switch {
	case v.Kind() == reflect.Int:
		v.SetInt(int64(n))
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Int:
		p := reflect.New(v.Type().Elem())
		p.Elem().SetInt(int64(n))
		v.Set(p)
	}
}

// violationErrors renders one schema violation as field errors under
// prefix: one per property a required or additionalProperties keyword
// names. Examples come from the schema's top-level properties.
func violationErrors(prefix string, vio envelope.Violation, schema map[string]any) []envelope.FieldError {
	field := joinPath(prefix, pointerToPath(vio.Pointer))
	code := keywordCode(vio.Keyword)
	fields := []string{field}
	if code == envelope.FieldRequired || code == envelope.FieldUnknownArgument {
		fields = nil
		for _, name := range vio.Names {
			fields = append(fields, joinPath(field, name))
		}
		if fields == nil {
			fields = []string{field}
		}
	}
	out := make([]envelope.FieldError, 0, len(fields))
	for _, f := range fields {
		rel := f
		if prefix != "" {
			rel = strings.TrimPrefix(strings.TrimPrefix(f, prefix), ".")
		}
		out = append(out, envelope.NewFieldError(f, code, exampleAt(schema, rel)))
	}
	return out
}

// keywordCode maps a failing JSON Schema keyword to a field-error code.
func keywordCode(keyword string) envelope.FieldCode {
	switch keyword {
	case "required":
		return envelope.FieldRequired
	case "additionalProperties", "maxProperties":
		return envelope.FieldUnknownArgument
	case "type":
		return envelope.FieldType
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems":
		return envelope.FieldOutOfRange
	case "enum", "const":
		return envelope.FieldEnum
	case "pattern", "format", "minLength", "maxLength":
		return envelope.FieldFormat
	}
	return envelope.FieldInvalid
}

func pointerToPath(p string) string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return ""
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		if s != "" && strings.Trim(s, "0123456789") == "" && i > 0 {
			parts[i] = "[" + s + "]"
			continue
		}
		parts[i] = s
	}
	return strings.ReplaceAll(strings.Join(parts, "."), ".[", "[")
}

func joinPath(base, name string) string {
	if base == "" {
		return name
	}
	if name == "" {
		return base
	}
	return base + "." + name
}

func topLevel(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}

// exampleAt returns the schema's example for a top-level argument.
func exampleAt(schema map[string]any, field string) any {
	props, _ := schema["properties"].(map[string]any)
	p, _ := props[topLevel(field)].(map[string]any)
	if ex, ok := p["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	return nil
}

// queryUse is a field a query conditions on: the argument path that named
// it and the declared field it reads.
type queryUse struct{ path, field string }

// checkSensitive refuses, all at once, every condition a query puts on a
// sensitive field: filters, exclusion rules, group selectors. The counts,
// membership and ordering such a query answers reveal the field's values
// (a binary search over "lt" exclusion counts reads an address out in a
// few hundred previews). A field the configuration marks queryable is
// exempt: its values are disclosed by counts, on purpose. Every tool that
// accepts a field name from the caller for a condition calls it.
func checkSensitive(r *upstream.Resource, uses []queryUse) []envelope.FieldError {
	var errs []envelope.FieldError
	for _, u := range uses {
		if fc, ok := r.Field(u.field); ok && fc.Sensitive && !fc.Queryable {
			errs = append(errs, envelope.NewFieldError(u.path, envelope.FieldSensitiveQuery, nil))
		}
	}
	return errs
}

// filterUses lists the fields a filter conditions on.
func filterUses(r *upstream.Resource, filter map[string]any) []queryUse {
	var uses []queryUse
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		fc, ok := r.Config.Filters[name]
		if !ok {
			continue
		}
		field := name
		if fc != nil && fc.Field != "" {
			field = fc.Field
		}
		uses = append(uses, queryUse{path: "filter." + name, field: field})
	}
	return uses
}

// ruleUses lists the fields exclusion rules condition on.
func ruleUses(arg string, rules []config.RuleConfig) []queryUse {
	uses := make([]queryUse, 0, len(rules))
	for i, rule := range rules {
		uses = append(uses, queryUse{path: arg + "[" + strconv.Itoa(i) + "].field", field: rule.Field})
	}
	return uses
}
