package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// fastTestFields exercises every part of the generated schema: each type,
// nullable, enums (nullable too), each accepted format, nested paths whose
// parents become required, permissions and aliases.
func fastTestFields() map[string]*config.FieldConfig {
	return map[string]*config.FieldConfig{
		"id":           {Type: "string", Required: true},
		"name":         {Type: "string"},
		"owner":        {Type: "string", Nullable: true, Decision: true},
		"state":        {Type: "string", Enum: []string{"active", "inactive", "archived"}, Decision: true},
		"tier":         {Type: "string", Enum: []string{"gold", "silver"}, Nullable: true},
		"count":        {Type: "integer", Required: true},
		"ratio":        {Type: "number", Nullable: true},
		"flag":         {Type: "boolean"},
		"can_delete":   {Type: "boolean", Permission: true},
		"tags":         {Type: "array"},
		"meta":         {Type: "object"},
		"created_at":   {Type: "timestamp", Required: true},
		"seen_at":      {Type: "timestamp", Nullable: true},
		"day":          {Type: "string", Format: "date"},
		"email":        {Type: "string", Format: "email"},
		"site":         {Type: "string", Format: "uri"},
		"uuid":         {Type: "string", Format: "uuid"},
		"ip4":          {Type: "string", Format: "ipv4"},
		"ip6":          {Type: "string", Format: "ipv6"},
		"host":         {Type: "string", Format: "hostname"},
		"amount":       {Type: "integer", Path: "billing.amount", Required: true},
		"currency":     {Type: "string", Path: "billing.currency", Enum: []string{"EUR", "USD"}},
		"region":       {Type: "string", Path: "geo.where.region", Nullable: true},
		"renamed":      {Type: "string", Aliases: []config.AliasConfig{{Name: "old_name", Until: "2030-01-01"}}},
		"nested_alias": {Type: "integer", Path: "deep.value", Aliases: []config.AliasConfig{{Name: "legacy_value", Until: "2030-01-01"}}},
		// Through an array by an element's index (Redmine's custom fields).
		"cf_region": {Type: "string", Path: "custom_fields.0.value", Nullable: true, Decision: true},
		"cf_team":   {Type: "string", Path: "custom_fields.1.value", Nullable: true, Required: true},
	}
}

func randomFieldValue(rng *rand.Rand, f *config.FieldConfig) any {
	strs := []any{"", "active", "inactive", "gold", "EUR", "USD", "x", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00+01:00",
		"2026-02-30T12:00:00Z", "2026-11-30", "2026-13-01", "not a date", "a@example.com", "not an email", "https://example.com/x",
		"::bad uri", "123e4567-e89b-12d3-a456-426614174000", "123e4567", "10.0.0.1", "10.0.0.256", "::1", "fe80::zz",
		"example.com", "-bad-.host", " active", "ACTIVE"}
	nums := []any{json.Number("0"), json.Number("-0"), json.Number("42"), json.Number("-7"), json.Number("1.0"), json.Number("1e2"),
		json.Number("1.5"), json.Number("123456789012345678901234567890"), json.Number("-2.5e-3")}
	switch rng.IntN(12) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return []any{"a", json.Number("1")}
	case 3:
		return map[string]any{"k": "v"}
	case 4, 5:
		return nums[rng.IntN(len(nums))]
	case 6:
		// Go values a decoder never produces: the fast check leaves them
		// to the validator.
		return []any{1.5, 3, int64(4)}[rng.IntN(3)]
	}
	if f != nil && len(f.Enum) > 0 && rng.IntN(2) == 0 {
		return f.Enum[rng.IntN(len(f.Enum))]
	}
	return strs[rng.IntN(len(strs))]
}

// validFieldValue returns a value the field's contract accepts.
func validFieldValue(rng *rand.Rand, f *config.FieldConfig) any {
	if f.Nullable && !f.Permission && rng.IntN(4) == 0 {
		return nil
	}
	if len(f.Enum) > 0 {
		return f.Enum[rng.IntN(len(f.Enum))]
	}
	switch {
	case f.Permission || f.Type == "boolean":
		return rng.IntN(2) == 0
	case f.Type == "integer":
		return json.Number(fmt.Sprint(rng.IntN(1000) - 500))
	case f.Type == "number":
		return json.Number("2.5")
	case f.Type == "array":
		return []any{"a"}
	case f.Type == "object":
		return map[string]any{}
	case f.Type == "timestamp" || f.Format == "date-time":
		return "2026-11-30T12:00:00Z"
	}
	switch f.Format {
	case "date":
		return "2026-11-30"
	case "email":
		return "a@example.com"
	case "uri":
		return "https://example.com/x"
	case "uuid":
		return "123e4567-e89b-12d3-a456-426614174000"
	case "ipv4":
		return "10.0.0.1"
	case "ipv6":
		return "::1"
	case "hostname":
		return "example.com"
	}
	return "text"
}

// randomDoc builds a document from the fields: mostly valid values (so that
// the fast path is taken), with absent fields, wrong types, values outside
// enums or formats, broken parents and aliases mixed in.
func randomDoc(rng *rand.Rand, fields map[string]*config.FieldConfig, mostlyValid bool) map[string]any {
	doc := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		path := name
		if f.Path != "" {
			path = f.Path
		}
		switch p := rng.IntN(100); {
		case mostlyValid && p < 90, !mostlyValid && p < 40:
			jsonvalue.Put(doc, path, validFieldValue(rng, f))
		case p < 95:
			// absent
		default:
			jsonvalue.Put(doc, path, randomFieldValue(rng, f))
		}
		for _, a := range f.Aliases {
			if rng.IntN(3) == 0 {
				jsonvalue.Put(doc, a.Name, randomFieldValue(rng, f))
			}
		}
	}
	if cf, ok := doc["custom_fields"].(map[string]any); ok && rng.IntN(4) > 0 {
		// Mostly as an array (Redmine's), sometimes one element short.
		arr := []any{}
		for i := range 2 {
			e, ok := cf[strconv.Itoa(i)]
			if !ok {
				e = map[string]any{}
			}
			arr = append(arr, e)
		}
		if rng.IntN(12) == 0 {
			arr = arr[:1]
		}
		doc["custom_fields"] = arr
	}
	if rng.IntN(20) == 0 {
		doc["billing"] = randomFieldValue(rng, nil)
	}
	if rng.IntN(20) == 0 {
		doc["extra"] = randomFieldValue(rng, nil)
	}
	return doc
}

func cloneDoc(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneDoc(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneDoc(e)
		}
		return out
	}
	return v
}

// TestContractFastCheck_SameAsValidator: with the fast check, Check returns
// exactly what the JSON Schema validator alone returns (violations,
// aliases, the document after alias resolution), for the fixture data sets'
// contracts and a contract using every generated keyword; and the fast
// check never calls a document valid that the validator rejects.
func TestContractFastCheck_SameAsValidator(t *testing.T) {
	contracts := map[string]map[string]*config.FieldConfig{"all keywords": fastTestFields()}
	cfg, err := config.Parse(fixtures.Config("http://127.0.0.1:1",
		fixtures.Resource{Name: "sa", Dataset: fixtures.DatasetServiceAccounts, Dialect: fixtures.DialectCursor},
		fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectOffset},
		fixtures.Resource{Name: "projects", Dataset: fixtures.DatasetProjects, Dialect: fixtures.DialectLink}))
	if err != nil {
		t.Fatal(err)
	}
	for name, rc := range cfg.Resources {
		contracts[name] = rc.Fields
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for name, fields := range contracts {
		t.Run(name, func(t *testing.T) {
			r := &dialect.List{Config: config.ResourceConfig{Fields: fields, IDField: "id"}}
			invs := []config.InvariantConfig{}
			if _, ok := fields["state"]; ok {
				invs = append(invs, config.InvariantConfig{If: config.RuleConfig{Field: "state", Op: "eq", Value: "archived"}, Then: config.RuleConfig{Field: "owner", Op: "eq", Value: nil}})
			}
			fast, err := Compile(r, fields, invs, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if fast.fast == nil {
				t.Fatal("a generated contract must have the fast check")
			}
			slow := *fast
			slow.fast = nil
			fastValid, validatorValid := 0, 0
			const n = 4000
			for i := range n {
				doc := randomDoc(rng, fields, i%2 == 0)
				decision := map[string]bool{"name": i%3 == 0}
				d1, d2 := cloneDoc(doc).(map[string]any), cloneDoc(doc).(map[string]any)
				v1, a1 := fast.Check(d1, decision)
				v2, a2 := slow.Check(d2, decision)
				if !reflect.DeepEqual(v1, v2) || !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(d1, d2) {
					t.Fatalf("doc %v:\nfast check: %+v %v %v\nvalidator:  %+v %v %v", doc, v1, a1, d1, v2, a2, d2)
				}
				// d1 has its aliases resolved, as Check validates it.
				d3 := cloneDoc(d1).(map[string]any)
				err := fast.schema.Validate(d3)
				if err == nil {
					validatorValid++
				}
				if fast.fast.valid(d3) {
					fastValid++
					if err != nil {
						t.Fatalf("the fast check accepted %v, the validator says %v", d3, err)
					}
				}
			}
			// Valid documents of decoded JSON take the fast path; the
			// rest are those with values a decoder never produces or
			// integers written as 1.0 or 1e2.
			if fastValid < n/10 || fastValid < validatorValid*3/4 {
				t.Fatalf("%d of %d documents took the fast path; the validator accepted %d", fastValid, n, validatorValid)
			}
		})
	}
}

// TestContractFastCheck_OnlyGeneratedSchemas: an external schema (a file or
// an OpenAPI document) always goes through the validator, and a generated
// schema with a keyword outside the subset has no fast check.
func TestContractFastCheck_OnlyGeneratedSchemas(t *testing.T) {
	if compileFastSchema([]byte(`{"type":"object","properties":{"a":{"type":["string"],"minLength":2}}}`)) != nil {
		t.Fatal("minLength is outside the subset: no fast check")
	}
	if compileFastSchema([]byte(`{"type":"object","properties":{"a":{"enum":[1,2]}}}`)) != nil {
		t.Fatal("numeric enums are outside the subset: no fast check")
	}
	if compileFastSchema([]byte(`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null],"format":"date"}},"required":["a"]}`)) == nil {
		t.Fatal("the generated keywords must have a fast check")
	}
	dir := t.TempDir()
	path := dir + "/schema.json"
	if err := os.WriteFile(path, []byte(`{"type":"object","properties":{"id":{"type":"string"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &dialect.List{Config: config.ResourceConfig{IDField: "id"}}
	c, err := Compile(r, map[string]*config.FieldConfig{"id": {Type: "string"}}, nil, &config.ContractConfig{Schema: path}, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.fast != nil {
		t.Fatal("an external schema must stay on the validator")
	}
}

// BenchmarkContractCheck checks a valid subscription record of the fixture
// data set against its generated contract.
func BenchmarkContractCheck(b *testing.B) {
	cfg, err := config.Parse(fixtures.Config("http://127.0.0.1:1",
		fixtures.Resource{Name: "subs", Dataset: fixtures.DatasetSubscriptions, Dialect: fixtures.DialectCursor}))
	if err != nil {
		b.Fatal(err)
	}
	rc := cfg.Resources["subs"]
	ct, err := Compile(&dialect.List{Config: *rc}, rc.Fields, config.NormalizeInvariants(rc.Invariants), rc.Contract, cfg.BaseDir())
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := json.Marshal(fixtures.SubscriptionAt(7))
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		b.Fatal(err)
	}
	decision := map[string]bool{"id": true, "status": true}
	for _, mode := range []string{"fast", "validator"} {
		c := *ct
		if mode == "validator" {
			c.fast = nil
		}
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				if vs, _ := c.Check(doc, decision); len(vs) != 0 {
					b.Fatalf("violations %+v", vs)
				}
			}
		})
	}
}
