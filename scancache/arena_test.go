package scancache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/redact"
)

// TestItemArena_KeepsItemsInOrderAcrossSealedChunksAndTheStore: items of
// every size, one larger than a chunk and some holding escaped newlines,
// read back in order from the arena and from its stored document.
func TestItemArena_KeepsItemsInOrderAcrossSealedChunksAndTheStore(t *testing.T) {
	var want []string
	a := &itemArena{red: redact.New()}
	for i := range 3000 {
		item := fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("x", i%700))
		switch {
		case i == 1500:
			item = fmt.Sprintf(`{"i":%d,"pad":%q}`, i, strings.Repeat("y", arenaChunkSize+10))
		case i%11 == 0:
			item = fmt.Sprintf(`{"i":%d,"text":"two\nlines"}`, i)
		case i%13 == 0:
			item = fmt.Sprintf("{\n  \"i\": %d\n}", i) // indented: kept compact
		}
		a.add([]byte(item))
		var c bytes.Buffer
		if err := json.Compact(&c, []byte(item)); err != nil {
			t.Fatal(err)
		}
		want = append(want, c.String())
	}
	sealed := 0
	for _, c := range a.chunks {
		if c.z != nil {
			sealed++
		}
	}
	if sealed < 3 {
		t.Fatalf("%d sealed chunks: the test would not read compressed items", sealed)
	}
	check := func(what string, a *itemArena) {
		t.Helper()
		if a.len() != len(want) {
			t.Fatalf("%s: %d items, want %d", what, a.len(), len(want))
		}
		for _, from := range []int{0, 1, 1499, 1500, 1501, 2999} {
			got := 0
			err := a.each(from, func(i int, item json.RawMessage) bool {
				if string(item) != want[i] {
					t.Fatalf("%s: item %d from %d is %.80s, want %.80s", what, i, from, item, want[i])
				}
				got++
				return got < 5
			})
			if err != nil || got != min(5, len(want)-from) {
				t.Fatalf("%s: from %d read %d items: %v", what, from, got, err)
			}
		}
	}
	check("the arena", a)
	b, err := encodeSaved(savedScan{Fingerprint: "f", Resource: "r", State: json.RawMessage(`{}`)}, a)
	if err != nil || !json.Valid(b) {
		t.Fatalf("encode: %v, valid JSON: %v", err, json.Valid(b))
	}
	doc, back, err := decodeSaved(b, nil)
	if err != nil || doc.Fingerprint != "f" {
		t.Fatalf("decode: %v %+v", err, doc)
	}
	check("the stored document", back)
}

// TestItemArena_WithoutARedactorSealsNothing: an arena no redactor reads
// never compresses its items, so that what it saves stays readable JSON
// for the redacting store, instead of bytes no one redacted.
func TestItemArena_WithoutARedactorSealsNothing(t *testing.T) {
	a := &itemArena{}
	item := []byte(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1000)))
	for range 3 * arenaChunkSize / len(item) {
		a.add(item)
	}
	for i, c := range a.chunks {
		if c.z != nil {
			t.Fatalf("chunk %d of %d was sealed without a redactor", i, len(a.chunks))
		}
	}
	b, err := encodeSaved(savedScan{Fingerprint: "f", Resource: "r", State: json.RawMessage(`{}`)}, a)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Items  []json.RawMessage `json:"items"`
		Sealed []any             `json:"sealed"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Items) != a.len() || len(doc.Sealed) != 0 {
		t.Fatalf("saved %d readable items and %d sealed chunks of %d: %v", len(doc.Items), len(doc.Sealed), a.len(), err)
	}
}
