package draft

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/upstream"
)

// update regenerates the golden drafts: UPDATE_GOLDEN=1 go test ./draft
var update = os.Getenv("UPDATE_GOLDEN") == "1"

func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join("testdata", "*.openapi.yaml"))
	if err != nil || len(docs) < 6 {
		t.Fatalf("want the six documents in testdata, found %d (%v)", len(docs), err)
	}
	return docs
}

func golden(doc string) string {
	return strings.TrimSuffix(doc, ".openapi.yaml") + ".airlock.yaml"
}

// TestDraftFromOpenAPI_IsDeterministicAndMatchesGolden: the same document
// always drafts the same file, byte for byte, and that file is the golden
// one reviewed in testdata.
func TestDraftFromOpenAPI_IsDeterministicAndMatchesGolden(t *testing.T) {
	for _, doc := range documents(t) {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			b, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			first, err := FromOpenAPI(b, Options{Source: filepath.Base(doc)})
			if err != nil {
				t.Fatalf("draft: %v", err)
			}
			for range 5 {
				again, err := FromOpenAPI(b, Options{Source: filepath.Base(doc)})
				if err != nil || !bytes.Equal(again.YAML, first.YAML) {
					t.Fatalf("a second draft of the same document differs (%v)", err)
				}
			}
			if update {
				if err := os.WriteFile(golden(doc), first.YAML, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden(doc))
			if err != nil {
				t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
			}
			if !bytes.Equal(first.YAML, want) {
				t.Errorf("the draft of %s differs from %s (UPDATE_GOLDEN=1 regenerates it):\n%s", doc, golden(doc), first.YAML)
			}
		})
	}
}

// TestDraftWithTODOs_IsRefusedNamingEachOne: what init could not decide
// stops the configuration from running, line by line, until a person
// decides it.
func TestDraftWithTODOs_IsRefusedNamingEachOne(t *testing.T) {
	for _, doc := range documents(t) {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			b, _ := os.ReadFile(doc)
			d, err := FromOpenAPI(b, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.TODOs) == 0 {
				t.Fatal("without --environment the draft must leave the environment to a person")
			}
			var errs config.Errors
			if cfg, err := config.Parse(d.YAML); err != nil {
				if !errors.As(err, &errs) {
					t.Fatalf("parse: %v", err)
				}
			} else {
				_, err := upstream.Initialize(t.Context(), cfg, upstream.Options{WithoutCredentials: true})
				if !errors.As(err, &errs) {
					t.Fatalf("a draft holding %v was accepted: %v", d.TODOs, err)
				}
			}
			if len(errs) == 0 {
				t.Fatal("no error for a draft with TODOs")
			}
		})
	}
}

// TestDraftWithEveryDecisionMade_IsAValidConfiguration: once the
// environment and base URL are given, the drafts that need nothing else
// are configurations airlock runs as they are.
func TestDraftWithEveryDecisionMade_IsAValidConfiguration(t *testing.T) {
	for _, doc := range documents(t) {
		t.Run(filepath.Base(doc), func(t *testing.T) {
			b, _ := os.ReadFile(doc)
			d, err := FromOpenAPI(b, Options{Environment: "test", BaseURL: "https://api.example.com"})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(d.YAML)
			if len(d.TODOs) > 0 {
				if err == nil {
					_, err = upstream.Initialize(t.Context(), cfg, upstream.Options{WithoutCredentials: true})
				}
				if err == nil {
					t.Fatalf("a draft with TODOs %v was accepted", d.TODOs)
				}
				if !strings.Contains(err.Error(), "TODO(") {
					t.Errorf("the refusal does not name the TODO: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("a draft without TODOs does not parse: %v\n%s", err, d.YAML)
			}
			if _, err := upstream.Initialize(t.Context(), cfg, upstream.Options{WithoutCredentials: true}); err != nil {
				t.Fatalf("a draft without TODOs does not initialize: %v\n%s", err, d.YAML)
			}
		})
	}
}
