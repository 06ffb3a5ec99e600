//go:build ignore

// validate checks server.json files with the MCP Registry's own validator:
// its JSON Schema for the file's $schema version and its semantic rules,
// exactly as the registry's validate endpoint runs them, offline. The
// registry keeps them in an internal package, so scripts/validate-server-json
// copies this file into a copy of the registry's module (from the Go module
// proxy) and runs it there. Checks that need the network (that a package
// exists, who owns the name) are the registry's, at publish time.
//
//	go run ./cmd/airlock-validate server.json...
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/registry/internal/validators"
	apiv0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: validate server.json...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		if err := validate(path); err != nil {
			fmt.Printf("%s: %v\n", path, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func validate(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s apiv0.ServerJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("not a server.json: %w", err)
	}
	r := validators.ValidateServerJSON(&s, validators.ValidationOptions{
		ValidateSchema:         true,
		ValidateSemantic:       true,
		NonCurrentSchemaPolicy: validators.SchemaVersionPolicyError,
	})
	for _, i := range r.Issues {
		fmt.Printf("%s: %s %s: %s (%s)\n", path, i.Severity, i.Path, i.Message, i.Reference)
	}
	if !r.Valid {
		return fmt.Errorf("invalid (%d issues)", len(r.Issues))
	}
	fmt.Printf("%s: valid against %s (the registry's current schema is %s)\n", path, s.Schema, model.CurrentSchemaURL)
	return nil
}
