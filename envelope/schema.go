package envelope

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed envelope.schema.json
var schemaJSON []byte

// Schema returns the envelope's JSON Schema (draft 2020-12), as published.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// OutputSchema returns the envelope schema with data narrowed to dataSchema
// and, when problems is not empty, problem.code narrowed to those codes:
// ready to be a tool's outputSchema. The meta keywords $schema and $id are
// dropped: MCP's default dialect is 2020-12, and clients that validate with a
// draft-07 engine reject an unknown meta-schema URI.
func OutputSchema(dataSchema map[string]any, problems ...ProblemCode) json.RawMessage {
	var doc map[string]any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		panic("envelope: embedded schema: " + err.Error())
	}
	delete(doc, "$schema")
	delete(doc, "$id")
	if dataSchema != nil {
		doc["properties"].(map[string]any)["data"] = dataSchema
	}
	if len(problems) > 0 {
		codes := make([]any, len(problems))
		for i, c := range problems {
			codes[i] = c
		}
		code := doc["$defs"].(map[string]any)["problem"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)
		code["enum"] = codes
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("envelope: output schema: " + err.Error())
	}
	return b
}

// Validator validates documents against one compiled schema.
type Validator struct{ schema *jsonschema.Schema }

// NewValidator wraps a schema compiled elsewhere (with other compiler
// options), so that its violations are read the one way Violations reads
// them.
func NewValidator(s *jsonschema.Schema) *Validator { return &Validator{schema: s} }

// CompileSchema compiles a 2020-12 schema document.
func CompileSchema(name string, schema []byte) (*Validator, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	url := "mem://airlock/" + name + ".json"
	if err := c.AddResource(url, bytes.NewReader(schema)); err != nil {
		return nil, fmt.Errorf("add schema %q: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile schema %q: %w", name, err)
	}
	return &Validator{schema: s}, nil
}

// Validate checks a JSON document; the error lists every violation with its
// location in the document.
func (v *Validator) Validate(doc []byte) error {
	val, err := DecodeJSON(doc)
	if err != nil {
		return fmt.Errorf("not json: %w", err)
	}
	return v.ValidateValue(val)
}

// DecodeJSON decodes a document the way the validator expects (numbers as
// json.Number, so that integers stay integers).
func DecodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the document")
	}
	return v, nil
}

// ValidateValue checks an already decoded value (see DecodeJSON).
func (v *Validator) ValidateValue(val any) error {
	if err := v.schema.Validate(tameNumbers(val)); err != nil {
		var ve *jsonschema.ValidationError
		if ok := asValidation(err, &ve); ok {
			var lines []string
			for _, e := range ve.BasicOutput().Errors {
				if e.Error == "" || strings.HasPrefix(e.Error, "doesn't validate with") {
					continue
				}
				lines = append(lines, fmt.Sprintf("%s: %s", e.InstanceLocation, e.Error))
			}
			return fmt.Errorf("schema violations:\n  %s", strings.Join(lines, "\n  "))
		}
		return err
	}
	return nil
}

// Violation is one schema violation, located by a JSON pointer into the
// instance and identified by the failing keyword.
type Violation struct {
	Pointer string
	Keyword string
	Message string
	// Names are the properties a required or additionalProperties
	// violation names (relative to Pointer).
	Names []string
}

// quotedName finds the property names the validator quotes in its messages
// ("missing properties: 'a', 'b'"; "additionalProperties 'x' not allowed").
var quotedName = regexp.MustCompile(`'([^']*)'`)

// Violations validates val and returns every leaf violation.
func (v *Validator) Violations(val any) []Violation {
	err := v.schema.Validate(tameNumbers(val))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !asValidation(err, &ve) {
		return []Violation{{Pointer: "", Keyword: "", Message: err.Error()}}
	}
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			kw := e.KeywordLocation
			if i := strings.LastIndex(kw, "/"); i >= 0 {
				kw = kw[i+1:]
			}
			vio := Violation{Pointer: e.InstanceLocation, Keyword: kw, Message: e.Message}
			if kw == "required" || kw == "additionalProperties" || kw == "dependentRequired" {
				for _, m := range quotedName.FindAllStringSubmatch(e.Message, -1) {
					vio.Names = append(vio.Names, m[1])
				}
			}
			out = append(out, vio)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}

func asValidation(err error, target **jsonschema.ValidationError) bool {
	ve, ok := err.(*jsonschema.ValidationError)
	if ok {
		*target = ve
	}
	return ok
}

var (
	envOnce      sync.Once
	envValidator *Validator
)

// ValidateEnvelope validates a serialized envelope against the published schema.
func ValidateEnvelope(doc []byte) error {
	envOnce.Do(func() {
		v, err := CompileSchema("envelope", schemaJSON)
		if err != nil {
			panic("envelope: embedded schema does not compile: " + err.Error())
		}
		envValidator = v
	})
	return envValidator.Validate(doc)
}

// maxExponent bounds the decimal exponent of a number handed to the
// validator: it reads numbers as big.Rat, which refuses (and the validator
// then dereferences nil on) exponents past a million. 1e400 compares like
// 1e1000001 against any bound a schema states, and is as whole a number.
const maxExponent = 400

// tameNumbers returns val with every number whose exponent is out of the
// validator's range brought to maxExponent (same sign, same side of one);
// val itself when it holds none.
func tameNumbers(val any) any {
	out, _ := tame(val)
	return out
}

// tame is tameNumbers that says whether it changed anything; it copies
// only the containers on the way to a changed number.
func tame(val any) (any, bool) {
	switch x := val.(type) {
	case json.Number:
		t := tameNumber(x)
		return t, t != x
	case []any:
		var out []any
		for i, e := range x {
			t, changed := tame(e)
			if changed && out == nil {
				out = append([]any(nil), x...)
			}
			if changed {
				out[i] = t
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			t, changed := tame(e)
			if changed && out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			if changed {
				out[k] = t
			}
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	return val, false
}

func tameNumber(n json.Number) json.Number {
	s := string(n)
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return n
	}
	exp, err := strconv.ParseInt(strings.TrimPrefix(s[i+1:], "+"), 10, 64)
	if err == nil && exp >= -maxExponent && exp <= maxExponent {
		return n
	}
	neg := strings.HasPrefix(s[i+1:], "-")
	if neg {
		return json.Number(s[:i] + "e-" + strconv.Itoa(maxExponent))
	}
	return json.Number(s[:i] + "e" + strconv.Itoa(maxExponent))
}

// CompactOutputSchema is a tool's outputSchema as clients compile it at
// connect time: the envelope's members and their types, the decision
// field, the continuation kinds, reasons and warnings as codes with their
// message, and the problem with its codes narrowed to problems; data is
// dataSchema. It holds every result the full schema (Schema) holds, which
// airlock's tests check every result against as well.
func CompactOutputSchema(dataSchema map[string]any, problems ...ProblemCode) json.RawMessage {
	code := map[string]any{"$ref": "#/$defs/code"}
	str := map[string]any{"type": "string"}
	problem := map[string]any{
		"type":     "object",
		"required": []any{"type", "title", "status", "detail", "code", "retryable", "next_action"},
		"properties": map[string]any{
			"code": map[string]any{"type": "string"}, "status": map[string]any{"type": "integer"}, "retryable": map[string]any{"type": "boolean"},
			"next_action": str, "detail": str, "title": str, "type": str, "state_changed": map[string]any{"enum": []any{StateNone, StatePartial, StateUnknown}},
		},
	}
	if len(problems) > 0 {
		codes := make([]any, len(problems))
		for i, c := range problems {
			codes[i] = c
		}
		problem["properties"].(map[string]any)["code"] = map[string]any{"enum": codes}
	}
	if dataSchema == nil {
		dataSchema = map[string]any{"type": "object"}
	}
	doc := map[string]any{
		"type":     "object",
		"required": []any{"status", "complete", "incomplete_reasons", "continuation", "warnings"},
		"properties": map[string]any{
			"status":             map[string]any{"enum": []any{StatusComplete, StatusPartial, StatusError}},
			"complete":           map[string]any{"type": "boolean", "description": "Only true supports claims about the whole scope, absence included."},
			"incomplete_reasons": map[string]any{"type": "array", "items": code},
			"continuation": map[string]any{"type": "object", "required": []any{"kind"}, "properties": map[string]any{
				"kind":   map[string]any{"enum": []any{ContinueNextCursor, ContinueRetryAfter, ContinueRetryWithDeadline, ContinueNarrowQuery, ContinueRestart, ContinueNone}},
				"cursor": str,
			}},
			"scope":    map[string]any{"type": "object"},
			"coverage": map[string]any{"type": "object"},
			"warnings": map[string]any{"type": "array", "items": code},
			"data":     dataSchema,
			"problem":  problem,
		},
		"$defs": map[string]any{"code": map[string]any{"type": "object", "required": []any{"code", "message"},
			"properties": map[string]any{"code": str, "message": str}}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("envelope: output schema: " + err.Error())
	}
	return b
}
