package config

import (
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

// commitDataLines is a resource with a re-read and no version, and three
// actions whose templates ask for data a commit does not have where they
// are rendered (lines as numbered).
func commitDataLines() []string {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	return append(lines,
		"      name: {type: string}",                             // 13
		"      status: {type: string, enum: [active, archived]}", // 14
		"    get: {path: \"/items/{{id}}\"}",                     // 15
		"actions:",                                               // 16
		"  archive:",                                             // 17
		"    resource: items",                                    // 18
		"    request:",                                           // 19
		"      method: PUT",                                      // 20
		"      path: \"/items/{{id}}\"",                          // 21
		"      body: {name: \"{{before.name}}\", status: \"{{after.status}}\", note: \"{{params.note}}\"}",           // 22
		"    params: {type: object, required: [reason], properties: {reason: {type: string}, note: {type: string}}}", // 23
		"    conditional: reread",                     // 24
		"    effect: [{field: status, to: archived}]", // 25
		"    idempotency_header: Idempotency-Key",     // 26
		"  archive_all:",                              // 27
		"    resource: items",                         // 28
		"    bulk:",                                   // 29
		"      method: POST",                          // 30
		"      path: /items/bulk",                     // 31
		"      body: {ids: \"{{ids}}\", was: \"{{before.status}}\", rev: \"{{version}}\"}", // 32
		"      max_batch: 10",       // 33
		"      results: .",          // 34
		"      result_id: id",       // 35
		"      result_status: ok",   // 36
		"      applied: [\"true\"]", // 37
		"    conditional: reread",   // 38
		"    effect: [{field: status, to: \"{{operation_id}}\"}]", // 39
		"  restore_status:",   // 40
		"    resource: items", // 41
		"    request: {method: PATCH, path: \"/items/{{id}}?rev={{version}}\", body: {status: \"{{restore.status}}\"}}", // 42
		"    conditional: reread",                                   // 43
		"    effect: [{field: status, to: \"{{restore.status}}\"}]", // 44
	)
}

// TestCheck_RendersTemplatesWithTheDataTheCommitHas: check renders every
// template with the data a commit has where it is rendered, so a template
// the commit could not build (a field before does not hold, an optional
// param, a version the resource has none of, restore in an action nothing
// compensates, per-target values in a bulk body) is refused with its line
// and what the commit has, not accepted to stop a commit with
// INTERNAL_ERROR and nothing sent. The same actions, each template naming
// what its place has (restore once an action names this one as its
// compensation), pass.
func TestCheck_RendersTemplatesWithTheDataTheCommitHas(t *testing.T) {
	checkErrors(t, parseErrors(t, configtest.Lines(commitDataLines()...)), []wantErr{
		{22, "actions.archive.request.body.name", "{{before.name}}: before holds only the fields the effect changes: status"},
		{22, "actions.archive.request.body.note", "{{params.note}}: params holds only the properties the action's params require: reason (an optional one may be absent at commit: note)"},
		{32, "actions.archive_all.bulk.body.rev", "{{version}}: a bulk path or body names each target's version through {{targets}}"},
		{32, "actions.archive_all.bulk.body.was", "{{before.status}}: bulk.each renders each target's own values, before among them"},
		{39, "actions.archive_all.effect.0.to", "{{operation_id}}: an effect's to has no operation_id; it has params"},
		{42, "actions.restore_status.request.path", "{{version}}: the resource declares no version_field"},
		{42, "actions.restore_status.request.body.status", "{{restore.status}}: restore holds what a compensated operation journaled, and no action names this one as its compensation"},
		{44, "actions.restore_status.effect.0.to", "{{restore.status}}: restore holds what a compensated operation journaled"},
	})

	lines := commitDataLines()
	lines[21] = "      body: {name: \"{{params.reason}}\", status: \"{{after.status}}\", was: \"{{before.status}}\", op: \"{{operation_id}}\"}"
	lines[22] = "    params: {type: object, required: [reason], properties: {reason: {type: string}}}"
	lines[25] = "    compensation: restore_status"
	lines[31] = "      body: {targets: \"{{targets}}\", status: \"{{after.status}}\", op: \"{{operation_id}}\"}"
	lines[38] = "    effect: [{field: status, to: archived}]"
	lines[41] = "    request: {method: PATCH, path: \"/items/{{id}}?op={{operation_id}}\", body: {status: \"{{restore.status}}\", was: \"{{before.status}}\"}}"
	if _, err := Parse(configtest.Lines(lines...)); err != nil {
		t.Fatalf("templates of the commit's own data are refused:\n%v", err)
	}
}

// bulkLines is a bulk action whose answer is read at the given paths
// (lines 17 to 20).
func bulkLines(results, resultID, resultStatus, resultItem string) []byte {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      status: {type: string}",       // 13
		"    get: {path: \"/items/{{id}}\"}", // 14
		"actions:",                           // 15
		"  archive_all:",                     // 16
		"    resource: items",                // 17
		"    bulk:",                          // 18
		"      method: POST",                 // 19
		"      path: /items/_bulk_docs",      // 20
		"      body: {docs: \"{{each}}\"}",   // 21
		"      each: {_id: \"{{id}}\", status: \"{{after.status}}\"}", // 22
		"      max_batch: 10",                         // 23
		"      results: "+results,                     // 24
		"      result_id: "+resultID,                  // 25
		"      result_status: "+resultStatus,          // 26
		"      result_item: "+resultItem,              // 27
		"      applied: [\"true\"]",                   // 28
		"    conditional: reread",                     // 29
		"    effect: [{field: status, to: archived}]", // 30
	)
	return configtest.Lines(lines...)
}

// TestCheck_BulkAnswerPathsAreOnesTheCommitReads: results is a dotted path
// into the answer or . for the answer itself (CouchDB's _bulk_docs answers
// a bare list); a result's members are dotted paths. A JSONPath, a JSON
// Pointer or an empty step would read nothing at commit, and every target
// sent would be unknown: check refuses them with their line.
func TestCheck_BulkAnswerPathsAreOnesTheCommitReads(t *testing.T) {
	if _, err := Parse(bulkLines(".", "id", "ok", "doc")); err != nil {
		t.Fatalf("results: . (the answer is the list) is refused: %v", err)
	}
	if _, err := Parse(bulkLines("data.results", "doc.id", "ok", "doc")); err != nil {
		t.Fatalf("dotted paths are refused: %v", err)
	}
	cases := []struct {
		name                 string
		results, id, st, itm string
		want                 wantErr
	}{
		{"jsonpath", "$.docs", "id", "ok", "doc", wantErr{24, "actions.archive_all.bulk.results", `"$.docs" is not read: write a dotted path`}},
		{"json pointer", "/docs", "id", "ok", "doc", wantErr{24, "actions.archive_all.bulk.results", `"/docs" is not read`}},
		{"empty step", "data..results", "id", "ok", "doc", wantErr{24, "actions.archive_all.bulk.results", `"data..results" has an empty step: write a dotted path (data.results), or . for the answer itself`}},
		{"result id as the result", ".", ".", "ok", "doc", wantErr{25, "actions.archive_all.bulk.result_id", "names a member of each result"}},
		{"result status jsonpath", ".", "id", "$.ok", "doc", wantErr{26, "actions.archive_all.bulk.result_status", `"$.ok" is not read`}},
		{"result item trailing dot", ".", "id", "ok", "doc.", wantErr{27, "actions.archive_all.bulk.result_item", `"doc." has an empty step`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, bulkLines(c.results, c.id, c.st, c.itm)), []wantErr{c.want})
		})
	}
}

// TestCheck_ActionHeadersAreOnesSentAsWritten: an action's header replaces
// the upstream's of the same name; one that would be dropped or would
// replace airlock's own (the credential, the If-Match of if_match, the
// idempotency key, a form's content type), or that is no header name, is
// refused with its line. X-Amz-Target is sent as written.
func TestCheck_ActionHeadersAreOnesSentAsWritten(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      status: {type: string}",   // 13
		"      rev: {type: string}",      // 14
		"    version_field: rev",         // 15
		"actions:",                       // 16
		"  archive:",                     // 17
		"    resource: items",            // 18
		"    request:",                   // 19
		"      method: POST",             // 20
		"      path: \"/items/{{id}}\"",  // 21
		"      encoding: form",           // 22
		"      body: {status: archived}", // 23
		"      headers:",                 // 24
		"        X-Amz-Target: DynamoDB_20120810.UpdateItem", // 25
		"        Authorization: Bearer abc",                  // 26
		"        if-match: \"*\"",                            // 27
		"        Idempotency-Key: fixed",                     // 28
		"        Content-Type: text/plain",                   // 29
		"        \"X Target\": x",                            // 30
		"    conditional: if_match",                          // 31
		"    idempotency_header: Idempotency-Key",            // 32
		"    effect: [{field: status, to: archived}]",        // 33
	)
	checkErrors(t, parseErrors(t, configtest.Lines(lines...)), []wantErr{
		{26, "actions.archive.request.headers.Authorization", "credentials belong in the upstream's credential"},
		{27, "actions.archive.request.headers.if-match", "conditional: if_match sends the target's version as If-Match itself"},
		{28, "actions.archive.request.headers.Idempotency-Key", "idempotency_header sends each target's key as Idempotency-Key itself"},
		{29, "actions.archive.request.headers.Content-Type", "encoding: form sends its own Content-Type"},
		{30, "actions.archive.request.headers.X Target", `"X Target" is not a header name`},
	})
	// If-Match: "{{version}}" says what if_match sends (airlock init
	// writes it so).
	valid := append(append([]string(nil), lines[:25]...), "        If-Match: \"{{version}}\"")
	valid = append(valid, lines[30:]...)
	if _, err := Parse(configtest.Lines(valid...)); err != nil {
		t.Fatalf("an action's own X-Amz-Target is refused: %v", err)
	}
}

// TestCheck_ABulkBodysAfterIsTheEffectFromParamsAlone: a batch's after is
// each effect's to rendered once from the params; a compensation whose
// effect reads restore has no such value, so a bulk body naming
// {{after.status}} would stop the undo with nothing sent. check refuses
// it; bulk.each, rendered per target with its restore, may name it.
func TestCheck_ABulkBodysAfterIsTheEffectFromParamsAlone(t *testing.T) {
	lines := append(append([]string(nil), configtest.MinimalUpstream...), configtest.MinimalResource...)
	lines = append(lines,
		"      status: {type: string}",       // 13
		"    get: {path: \"/items/{{id}}\"}", // 14
		"actions:",                           // 15
		"  archive:",                         // 16
		"    resource: items",                // 17
		"    request: {method: PATCH, path: \"/items/{{id}}\", body: {status: archived}}", // 18
		"    conditional: reread",                     // 19
		"    effect: [{field: status, to: archived}]", // 20
		"    compensation: unarchive",                 // 21
		"  unarchive:",                                // 22
		"    resource: items",                         // 23
		"    bulk:",                                   // 24
		"      method: POST",                          // 25
		"      path: /items/bulk",                     // 26
		"      body: {ids: \"{{ids}}\", status: \"{{after.status}}\"}", // 27
		"      max_batch: 10",       // 28
		"      results: .",          // 29
		"      result_id: id",       // 30
		"      result_status: ok",   // 31
		"      applied: [\"true\"]", // 32
		"    conditional: reread",   // 33
		"    effect: [{field: status, to: \"{{restore.status}}\"}]", // 34
	)
	checkErrors(t, parseErrors(t, configtest.Lines(lines...)), []wantErr{
		{27, "actions.unarchive.bulk.body.status", "{{after.status}}: a bulk body's after is the effect's to rendered from params alone"},
	})
	fixed := append(append([]string(nil), lines[:26]...),
		"      body: {docs: \"{{each}}\"}",
		"      each: {id: \"{{id}}\", status: \"{{after.status}}\"}")
	fixed = append(fixed, lines[27:]...)
	if _, err := Parse(configtest.Lines(fixed...)); err != nil {
		t.Fatalf("bulk.each naming each target's after is refused: %v", err)
	}
}
