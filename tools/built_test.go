package tools

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"
)

// TestBuiltSchemas_AreWhatTheStructsSay: schemas.json, which a server reads
// instead of reflecting its tools' structs at start-up, holds exactly what
// reflecting them and compacting the listed output schemas builds now, for
// every type and every tool; UPDATE_GOLDEN=1 rewrites it. Not parallel: it
// builds every schema afresh, with the file set aside.
func TestBuiltSchemas_AreWhatTheStructsSay(t *testing.T) {
	readBuilt = false
	generated.Clear()
	listedOutputs.Clear()
	t.Cleanup(func() {
		readBuilt = true
		generated.Clear()
		listedOutputs.Clear()
	})
	d := bareDeps()
	specs := append(d.Specs(), DecideSelection(d))
	want := builtFile{Types: map[string]json.RawMessage{}, Listed: map[string]json.RawMessage{}}
	reflectors.Range(func(k, v any) bool {
		want.Types[k.(reflect.Type).String()] = v.(func() []byte)()
		return true
	})
	for _, s := range specs {
		want.Listed[listedKey(listedArgs(s.Data, s.AllProblems()))] = buildListedOutput(s.Data, s.AllProblems()...)
	}
	if len(want.Types) < len(specs) || len(want.Listed) < len(specs)-1 {
		t.Fatalf("%d types and %d listed schemas for %d tools", len(want.Types), len(want.Listed), len(specs))
	}
	b := encodeBuilt(t, want)
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile("schemas.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(b, builtSchemasJSON) {
		t.Fatal("schemas.json is not what the tools' structs build now; run UPDATE_GOLDEN=1 go test ./tools -run TestBuiltSchemas and review the diff")
	}
}

// TestBuiltSchemas_ServeWhatIsBuilt: with schemas.json read, every tool
// lists the output schema and data schema it would build without it.
func TestBuiltSchemas_ServeWhatIsBuilt(t *testing.T) {
	t.Parallel()
	d := bareDeps()
	for _, s := range append(d.Specs(), DecideSelection(d)) {
		if got, want := s.OutputSchema(), buildListedOutput(s.Data, s.AllProblems()...); !bytes.Equal(got, want) {
			t.Errorf("%s: the output schema read from schemas.json differs from the one built", s.Name)
		}
	}
}

// encodeBuilt writes f as schemas.json: one schema a line, in the order
// of their names, each exactly as served.
func encodeBuilt(t *testing.T, f builtFile) []byte {
	t.Helper()
	var b bytes.Buffer
	section := func(name string, m map[string]json.RawMessage, last bool) {
		b.WriteString("\t" + string(marshalOrFail(t, name)) + ": {\n")
		keys := slices.Sorted(maps.Keys(m))
		for i, k := range keys {
			b.WriteString("\t\t" + string(marshalOrFail(t, k)) + ": ")
			if err := json.Compact(&b, m[k]); err != nil {
				t.Fatal(err)
			}
			if i < len(keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("\t}")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("{\n")
	section("types", f.Types, false)
	section("listed", f.Listed, true)
	b.WriteString("}\n")
	return b.Bytes()
}

func marshalOrFail(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
