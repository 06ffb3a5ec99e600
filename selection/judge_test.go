package selection_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/selection"
)

// TestWriteIsProvenByTheTargetsRecord: a target succeeds only when a
// record of it (the answer, when it is the target's own record, or a
// re-read) shows the effect and every other declared field as the preview
// read it. A 204 or {} over a write the API refused silently, another
// account's record, an answer that only echoes the request, and a write
// that replaced the whole record are never succeeded: the target is
// re-read, and stays unknown with what the re-reads showed. A 204 over a
// write that applied is settled by the re-read.
func TestWriteIsProvenByTheTargetsRecord(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault, action string
		want          selection.Outcome
		note          string // in the final note
		applied       int    // the lab's writes to the target
	}{
		// archive_reread cannot be sent again safely: what the first
		// answer and the re-reads show is the outcome.
		{fixtures.LabNoContent, "archive_reread", selection.TargetUnknown, "untouched", 0},
		{fixtures.LabNoContentApplied, "archive_reread", selection.TargetSucceeded, "re-read shows the change", 1},
		{fixtures.LabEmptyObject, "archive_reread", selection.TargetUnknown, "untouched", 0},
		{fixtures.LabOtherRecord, "archive_reread", selection.TargetUnknown, "untouched", 0},
		{fixtures.LabEcho, "archive_reread", selection.TargetUnknown, "untouched", 0},
		{fixtures.LabIgnored, "archive_reread", selection.TargetUnknown, "untouched", 0},
		{fixtures.LabReplace, "archive_reread", selection.TargetUnknown, "name", 1},
		// A conditional write is sent again after an untouched re-read:
		// the second answer, the target's record, proves it.
		{fixtures.LabNoContent, "archive_version", selection.TargetSucceeded, "", 1},
		// An action whose answers are not evidence re-reads every target.
		{"", "archive_verified", selection.TargetSucceeded, "re-read shows the change", 1},
	} {
		t.Run(tc.fault+"/"+tc.action, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := fixtures.NewWriteLab(3)
				if tc.fault != "" {
					api.SetFault("acc-0001", fixtures.LabFault{Kind: tc.fault})
				}
				l := newLab(t, t.TempDir(), api, time.Second)
				op := l.commit(l.preview(tc.action, nil, nil), false)
				tg := l.targets(op.ID)["acc-0001"]
				if tg.Outcome != tc.want || !strings.Contains(tg.Note, tc.note) {
					t.Fatalf("acc-0001: %s (%q); want %s, noting %q", tg.Outcome, tg.Note, tc.want, tc.note)
				}
				if n := api.Applied()["acc-0001"]; n != tc.applied {
					t.Fatalf("the lab applied %d writes to acc-0001, want %d", n, tc.applied)
				}
				if tg.Outcome != selection.TargetSucceeded && (tg.Problem == nil || tg.Problem.StateChanged != "unknown" ||
					tg.Problem.Code != envelope.ProblemWriteUnconfirmed) {
					t.Fatalf("acc-0001's problem %+v; want UPSTREAM_WRITE_UNCONFIRMED, state_changed unknown", tg.Problem)
				}
				// The others answered with their own records: proven at once.
				for _, id := range []string{"acc-0000", "acc-0002"} {
					if o := l.targets(op.ID)[id]; o.Outcome != selection.TargetSucceeded && !(tc.fault == fixtures.LabOtherRecord && id == "acc-0002") {
						t.Fatalf("%s: %s (%q); want succeeded", id, o.Outcome, o.Note)
					}
				}
				if tc.fault == fixtures.LabOtherRecord {
					// The account the upstream wrote instead was archived
					// by the lab; its own write then found it archived.
					if got := api.Account("acc-0002")["status"]; got != "archived" {
						t.Fatalf("acc-0002 is %v in the lab", got)
					}
				}
			})
		})
	}
}
