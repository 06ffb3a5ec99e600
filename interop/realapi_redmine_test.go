package interop

import (
	"fmt"
	"slices"
	"strings"
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
