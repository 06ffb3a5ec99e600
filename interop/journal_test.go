package interop

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// journalTarget is one target of an operation's journal, as get_operation
// tells it to the agent.
type journalTarget struct {
	ID         string         `json:"id"`
	Outcome    string         `json:"outcome"`
	HTTPStatus int            `json:"http_status"`
	Note       string         `json:"note"`
	Version    string         `json:"version"`
	Attempts   int            `json:"attempts"`
	Before     map[string]any `json:"before"`
	After      map[string]any `json:"after"`
	Problem    *struct {
		Code         string `json:"code"`
		StateChanged string `json:"state_changed"`
	} `json:"problem"`
}

// code is the target's problem code, or "".
func (j journalTarget) code() string {
	if j.Problem == nil {
		return ""
	}
	return j.Problem.Code
}

// commitOp commits a previewed selection and waits for its operation to
// end, whatever its outcome; it returns the operation's id and its last
// get_operation data.
func commitOp(t *testing.T, w *airlock, sel map[string]any) (string, map[string]any) {
	t.Helper()
	res := w.tool(t, "commit_bulk_action", map[string]any{"selection_id": sel["selection_id"], "expected_digest": sel["digest"],
		"action": sel["action"], "mode": "execute", "wait_ms": 60000})
	data := res["data"].(map[string]any)
	op := data["operation_id"].(string)
	for i := 0; data["status"] == "running" && i < 240; i++ {
		time.Sleep(250 * time.Millisecond)
		data = w.tool(t, "get_operation", map[string]any{"operation_id": op})["data"].(map[string]any)
	}
	if data["status"] == "running" {
		t.Fatalf("operation %s still running after a minute: counts %v", op, data["counts"])
	}
	return op, data
}

// journalOf is every target of the operation's journal, by id.
func journalOf(t *testing.T, w *airlock, op string) map[string]journalTarget {
	t.Helper()
	out := map[string]journalTarget{}
	args := map[string]any{"operation_id": op, "page_size": 500}
	for pages := 0; ; pages++ {
		if pages == 100 {
			t.Fatalf("the journal of %s did not end within 100 pages", op)
		}
		res := w.tool(t, "get_operation", args)
		var page struct {
			Data struct {
				Results       []journalTarget `json:"results"`
				ResultsCursor string          `json:"results_cursor"`
			} `json:"data"`
		}
		remarshal(t, res, &page)
		for _, r := range page.Data.Results {
			out[r.ID] = r
		}
		if page.Data.ResultsCursor == "" {
			return out
		}
		args["cursor"] = page.Data.ResultsCursor
	}
}

// outcomeCounts counts a journal's outcomes.
func outcomeCounts(j map[string]journalTarget) map[string]int {
	out := map[string]int{}
	for _, r := range j {
		out[r.Outcome]++
	}
	return out
}

// unsettled describes the journal's targets that did not succeed, a few
// of each note, for a failure message.
func unsettled(j map[string]journalTarget) string {
	byNote := map[string][]string{}
	for _, r := range j {
		if r.Outcome != "succeeded" {
			k := fmt.Sprintf("%s %s: %s", r.Outcome, r.code(), r.Note)
			byNote[k] = append(byNote[k], r.ID)
		}
	}
	var lines []string
	for k, ids := range byNote {
		sort.Strings(ids)
		lines = append(lines, fmt.Sprintf("%d × %s (e.g. %v)", len(ids), k, head(ids)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "; ")
}

// remarshal decodes a tool's decoded answer into a typed view.
func remarshal(t *testing.T, v any, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("decode %s: %v", truncated(b), err)
	}
}

func truncated(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
