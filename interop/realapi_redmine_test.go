package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/probe"
)

// TestRedmine_ValuesAreCarriedIntactAndCountedExactly runs airlock against
// Redmine 5.0 over MariaDB (testdata/redmine.yaml), as its administrator,
// and holds every answer to MariaDB's own rows, read with SQL. Redmine
// reads a filter value's leading ^ ! ~ * $ = as an operator and splits it
// at every |: a team named ^beta, !ops, =eq or a|b is still counted
// exactly (escaped as =^beta, or matched by airlock alone), complete; an
// updated_on comparison is sent with Redmine's >= or <= and is exact, not
// "updated at that second"; a team Redmine stores as "" reads as null in
// every item delivered, as the null filter and the groups count it; and
// probe names the undeclared forms wrong and the declared ones ok.
func TestRedmine_ValuesAreCarriedIntactAndCountedExactly(t *testing.T) {
	rm := upstreams.StartRedmine(t)
	env := map[string]string{"REDMINE_API_KEY": rm.APIKey}
	al := startAirlock(t, "redmine.yaml", rm.URL, env)
	t.Run("evidence_mutation", func(t *testing.T) {
		checkEvidence(t, evidenceCase{upstream: "Redmine", config: "redmine.yaml", base: rm.URL, env: env, resource: "issues",
			filter: map[string]any{"team": "^beta"}, pageSize: 25})
	})
	truth := rm.Issues(t)
	if len(truth) != upstreams.DefaultRedmineIssues {
		t.Fatalf("MariaDB holds %d issues; seeded %d", len(truth), upstreams.DefaultRedmineIssues)
	}

	t.Run("every_team_counts_exactly", func(t *testing.T) {
		filters := []any{[]any{"beta", "a|b"}} // a list with a member Redmine cannot be sent
		for _, team := range upstreams.RedmineTeams {
			if team != "" { // "" is null: below
				filters = append(filters, team)
			}
		}
		for _, f := range filters {
			keep := valueIn("team", f)
			if list, ok := f.([]any); ok {
				keep = valueIn("team", list...)
			}
			want := len(upstreams.IDs(truth, keep))
			if want == 0 {
				t.Fatalf("no issue holds team %q: the case needs some", f)
			}
			ans := al.search(t, map[string]any{"resource": "issues", "filter": map[string]any{"team": f}, "max_items": 0, "deadline_ms": deadlineMS})
			t.Logf("team %q: %s; MariaDB holds %d", f, ans, want)
			checkClaim(t, fmt.Sprintf("team %q", f), ans, want)
			if !ans.Complete {
				t.Errorf("team %q: %s; want complete with MariaDB's %d", f, ans, want)
			}
		}
	})

	isNull := func(r upstreams.Record) bool { return r["team"] == nil || r["team"] == "" }
	cases := []upstreamCase{
		{name: "team_^beta", resource: "issues", filter: map[string]any{"team": "^beta"}, keep: valueIn("team", "^beta"), correct: true},
		{name: "teams_=eq_or_!ops", resource: "issues", filter: map[string]any{"team": []any{"=eq", "!ops"}}, keep: valueIn("team", "=eq", "!ops"), correct: true},
		{name: "team_~core_in_a_tracker", resource: "issues", filter: map[string]any{"team": "~core", "tracker": rm.Trackers[1]},
			keep: func(r upstreams.Record) bool { return r["team"] == "~core" && r["tracker"] == float64(rm.Trackers[1]) }, correct: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, al, c, truth, "id", "") })
	}

	t.Run("comparisons_count_exactly", func(t *testing.T) {
		// Instants an issue was updated or created at (the boundary is
		// in the answer for >= and <=, out of it for >), and one between.
		at := func(i int, field string) string { return truth[i][field].(string) }
		for _, c := range []struct {
			filter, field string
			value         string
			keep          func(got, want string) bool
		}{
			{"updated_since", "updated_on", at(400, "updated_on"), func(g, w string) bool { return g >= w }},
			{"updated_since", "updated_on", "2025-03-01T12:00:00Z", func(g, w string) bool { return g >= w }},
			{"updated_until", "updated_on", at(700, "updated_on"), func(g, w string) bool { return g <= w }},
			{"created_since", "created_on", at(900, "created_on"), func(g, w string) bool { return g >= w }},
			{"updated_after", "updated_on", at(400, "updated_on"), func(g, w string) bool { return g > w }},
		} {
			want := len(upstreams.IDs(truth, func(r upstreams.Record) bool { return c.keep(r[c.field].(string), c.value) }))
			ans := al.search(t, map[string]any{"resource": "issues", "filter": map[string]any{c.filter: c.value}, "max_items": 0, "deadline_ms": deadlineMS})
			what := fmt.Sprintf("%s %s", c.filter, c.value)
			t.Logf("%s: %s; MariaDB holds %d", what, ans, want)
			checkClaim(t, what, ans, want)
			if !ans.Complete || want < 2 {
				t.Errorf("%s: %s; want complete with MariaDB's %d (at least 2)", what, ans, want)
			}
		}
	})

	t.Run("an_empty_team_reads_null_in_every_item", func(t *testing.T) {
		empty := len(upstreams.IDs(truth, valueIn("team", "")))
		nulls := len(upstreams.IDs(truth, isNull))
		if empty == 0 {
			t.Fatal("no issue holds team \"\": the case needs some")
		}
		args := map[string]any{"resource": "issues", "fields": []string{"id", "team"}, "group_by": []string{"team"}, "max_items": 1000, "deadline_ms": deadlineMS}
		var delivered, null, blank int
		normalized := false
		var groups answer
		for calls := 1; ; calls++ {
			ans := al.search(t, args)
			if calls == 1 {
				groups = ans
			}
			for _, it := range ans.Data.Items {
				delivered++
				switch v, ok := it["team"]; {
				case ok && v == nil:
					null++
				case v == "":
					blank++
				}
			}
			for _, w := range ans.Warnings {
				normalized = normalized || w.Code == "VALUE_NORMALIZED" && slices.Contains(w.Fields, "team")
			}
			if ans.Continuation.Cursor == "" || calls == 10 {
				break
			}
			args["cursor"] = ans.Continuation.Cursor
		}
		t.Logf("%d items delivered: %d with a null team, %d with \"\"; MariaDB holds %d issues without a team row and %d with \"\"", delivered, null, blank, nulls-empty, empty)
		if delivered != len(truth) || blank != 0 || null != nulls || !normalized {
			t.Errorf("%d items, %d carry \"\" and %d null, VALUE_NORMALIZED on team %t; want all %d, none with \"\", %d null, and the warning",
				delivered, blank, null, normalized, len(truth), nulls)
		}
		ans := al.search(t, map[string]any{"resource": "issues", "filter": map[string]any{"team": nil}, "max_items": 0, "deadline_ms": deadlineMS})
		checkClaim(t, "no team", ans, nulls)
		if !ans.Complete {
			t.Errorf("no team: %s; want complete with MariaDB's %d", ans, nulls)
		}
		if len(groups.Data.Groups["team"]) == 0 {
			t.Errorf("no team groups: %s", groups)
		}
		for _, g := range groups.Data.Groups["team"] {
			if g.Value == "" || g.Value == nil && g.Count != nulls {
				t.Errorf("group %q of %d; want no \"\" group and %d in null", g.Value, g.Count, nulls)
			}
		}
	})

	t.Run("probe_names_what_redmine_reads_otherwise", func(t *testing.T) {
		started := time.Now()
		rep := probe.CheckAssumptions(t.Context(), al.runtime.Resources["project_issues_undeclared"], probe.Options{MaxRequests: 100, PageSize: 100, Deadline: 5 * time.Minute})
		t.Logf("probe of project_issues_undeclared: %d requests, %.1fs", rep.Requests, time.Since(started).Seconds())
		for _, name := range []string{"filters.team.literal", "filters.updated_since.param"} {
			c := probeCheck(rep, name)
			t.Logf("%s: %s: %s (%s)", name, c.Status, c.Evidence, c.Hint)
			if c.Status != probe.Wrong {
				t.Errorf("undeclared, %s is %s; want wrong: Redmine reads the value otherwise", name, c.Status)
			}
		}
		if c := probeCheck(rep, "filters.team.literal"); !strings.Contains(c.Evidence, `"^"`) || !strings.Contains(c.Evidence, `"!"`) ||
			!strings.Contains(c.Evidence, `splits a value at "|"`) || !strings.Contains(c.Hint, `split: ["|"]`) {
			t.Errorf("filters.team.literal does not name ^ and ! as operators and | as where Redmine splits: %q (%s)", c.Evidence, c.Hint)
		}

		started = time.Now()
		rep = probe.CheckAssumptions(t.Context(), al.runtime.Resources["project_issues"], probe.Options{MaxRequests: 150, PageSize: 100, Deadline: 5 * time.Minute})
		t.Logf("probe of project_issues: %d requests, %.1fs", rep.Requests, time.Since(started).Seconds())
		for _, c := range rep.Checks {
			if c.Status == probe.Wrong {
				t.Errorf("declared as Redmine reads them, %s is wrong: %s", c.Check, c.Evidence)
			}
		}
		for _, name := range []string{"filters.team.literal", "filters.team.param", "filters.team.multi", "filters.team.null_param", "filters.updated_since.param", "filters.updated_until.param"} {
			c := probeCheck(rep, name)
			t.Logf("%s: %s: %s", name, c.Status, c.Evidence)
			if c.Status != probe.OK {
				t.Errorf("%s: %s; want ok", name, c.Status)
			}
		}
	})
}

func probeCheck(rep *probe.Report, name string) probe.Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return probe.Check{Check: name, Status: "absent"}
}

// TestRedmine_WritesAreSettledByRereadingTheIssue runs set_status
// (testdata/redmine.yaml) against Redmine and holds the journal to
// MariaDB's rows. Redmine answers every PUT 204 with no body, also when it
// drops what it was sent: only a re-read of the issue settles a write. A
// status the workflow refuses is never journaled succeeded, and the issues
// are unchanged; an allowed one is succeeded after the re-read, exactly as
// MariaDB holds it, and compensated. Redmine's JSON has no version, so the
// re-read before each write is a check, not a condition: the preview says
// NOT_CONDITIONAL, and another writer acting between the check and the PUT
// is shown where airlock can see it (a field outside the effect changed),
// and is lost where it cannot (the same field overwritten).
func TestRedmine_WritesAreSettledByRereadingTheIssue(t *testing.T) {
	rm := upstreams.StartRedmineWith(t, 150)
	px := startWriteProxy(t, rm.URL)
	w := withStore(t, startAirlock(t, "redmine.yaml", px.URL, map[string]string{"REDMINE_API_KEY": rm.APIKey}))
	bug, feature, support := rm.Trackers[0], rm.Trackers[1], rm.Trackers[2]
	inProgress, rejected := rm.Statuses[1], rm.Statuses[5]
	if got := rm.SQL(t, fmt.Sprintf("SELECT CONCAT((SELECT name FROM trackers WHERE id = %d), '/', (SELECT name FROM issue_statuses WHERE id = %d))", support, rejected)); len(got) != 1 || got[0] != "Support/Rejected" {
		t.Fatalf("tracker %d and status %d are %v; want Support/Rejected from Redmine's default data", support, rejected, got)
	}
	// No role may reject a Support issue: Redmine then drops a status_id
	// of Rejected from a PUT on one, and answers 204.
	rm.SQL(t, fmt.Sprintf("DELETE FROM workflows WHERE type = 'WorkflowTransition' AND tracker_id = %d AND new_status_id = %d", support, rejected))
	t.Run("a_status_the_workflow_refuses_is_never_succeeded", func(t *testing.T) {
		checkRedmineRefused(t, rm, px, w, support, rejected)
	})
	t.Run("an_allowed_status_is_succeeded_after_the_reread_and_compensated", func(t *testing.T) {
		checkRedmineAllowed(t, rm, px, w, bug, rejected)
	})
	t.Run("another_writer_between_the_check_and_the_write", func(t *testing.T) {
		checkRedmineLostUpdate(t, rm, px, w, feature, inProgress)
	})
	t.Run("write_evidence_mutation", func(t *testing.T) {
		pool := upstreams.IDs(rm.Issues(t), func(r upstreams.Record) bool {
			return r["project"] != float64(rm.Projects[0]) && r["project"] != float64(rm.Projects[1]) && r["status"] != float64(inProgress)
		})
		checkWriteEvidence(t, writeEvidenceCase{upstream: "Redmine 5.0", config: "redmine.yaml", base: rm.URL, env: map[string]string{"REDMINE_API_KEY": rm.APIKey},
			action: "set_status", params: map[string]any{"status": inProgress}, pool: pool, target: pathTarget(`^/issues/(\d+)\.json$`),
			applied: func(t *testing.T, ids []string) map[string]bool {
				out := map[string]bool{}
				for id, r := range redmineByID(t, rm) {
					if slices.Contains(ids, id) {
						out[id] = r["status"] == float64(inProgress)
					}
				}
				return out
			}})
	})
}

// redmineByID is MariaDB's issues by id.
func redmineByID(t *testing.T, rm *upstreams.Redmine) map[string]upstreams.Record {
	out := map[string]upstreams.Record{}
	for _, r := range rm.Issues(t) {
		out[r.ID()] = r
	}
	return out
}

// redminePreview previews set_status on the issues of a tracker in a
// project that are not in status yet, checks the preview holds exactly
// MariaDB's and warns NOT_CONDITIONAL, and returns the targets and the
// preview's data.
func redminePreview(t *testing.T, w *airlock, before map[string]upstreams.Record, tracker, project, status int) ([]string, map[string]any) {
	t.Helper()
	var targets []string
	for id, r := range before {
		if r["tracker"] == float64(tracker) && r["project"] == float64(project) && r["status"] != float64(status) {
			targets = append(targets, id)
		}
	}
	slices.Sort(targets)
	if len(targets) < 5 {
		t.Fatalf("%d issues of tracker %d in project %d outside status %d; the case needs 5 or more", len(targets), tracker, project, status)
	}
	prev := w.tool(t, "preview_selection", map[string]any{"resource": "issues", "filter": map[string]any{"tracker": tracker, "project": project},
		"exclude": []any{map[string]any{"field": "status", "op": "eq", "value": status, "reason": "already there"}},
		"action":  map[string]any{"type": "set_status", "params": map[string]any{"status": status}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(targets)) {
		t.Fatalf("preview: committable %v, counts %v; want the %d issues MariaDB holds", data["committable"], data["counts"], len(targets))
	}
	warned := false
	for _, wn := range prev["warnings"].([]any) {
		warned = warned || wn.(map[string]any)["code"] == "NOT_CONDITIONAL"
	}
	if !warned {
		t.Errorf("the preview of set_status does not warn NOT_CONDITIONAL: %v", prev["warnings"])
	}
	return targets, data
}

// rereadsAfterWrite counts, per target, its PUTs and the GETs of it the
// proxy saw after its last PUT.
func rereadsAfterWrite(seen []proxied, pathOf func(id string) string, targets []string) (puts, rereads map[string]int) {
	puts, rereads = map[string]int{}, map[string]int{}
	last := map[string]int{}
	for _, id := range targets {
		last[id] = -1
	}
	byPath := map[string]string{}
	for _, id := range targets {
		byPath[pathOf(id)] = id
	}
	for _, r := range seen {
		id, ok := byPath[r.Path]
		if !ok {
			continue
		}
		if r.Method != http.MethodGet {
			puts[id]++
			last[id] = r.Seq
			continue
		}
		if last[id] >= 0 && r.Seq > last[id] {
			rereads[id]++
		}
	}
	return puts, rereads
}

func redminePath(id string) string { return "/issues/" + id + ".json" }

func checkRedmineRefused(t *testing.T, rm *upstreams.Redmine, px *writeProxy, w *airlock, tracker, status int) {
	before := redmineByID(t, rm)
	targets, data := redminePreview(t, w, before, tracker, rm.Projects[0], status)
	px.set(nil, nil)
	op, _ := commitOp(t, w, data)
	puts, rereads := rereadsAfterWrite(px.requests(), redminePath, targets)
	j := journalOf(t, w, op)
	after := redmineByID(t, rm)
	var succeeded, reread, unchanged int
	for _, id := range targets {
		e := j[id]
		if e.Outcome == "succeeded" {
			succeeded++
		}
		if rereads[id] > 0 {
			reread++
		}
		if after[id]["status"] == before[id]["status"] {
			unchanged++
		}
		if e.Outcome != "unknown" || e.code() != "UPSTREAM_WRITE_UNCONFIRMED" || !strings.Contains(e.Note, "untouched") || puts[id] != 1 {
			t.Errorf("issue %s, whose status the workflow refuses: journaled %s %s %q after %d PUTs; want unknown (UPSTREAM_WRITE_UNCONFIRMED), untouched, sent once", id, e.Outcome, e.code(), e.Note, puts[id])
		}
	}
	t.Logf("a refused status on %d issues: %d journaled succeeded (%v), %d re-read after the PUT, %d unchanged in MariaDB",
		len(targets), succeeded, outcomeCounts(j), reread, unchanged)
	if succeeded != 0 || reread != len(targets) || unchanged != len(targets) {
		t.Errorf("want 0 succeeded, every issue re-read after its PUT and unchanged in MariaDB")
	}
}

// redmineKept are the columns a status change leaves as they were.
var redmineKept = []string{"project", "tracker", "priority", "subject", "team", "region", "created_on"}

func checkRedmineAllowed(t *testing.T, rm *upstreams.Redmine, px *writeProxy, w *airlock, tracker, status int) {
	before := redmineByID(t, rm)
	targets, data := redminePreview(t, w, before, tracker, rm.Projects[0], status)
	px.set(nil, nil)
	op, res := commitOp(t, w, data)
	_, rereads := rereadsAfterWrite(px.requests(), redminePath, targets)
	j := journalOf(t, w, op)
	after := redmineByID(t, rm)
	equal := 0
	for _, id := range targets {
		e, a, b := j[id], after[id], before[id]
		if e.Outcome != "succeeded" || rereads[id] == 0 {
			t.Errorf("issue %s: journaled %s %q, %d re-reads after its PUT; want succeeded on a re-read", id, e.Outcome, e.Note, rereads[id])
			continue
		}
		same := a["status"] == float64(status) && fmt.Sprint(e.After["status"]) == fmt.Sprint(status)
		for _, f := range redmineKept {
			same = same && a[f] == b[f]
		}
		if !same {
			t.Errorf("issue %s journaled succeeded with status %v: MariaDB holds %v; it held %v", id, e.After["status"], a, b)
			continue
		}
		equal++
	}
	t.Logf("an allowed status on %d issues: %v, %d succeeded equal to MariaDB (the status set, %v as they were)", len(targets), outcomeCounts(j), equal, redmineKept)
	if res["status"] != "completed" || equal != len(targets) {
		t.Errorf("operation %s: %v; want every issue succeeded", op, res["status"])
	}

	comp := w.tool(t, "preview_selection", map[string]any{"compensate": op, "deadline_ms": deadlineMS})
	cdata := comp["data"].(map[string]any)
	cop, cres := commitOp(t, w, cdata)
	cj := journalOf(t, w, cop)
	restored := 0
	for id, a := range redmineByID(t, rm) {
		if a["status"] != before[id]["status"] {
			t.Errorf("issue %s after the compensation: status %v; it was %v", id, a["status"], before[id]["status"])
		} else if slices.Contains(targets, id) {
			restored++
		}
	}
	t.Logf("compensation %s: %v, %d of %d statuses back in MariaDB", cres["status"], outcomeCounts(cj), restored, len(targets))
	if cc := outcomeCounts(cj); cc["succeeded"] != len(targets) {
		t.Errorf("compensation: %v; want %d succeeded (%s)", cc, len(targets), unsettled(cj))
	}
}

// redmineOtherWriter changes an issue as another user would, from inside
// the proxy (where a test cannot stop).
func redmineOtherWriter(rm *upstreams.Redmine, id string, issue map[string]any) error {
	b, _ := json.Marshal(map[string]any{"issue": issue})
	req, err := http.NewRequest(http.MethodPut, rm.URL+redminePath(id), bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Redmine-API-Key", rm.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("the other writer's PUT of issue %s: status %d", id, resp.StatusCode)
	}
	return nil
}

func checkRedmineLostUpdate(t *testing.T, rm *upstreams.Redmine, px *writeProxy, w *airlock, tracker, status int) {
	before := redmineByID(t, rm)
	targets, data := redminePreview(t, w, before, tracker, rm.Projects[1], status)
	// Right after Redmine answered airlock's check of same (the re-read
	// before its write), the other writer sets its status; of other, its
	// priority, a field set_status does not change.
	same, other := targets[0], targets[1]
	theirs := float64(rm.Statuses[2]) // Resolved
	if before[same]["status"] == theirs {
		theirs = float64(rm.Statuses[3]) // Feedback
	}
	var priority float64
	for _, p := range rm.SQL(t, "SELECT id FROM enumerations WHERE type = 'IssuePriority' ORDER BY position") {
		if n, err := strconv.Atoi(p); err == nil && float64(n) != before[other]["priority"] {
			priority = float64(n)
		}
	}
	var (
		mu     sync.Mutex
		acted  = map[string]int{}
		errs   []error
		change = map[string]map[string]any{same: {"status_id": theirs}, other: {"priority_id": priority}}
	)
	px.set(nil, func(req proxied, st int, body []byte) (int, []byte) {
		mu.Lock()
		defer mu.Unlock()
		for id, issue := range change {
			if req.Method == http.MethodGet && req.Path == redminePath(id) && acted[id] == 0 {
				acted[id]++
				if err := redmineOtherWriter(rm, id, issue); err != nil {
					errs = append(errs, err)
				}
			}
		}
		return st, body
	})
	op, _ := commitOp(t, w, data)
	px.set(nil, nil)
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 || acted[same] != 1 || acted[other] != 1 {
		t.Fatalf("the other writer acted %v: %v", acted, errs)
	}
	j := journalOf(t, w, op)
	after := redmineByID(t, rm)
	t.Logf("set_status on %d issues, another writer between the check and the PUT of two: %v (%s)", len(targets), outcomeCounts(j), unsettled(j))

	// The other writer's priority survives beside airlock's status: the
	// re-read shows a field outside the effect changed, and the target is
	// not said to have succeeded.
	if e, a := j[other], after[other]; e.Outcome == "succeeded" || e.code() != "UPSTREAM_WRITE_UNCONFIRMED" || !strings.Contains(e.Note, "(priority)") ||
		a["status"] != float64(status) || a["priority"] != priority {
		t.Errorf("issue %s, its priority changed by another writer: journaled %s %s %q, MariaDB status %v priority %v; want not succeeded, the note naming priority, and both changes in MariaDB",
			other, e.Outcome, e.code(), e.Note, a["status"], a["priority"])
	}
	// The other writer's status is overwritten by airlock's: the re-read
	// shows exactly the effect, and only Redmine's history tells. This is
	// the window NOT_CONDITIONAL names.
	history := rm.SQL(t, fmt.Sprintf(`SELECT CONCAT(d.old_value, '>', d.value) FROM journals j JOIN journal_details d ON d.journal_id = j.id
		WHERE j.journalized_type = 'Issue' AND j.journalized_id = %s AND d.prop_key = 'status_id' ORDER BY j.id, d.id`, same))
	want := []string{fmt.Sprintf("%v>%v", before[same]["status"], theirs), fmt.Sprintf("%v>%d", theirs, status)}
	t.Logf("issue %s: journaled %s %q; Redmine's history of its status: %v (the other writer's %v overwritten)", same, j[same].Outcome, j[same].Note, history, theirs)
	if !slices.Equal(history, want) || after[same]["status"] != float64(status) {
		t.Errorf("issue %s: Redmine's status history %v, status %v; want %v: the other writer's change, then airlock's over it", same, history, after[same]["status"], want)
	}
	if fmt.Sprint(j[same].Before["status"]) != fmt.Sprint(before[same]["status"]) {
		t.Errorf("issue %s: journaled before-value %v; want the status the preview read, %v", same, j[same].Before["status"], before[same]["status"])
	}
	for _, id := range targets {
		if id != same && id != other && (j[id].Outcome != "succeeded" || after[id]["status"] != float64(status)) {
			t.Errorf("issue %s: journaled %s, MariaDB status %v; want succeeded and %d", id, j[id].Outcome, after[id]["status"], status)
		}
	}
}
