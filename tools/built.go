package tools

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"sync"
)

// The tools' schemas are reflected from their structs and the listed
// output schemas compacted from them (generate, listedOutput): the same
// result in every process, and, done at start-up, about a fifth of the
// time to a server's first tools/list. So they are built once with the
// source, into schemas.json, and a server reads them from there.
// TestBuiltSchemas_AreWhatTheStructsSay fails when the file and the
// structs disagree (UPDATE_GOLDEN=1 rewrites it); a schema the file does
// not hold is built at run time, as before.

//go:embed schemas.json
var builtSchemasJSON []byte

// builtFile is schemas.json: Types maps a Go type's name to the schema
// generate reflects for it; Listed maps listedKey of listedOutput's
// arguments to the schema it builds.
type builtFile struct {
	Types  map[string]json.RawMessage `json:"types"`
	Listed map[string]json.RawMessage `json:"listed"`
}

// readBuilt is whether generate and listedOutput read schemas.json (the
// test that writes it turns it off to build every schema afresh).
var readBuilt = true

// builtSchemas is schemas.json, decoded at its first use.
var builtSchemas = sync.OnceValue(func() builtFile {
	var f builtFile
	if err := json.Unmarshal(builtSchemasJSON, &f); err != nil {
		panic("tools: schemas.json: " + err.Error())
	}
	return f
})

// listedKey names listedOutput's arguments (their cache key) in
// schemas.json: a listed schema is used only for the exact data and
// problems it was built from.
func listedKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:12])
}
