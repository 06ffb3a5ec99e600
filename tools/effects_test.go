package tools

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// tagActions are two ways to add a tag through an endpoint that replaces
// the list it is sent (as WordPress does): with the whole computed list,
// and, wrongly, with the new tag alone.
const tagActions = `
  tag_whole:
    resource: subscriptions
    request:
      method: PUT
      path: "/v1/subscriptions/{{id}}/tags"
      body: {tags: "{{after.tags}}"}
    params: {type: object, required: [tag], properties: {tag: {type: string}}}
    conditional: reread
    effect:
      - {field: tags, op: add, to: "{{params.tag}}"}
    compensation: untag_whole
  untag_whole:
    resource: subscriptions
    request:
      method: PUT
      path: "/v1/subscriptions/{{id}}/tags"
      body: {tags: "{{after.tags}}"}
    params: {type: object, required: [tag], properties: {tag: {type: string}}}
    conditional: reread
    effect:
      - {field: tags, op: remove, to: "{{params.tag}}"}
  tag_batch:
    resource: subscriptions
    bulk:
      method: POST
      path: /v1/subscriptions/batch
      body: {requests: "{{each}}"}
      each: {method: PUT, path: "/v1/subscriptions/{{id}}/tags", body: {tags: "{{after.tags}}"}}
      max_batch: 7
      results: responses
      result_match: position
      result_status: status
      result_item: body
      applied: [200]
      not_found: [404]
    params: {type: object, required: [tag], properties: {tag: {type: string}}}
    conditional: reread
    effect:
      - {field: tags, op: add, to: "{{params.tag}}"}
  tag_batch_alone:
    resource: subscriptions
    bulk:
      method: POST
      path: /v1/subscriptions/batch
      body: {requests: "{{each}}"}
      each: {method: PUT, path: "/v1/subscriptions/{{id}}/tags", body: {tags: ["{{params.tag}}"]}}
      max_batch: 7
      results: responses
      result_match: position
      result_status: status
      result_item: body
      applied: [200]
      not_found: [404]
    params: {type: object, required: [tag], properties: {tag: {type: string}}}
    conditional: reread
    reconcile: {backoff: 10ms, max_backoff: 40ms}
    effect:
      - {field: tags, op: add, to: "{{params.tag}}"}
  tag_alone:
    resource: subscriptions
    request:
      method: PUT
      path: "/v1/subscriptions/{{id}}/tags"
      body: {tags: ["{{params.tag}}"]}
    params: {type: object, required: [tag], properties: {tag: {type: string}}}
    conditional: reread
    # Its targets' outcomes contradict the effect and are re-read in
    # rounds: 10–40 ms apart here, in test time.
    reconcile: {backoff: 10ms, max_backoff: 40ms}
    effect:
      - {field: tags, op: add, to: "{{params.tag}}"}
`

func tagHarness(t *testing.T) *harness {
	return newHarness(t, withConfig(func(u string) []byte { return append(fixtures.DemoConfig(u), tagActions...) }))
}

// tagsOf is every subscription's tags, by id, as the upstream holds them.
func tagsOf(h *harness) map[string][]any {
	out := map[string][]any{}
	for _, r := range h.api.Collection(fixtures.DatasetSubscriptions).All() {
		tags, _ := r["tags"].([]any)
		out[r.ID()] = tags
	}
	return out
}

// TestAddEffect_SendsTheWholeListAndKeepsEveryTag: an add to a list the
// API replaces sends each target's before list with the tag, so that
// every target keeps the tags it had; the preview shows the whole list
// per target, and the compensation removes only the tag.
func TestAddEffect_SendsTheWholeListAndKeepsEveryTag(t *testing.T) {
	t.Parallel()
	h := tagHarness(t)
	before := tagsOf(h)
	action := map[string]any{"type": "tag_whole", "params": map[string]any{"tag": "reviewed"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": action})
	if p.env.Problem != nil || p.data["committable"] != true {
		t.Fatalf("preview: %s", p.raw)
	}
	eff := p.data["effect"].([]any)[0].(map[string]any)
	perTarget, _ := eff["after"].(map[string]any)["per_target"].([]any)
	if eff["op"] != "add" || eff["value"] != "reviewed" || len(perTarget) == 0 {
		t.Fatalf("the preview's effect must show the whole list per target: %v", eff)
	}
	members := h.members(p.data["selection_id"])
	withOthers := 0
	for _, id := range members {
		if len(before[id]) > 0 {
			withOthers++
		}
	}
	if withOthers == 0 {
		t.Fatal("no member has a tag already: the case proves nothing")
	}
	op := h.commitAndWait(p)
	if c := counts(op); op.data["status"] != selection.OpCompleted || c[selection.TargetSucceeded] != len(members) {
		t.Fatalf("commit: %s", op.raw)
	}
	after := tagsOf(h)
	for _, id := range members {
		want := append(append([]any{}, before[id]...), "reviewed")
		if slices.Contains(before[id], any("reviewed")) {
			want = before[id]
		}
		if fmt.Sprint(after[id]) != fmt.Sprint(want) {
			t.Fatalf("%s: tags %v became %v, want %v", id, before[id], after[id], want)
		}
	}
	comp := h.call("preview_selection", map[string]any{"compensate": op.data["operation_id"]})
	if comp.env.Problem != nil {
		t.Fatalf("compensation preview: %s", comp.raw)
	}
	undo := h.commitAndWait(comp)
	if undo.data["status"] != selection.OpCompleted {
		t.Fatalf("compensation: %s", undo.raw)
	}
	restored := tagsOf(h)
	for _, id := range members {
		if fmt.Sprint(restored[id]) != fmt.Sprint(before[id]) {
			t.Fatalf("%s: tags %v, after the compensation %v", id, before[id], restored[id])
		}
	}
}

// TestAddEffect_ALostElementIsNeverSucceeded: an action that sends the
// new tag alone to an API that replaces the list makes the targets lose
// the tags they had. The re-read shows a list other than the computed
// whole after-value, so those targets are never journaled succeeded.
func TestAddEffect_ALostElementIsNeverSucceeded(t *testing.T) {
	t.Parallel()
	h := tagHarness(t)
	before := tagsOf(h)
	action := map[string]any{"type": "tag_alone", "params": map[string]any{"tag": "reviewed"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": action})
	op := h.commitAndWait(p)
	lost := 0
	for _, r := range op.data["results"].([]any) {
		res := r.(map[string]any)
		id := res["id"].(string)
		had := len(before[id]) > 0 && !(len(before[id]) == 1 && before[id][0] == "reviewed")
		if had {
			lost++
			if res["outcome"] == string(selection.TargetSucceeded) {
				t.Fatalf("%s lost its tags %v and was journaled succeeded: %v", id, before[id], res)
			}
		}
	}
	if lost == 0 {
		t.Fatal("no target had other tags: the case proves nothing")
	}
}

// TestBulkEach_ALostElementIsNeverSucceeded: a bulk endpoint that answers
// 200 for each target with its record (result_item), after a body that
// sent the new tag alone to an API that replaces the list: the records
// show the tags the targets lost, so those targets are never journaled
// succeeded on the status alone.
func TestBulkEach_ALostElementIsNeverSucceeded(t *testing.T) {
	t.Parallel()
	h := tagHarness(t)
	before := tagsOf(h)
	action := map[string]any{"type": "tag_batch_alone", "params": map[string]any{"tag": "batched"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": action})
	op := h.commitAndWait(p)
	lost := 0
	for _, r := range op.data["results"].([]any) {
		res := r.(map[string]any)
		id := res["id"].(string)
		if len(before[id]) > 0 && !(len(before[id]) == 1 && before[id][0] == "batched") {
			lost++
			if res["outcome"] == string(selection.TargetSucceeded) {
				t.Fatalf("%s lost its tags %v in a batch and was journaled succeeded: %v", id, before[id], res)
			}
		}
	}
	if lost == 0 {
		t.Fatal("no target had other tags: the case proves nothing")
	}
}

// TestBulkEach_OneObjectPerTargetMatchedByPosition: a bulk endpoint that
// takes one request object per target and answers one response per
// request, in order and without ids (WordPress's /batch/v1), carries each
// target's whole computed list; every target keeps its tags and gains the
// new one, and each is journaled from the response in its position.
func TestBulkEach_OneObjectPerTargetMatchedByPosition(t *testing.T) {
	t.Parallel()
	h := tagHarness(t)
	before := tagsOf(h)
	action := map[string]any{"type": "tag_batch", "params": map[string]any{"tag": "batched"}}
	p := h.call("preview_selection", map[string]any{"resource": "subscriptions", "filter": map[string]any{"status": "past_due", "region": "eu"}, "action": action})
	if p.env.Problem != nil || p.data["committable"] != true {
		t.Fatalf("preview: %s", p.raw)
	}
	members := h.members(p.data["selection_id"])
	op := h.commitAndWait(p)
	if c := counts(op); op.data["status"] != selection.OpCompleted || c[selection.TargetSucceeded] != len(members) {
		t.Fatalf("commit: %s", op.raw)
	}
	after := tagsOf(h)
	for _, id := range members {
		want := append(append([]any{}, before[id]...), "batched")
		if fmt.Sprint(after[id]) != fmt.Sprint(want) {
			t.Fatalf("%s: tags %v became %v, want %v", id, before[id], after[id], want)
		}
	}
	batches := 0
	for _, w := range h.api.Writes() {
		if strings.HasSuffix(w.Path, "/batch") {
			batches++
		}
	}
	if want := (len(members) + 6) / 7; batches != want {
		t.Fatalf("%d batch requests for %d targets at 7 a batch, want %d", batches, len(members), want)
	}
}
