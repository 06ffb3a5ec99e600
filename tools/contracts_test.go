package tools

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

func inactiveProjects(extra map[string]any) map[string]any {
	a := map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "action": archive}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// renameOwner makes the upstream answer owner_id instead of owner, as a
// provider that renamed the field would, for every project.
func renameOwner(h *harness, ids ...string) {
	c := h.api.Collection(fixtures.DatasetProjects)
	for _, r := range c.All() {
		if len(ids) > 0 && !slices.Contains(ids, r.ID()) {
			continue
		}
		c.Update(r.ID(), func(r fixtures.Record) { r["owner_id"] = r["owner"]; delete(r, "owner") })
	}
}

// TestRenamedDecisionField_OwnerBecomesOwnerID_StopsArchivePlanning: the
// provider renames owner to owner_id and keeps answering 200. A lenient
// parser would read every project as ownerless; airlock withholds the
// records from reads and refuses to plan a write on them.
func TestRenamedDecisionField_OwnerBecomesOwnerID_StopsArchivePlanning(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	renameOwner(h)
	read := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"owner": nil}, "max_items": 0})
	if read.env.Complete || !read.env.HasReason(envelope.ContractViolation) || read.totalMatched() != 0 {
		t.Fatalf("ownerless projects must not be reported: complete %v, %d matched, %v", read.env.Complete, read.totalMatched(), read.reasonCodes())
	}
	rs := read.reason(envelope.ContractViolation)
	if rs.Field != "owner" || rs.Rule != "required" || *rs.Count != fixtures.ProjectCount || rs.SampleID == "" {
		t.Fatalf("the reason names the field, the rule, the count and a sample: %+v", rs)
	}
	p := h.call("preview_selection", inactiveProjects(nil))
	if p.data["committable"] != false || int(p.data["counts"].(map[string]any)["members"].(float64)) != 0 {
		t.Fatalf("no project may become a target: %v", p.data["counts"])
	}
	amb := p.data["ambiguous"].([]any)
	if len(amb) == 0 || !strings.Contains(amb[0].(map[string]any)["note"].(string), "field owner missing") {
		t.Fatalf("the ambiguous records say what is missing in plain words: %v", amb)
	}
}

// TestMissingDecisionField_OnOneRecord_WithholdsOnlyThatRecord.
func TestMissingDecisionField_OnOneRecord_WithholdsOnlyThatRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.api.Collection(fixtures.DatasetProjects)
	var broken string
	for _, r := range c.All() {
		if r["state"] == "inactive" {
			broken = r.ID()
			break
		}
	}
	c.Update(broken, func(r fixtures.Record) { delete(r, "owner") })
	read := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "max_items": 0})
	rs := read.reason(envelope.ContractViolation)
	if rs.SampleID != broken || *rs.Count != 1 || read.env.Complete {
		t.Fatalf("one record withheld, named as the sample: %+v", rs)
	}
	p := h.call("preview_selection", inactiveProjects(nil))
	if p.data["committable"] != false {
		t.Fatal("one ambiguous record blocks the commit")
	}
	// The operator excludes it explicitly: the selection becomes committable.
	fixed := h.call("preview_selection", inactiveProjects(map[string]any{"exclude": []any{
		map[string]any{"field": "id", "op": "eq", "value": broken, "reason": "owner unknown: reviewed by hand"}}}))
	if fixed.data["committable"] != true || int(fixed.data["counts"].(map[string]any)["ambiguous"].(float64)) != 0 {
		t.Fatalf("an explicit exclusion resolves the ambiguity: %v %v", fixed.data["counts"], fixed.data["committable_reasons"])
	}
}

// TestAliasWithBothNamesDisagreeing_IsAnErrorNeverAChoice: during a
// declared migration both names may arrive; when they disagree, airlock
// picks neither.
func TestAliasWithBothNamesDisagreeing_IsAnErrorNeverAChoice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(u string) []byte {
		return []byte(strings.Replace(string(fixtures.DemoConfig(u)),
			"owner: {type: string, nullable: true, required: true, decision: true, description: owning team; a project without one is nobody's}",
			"owner: {type: string, nullable: true, required: true, decision: true, aliases: [{name: owner_id, until: 2099-12-31}]}", 1))
	}))
	c := h.api.Collection(fixtures.DatasetProjects)
	ids := c.IDs()
	renameOwner(h, ids[0], ids[1])                                                     // migrated: only owner_id
	c.Update(ids[2], func(r fixtures.Record) { r["owner_id"] = "team-somebody-else" }) // both, disagreeing
	c.Update(ids[3], func(r fixtures.Record) { r["owner_id"] = r["owner"] })           // both, agreeing
	r := h.call("search_all", map[string]any{"resource": "projects", "fields": []any{"id", "owner"}, "max_items": 1000})
	rs := r.reason(envelope.ContractViolation)
	if rs.Rule != "alias_conflict" || rs.SampleID != ids[2] || *rs.Count != 1 {
		t.Fatalf("the disagreeing record is withheld as an alias conflict: %+v", rs)
	}
	owners := map[string]any{}
	for _, it := range r.items() {
		owners[it["id"].(string)] = it["owner"]
	}
	original := fixtures.Projects()[0]["owner"]
	if got, ok := owners[ids[0]]; !ok || got != original {
		t.Fatalf("a migrated record is read through its alias: owner %v, want %v", got, original)
	}
	if _, ok := owners[ids[2]]; ok {
		t.Fatal("the disagreeing record was delivered")
	}
	if !r.env.HasWarning(envelope.WarnDeprecatedField) {
		t.Fatal("reading through an alias is a DEPRECATED_FIELD warning")
	}
}

// TestNewEnumValue_IsAWarningInReportsAndARefusalOnTheActionPath: the
// upstream adds visibility "secret" (no decision rests on it) and state
// "cancelled" (decisions rest on it).
func TestNewEnumValue_IsAWarningInReportsAndARefusalOnTheActionPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.api.Collection(fixtures.DatasetProjects)
	var secret, cancelled string
	for _, r := range c.All() {
		switch {
		case secret == "":
			secret = r.ID()
		case cancelled == "" && r["state"] == "inactive":
			cancelled = r.ID()
		}
	}
	c.Update(secret, func(r fixtures.Record) { r["visibility"] = "secret" })
	report := h.call("search_all", map[string]any{"resource": "projects", "max_items": 0, "group_by": []any{"visibility"}})
	if !report.env.Complete || !report.env.HasWarning(envelope.WarnUnknownEnumValue) {
		t.Fatalf("a new value in a field no decision rests on is a warning, not a refusal: %v %v", report.reasonCodes(), report.env.Warnings)
	}
	c.Update(cancelled, func(r fixtures.Record) { r["state"] = "cancelled" })
	// Preview with a precondition on state: the action path refuses.
	p := h.call("preview_selection", map[string]any{"resource": "projects", "action": archive})
	if p.data["committable"] != false {
		t.Fatal("a record with an unknown state must not be planned")
	}
	found := false
	for _, a := range p.data["ambiguous"].([]any) {
		m := a.(map[string]any)
		if m["id"] == cancelled && strings.Contains(m["note"].(string), "state") {
			found = true
		}
	}
	if !found {
		t.Fatalf("the record with state cancelled is listed as ambiguous: %v", p.data["ambiguous"])
	}
}

// TestTypeChange_StatusStringBecomesObject_Refuses: a field whose type
// changed is never read as if it had not.
func TestTypeChange_StatusStringBecomesObject_Refuses(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.api.Collection(fixtures.DatasetSubscriptions)
	var changed string
	for _, r := range c.All() {
		if r["status"] == "past_due" && r["region"] == "eu" {
			changed = r.ID()
			break
		}
	}
	c.Update(changed, func(r fixtures.Record) { r["status"] = map[string]any{"phase": "past_due"} })
	p := h.call("preview_selection", seedPreview(map[string]any{"filter": map[string]any{"region": "eu"}}))
	if p.data["committable"] != false {
		t.Fatal("a status object must not be read as a status string")
	}
	r := h.call("search_all", map[string]any{"resource": "subscriptions", "filter": map[string]any{"region": "eu"}, "max_items": 0})
	if rs := r.reason(envelope.ContractViolation); rs.Field != "status" || rs.Rule != "type" {
		t.Fatalf("want a type violation on status, got %+v", rs)
	}
}

// TestInvariantBroken_IsAContractViolation: a canceled subscription that
// still owes money breaks a declared invariant.
func TestInvariantBroken_IsAContractViolation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c := h.api.Collection(fixtures.DatasetSubscriptions)
	var id string
	for _, r := range c.All() {
		if r["status"] == "canceled" {
			id = r.ID()
			break
		}
	}
	c.Update(id, func(r fixtures.Record) { r["amount_due"] = 990 })
	r := h.call("search_all", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "canceled"}, "max_items": 0})
	rs := r.reason(envelope.ContractViolation)
	if rs.Field != "amount_due" || !strings.Contains(rs.Rule, "a canceled subscription owes nothing") || rs.SampleID != id {
		t.Fatalf("the invariant is named in the reason: %+v", rs)
	}
}

// TestPermissionField_IsNeverDefaulted: a permission that is absent is not
// true.
func TestPermissionField_IsNeverDefaulted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(u string) []byte {
		y := string(fixtures.DemoConfig(u))
		y = strings.Replace(y, "      etag: {type: string}\n", "      etag: {type: string}\n      archivable: {type: boolean, permission: true}\n", 1)
		y = strings.Replace(y, "      - {field: state, op: eq, value: inactive}\n", "      - {field: state, op: eq, value: inactive}\n      - {field: archivable, op: eq, value: true}\n", 1)
		return []byte(y)
	}))
	c := h.api.Collection(fixtures.DatasetProjects)
	ids := []string{}
	for _, r := range c.All() {
		if r["state"] == "inactive" {
			ids = append(ids, r.ID())
		}
	}
	for i, id := range ids {
		switch i {
		case 0:
			// absent: never read as true
		case 1:
			c.Update(id, func(r fixtures.Record) { r["archivable"] = "yes" })
		case 2:
			c.Update(id, func(r fixtures.Record) { r["archivable"] = false })
		default:
			c.Update(id, func(r fixtures.Record) { r["archivable"] = true })
		}
	}
	p := h.call("preview_selection", inactiveProjects(nil))
	counts := p.data["counts"].(map[string]any)
	if int(counts["ambiguous"].(float64)) != 2 || int(counts["members"].(float64)) != len(ids)-3 || int(counts["excluded"].(float64)) != 1 {
		t.Fatalf("absent and non-boolean permissions are ambiguous, false excludes, only true admits: %v", counts)
	}
}

// TestWriteAnswerBreakingItsContract_StopsTheOperation: the first answer
// that does not look like what was approved stops the run, in words an
// operator reads.
func TestWriteAnswerBreakingItsContract_StopsTheOperation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withConfig(func(u string) []byte {
		return []byte(strings.Replace(string(fixtures.DemoConfig(u)), `      - {field: owner, to: "{{params.owner}}"}`,
			`      - {field: owner, to: "{{params.owner}}"}
    response:
      fields:
        id: {type: string, required: true}
        owner: {type: string, required: true}`, 1))
	}))
	ids := ownerlessVisible(h, 30)
	p := h.call("preview_selection", map[string]any{"resource": "service_accounts", "ids": ids, "action": assignOwner})
	h.api.SetWriteFaults(fixtures.DatasetServiceAccounts, fixtures.WriteFaults{Body: `{"id":"x","owner_id":"team-identity"}`})
	op := h.operation(h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"],
		"action": assignOwner, "mode": "execute"}).data["operation_id"])
	if op.data["status"] != selection.OpStopped || op.data["stop_reason"] != "field owner missing in the upstream's answer: assign_owner stopped" {
		t.Fatalf("want the operation stopped in plain words, got %v %q", op.data["status"], op.data["stop_reason"])
	}
	if n := len(h.api.Writes()); n != 1 {
		t.Fatalf("the first anomalous answer stops the run: %d writes", n)
	}
	c := counts(op)
	if c[selection.TargetUnknown] != 1 || c[selection.TargetPending] != len(ids)-1 {
		t.Fatalf("counts %v", c)
	}
}

func ownerlessVisible(h *harness, n int) []any {
	var out []any
	for _, r := range h.api.Collection(fixtures.DatasetServiceAccounts).All() {
		if r["owner"] == nil && r["_hidden"] != true && len(out) < n {
			out = append(out, r.ID())
		}
	}
	return out
}

// TestOpenAPIComponentContract_WithholdsRecordsThatBreakIt: a resource's
// contract may be a component of the provider's OpenAPI document (3.0,
// with nullable) instead of the field list; a record that breaks it on a
// decision field (here an owner the document's pattern refuses, which the
// field list alone would accept) is withheld and counted like any other
// violation, and a null owner, which the document allows, is not one.
func TestOpenAPIComponentContract_WithholdsRecordsThatBreakIt(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(doc, []byte(`openapi: 3.0.3
info: {title: projects, version: "1"}
paths: {}
components:
  schemas:
    Project:
      type: object
      required: [id, owner, state]
      properties:
        id: {type: string}
        owner: {type: string, nullable: true, pattern: "^team-[a-z]+$"}
        state: {type: string, enum: [active, inactive, archived]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	api := newFixture(t)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	h := newHarness(t, demoAt(srv.URL, "    review_groups: [state, owner]\n",
		"    review_groups: [state, owner]\n    contract: {openapi: {file: "+doc+", component: Project}}\n"))
	c := api.Collection(fixtures.DatasetProjects)
	var inactive, unowned []string
	for _, r := range c.All() {
		switch {
		case r["state"] == "inactive" && r["owner"] != nil && len(inactive) < 2:
			inactive = append(inactive, r.ID())
		case r["state"] == "inactive" && r["owner"] == nil:
			unowned = append(unowned, r.ID())
		}
	}
	if len(inactive) < 2 || len(unowned) == 0 {
		t.Fatalf("the demo data lacks the records this test needs: %d owned, %d unowned inactive", len(inactive), len(unowned))
	}
	c.Update(inactive[0], func(r fixtures.Record) { r["owner"] = map[string]any{"team": r["owner"]} }) // type changed
	c.Update(inactive[1], func(r fixtures.Record) { r["owner"] = "Team Payments" })                    // only the document's pattern refuses it

	read := h.call("search_all", map[string]any{"resource": "projects", "filter": map[string]any{"state": "inactive"}, "fields": []any{"id", "owner"}, "max_items": 1000})
	var withheld int
	for _, rs := range read.env.IncompleteReasons {
		if rs.Code == envelope.ContractViolation {
			withheld += *rs.Count
		}
	}
	if read.env.Complete || withheld != 2 || read.env.Continuation.Kind != envelope.ContinueNone {
		t.Fatalf("want 2 records withheld under CONTRACT_VIOLATION, got %d: %s", withheld, read.raw)
	}
	got := map[string]bool{}
	for _, it := range read.data["items"].([]any) {
		got[it.(map[string]any)["id"].(string)] = true
	}
	if got[inactive[0]] || got[inactive[1]] || !got[unowned[0]] {
		t.Fatalf("the broken records must be withheld and the unowned one delivered: %v %v %v", got[inactive[0]], got[inactive[1]], got[unowned[0]])
	}
}
