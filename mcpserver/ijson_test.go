package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/tooltest"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/review"
)

// newSnowflakes is a harness whose one resource is the Snowflakes API:
// ids and team_ids beyond 2^53, as JSON numbers.
func newSnowflakes(t *testing.T) (*harness, *fixtures.Snowflakes) {
	flakes := &fixtures.Snowflakes{}
	srv := httptest.NewServer(flakes)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if n := flakes.Unknown(); n > 0 {
			t.Errorf("%d requests on routes the Snowflakes API does not serve", n)
		}
	})
	return newHarness(t, withConfig(func(string) []byte { return fixtures.SnowflakesConfig(srv.URL) })), flakes
}

// copies are a result's structured content and its text (its defaults put
// back), each decoded with its numbers exact: what a client reads.
func (h *harness) copies(tool string, r result) map[string]map[string]any {
	h.t.Helper()
	text := r.res.Content[0].(mcp.TextContent).Text
	out := map[string]map[string]any{}
	for name, b := range map[string][]byte{"structured": r.raw, "text": envelope.Expand([]byte(text), h.textDefaults()[tool]...)} {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			h.t.Fatalf("%s's %s content: %v", tool, name, err)
		}
		out[name] = doc
	}
	return out
}

// idTexts are the ids of a copy's data.items, each as its digits.
func idTexts(doc map[string]any) []string {
	var ids []string
	for _, it := range get(doc, "data.items").([]any) {
		switch id := it.(map[string]any)["id"].(type) {
		case string:
			ids = append(ids, id)
		case json.Number:
			ids = append(ids, string(id))
		}
	}
	return ids
}

// get is the value at a dotted path of a decoded copy.
func get(doc map[string]any, path string) any {
	v, _ := jsonvalue.Get(doc, path)
	return v
}

func TestIDsBeyondADouble_TravelAsStringsInEveryAnswerAndSelectExactlyTheirRecords(t *testing.T) {
	h, flakes := newSnowflakes(t)

	// search_all hands every id and team_id out as its exact digits.
	s := h.call("search_all", map[string]any{"resource": "snowflakes", "fields": []any{"id", "name", "team_id"}, "group_by": []any{"team_id"}})
	var handed []string
	for name, doc := range h.copies("search_all", s) {
		tooltest.NoRoundedNumbers(t, "search_all's "+name+" content", doc)
		// Beyond 2^53−1 a string; up to it (…990, …991) a number.
		ids := idTexts(doc)
		if !slices.Equal(ids, fixtures.SnowflakeIDs) {
			t.Fatalf("search_all's %s content lists the ids %q, want exactly %q", name, ids, fixtures.SnowflakeIDs)
		}
		if id, isString := get(doc, "data.items.2.id").(string); !isString || id != "9007199254740992" {
			t.Errorf("search_all's %s content holds 2^53 as %#v, want the string", name, get(doc, "data.items.2.id"))
		}
		var teams []any
		for _, g := range get(doc, "data.groups.team_id").([]any) {
			teams = append(teams, g.(map[string]any)["value"])
		}
		if len(teams) != 2 || !slices.Contains(teams, any(fixtures.SnowflakeTeams[0])) || !slices.Contains(teams, any(fixtures.SnowflakeTeams[1])) {
			t.Errorf("search_all's %s content groups team_id by %v, want the two teams as strings %q", name, teams, fixtures.SnowflakeTeams)
		}
		handed = ids
	}

	// A filter value given back as a string matches its record only,
	// not the neighbour a double confuses it with.
	for filter, want := range map[string][]string{
		"id":      {"9007199254740993"},
		"team_id": {"9007199254740990", "9007199254740992", "9007199254740994", "9007199254740996", "9007199254740998", "9223372036854775000", "9223372036854775002", "9223372036854775004", "9223372036854775006", "9223372036854775008"},
	} {
		value := want[0]
		if filter == "team_id" {
			value = fixtures.SnowflakeTeams[0]
		}
		r := h.call("search_all", map[string]any{"resource": "snowflakes", "fields": []any{"id"}, "filter": map[string]any{filter: value}})
		if got := idTexts(h.copies("search_all", r)["structured"]); !slices.Equal(got, want) || !r.env.Complete {
			t.Errorf("search_all with %s %q: complete %v, ids %q; want exactly %q", filter, value, r.env.Complete, got, want)
		}
	}

	// A preview of the ids as handed out names exactly those records.
	picked := []string{handed[1], handed[3], handed[5], handed[11]} // …991 (a number), …993, …995, …775001
	archive := map[string]any{"type": "archive"}
	p := h.call("preview_selection", map[string]any{"resource": "snowflakes", "ids": picked, "action": archive, "fields": []any{"id", "team_id"}})
	if p.env.Problem != nil {
		t.Fatalf("preview: %+v", p.env.Problem)
	}
	for name, doc := range h.copies("preview_selection", p) {
		tooltest.NoRoundedNumbers(t, "preview_selection's "+name+" content", doc)
		var ids, fieldIDs []any
		for _, rec := range get(doc, "data.manifest.items").([]any) {
			ids = append(ids, rec.(map[string]any)["id"])
			fieldIDs = append(fieldIDs, get(rec.(map[string]any), "fields.id"))
		}
		want := []any{picked[0], picked[1], picked[2], picked[3]}
		wantFields := []any{json.Number(picked[0]), picked[1], picked[2], picked[3]}
		if !slices.Equal(ids, want) || !slices.Equal(fieldIDs, wantFields) {
			t.Errorf("preview_selection's %s manifest: ids %v, fields.id %v; want %v and %v", name, ids, fieldIDs, want, wantFields)
		}
		var teams []any
		for _, g := range get(doc, "data.groups.team_id").([]any) {
			teams = append(teams, g.(map[string]any)["value"])
		}
		if !slices.Equal(teams, []any{fixtures.SnowflakeTeams[1]}) {
			t.Errorf("preview_selection's %s content groups team_id by %v, want the odd records' team as the string %q", name, teams, fixtures.SnowflakeTeams[1])
		}
	}

	// The JSON manifest export an operator reads holds them as strings.
	sel, err := h.deps.Store.Selection(context.Background(), p.data["selection_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := review.ExportManifest(context.Background(), h.deps.Store, sel, review.ExportJSON, &export); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(export.Bytes(), []byte(`"id":"9223372036854775001"`)) || !bytes.Contains(export.Bytes(), []byte(`"team_id":"9007199254740992"`)) {
		t.Errorf("the JSON export holds the ids as numbers:\n%s", export.Bytes())
	}

	// The commit writes exactly those ids, and its journal says so.
	c := h.call("commit_bulk_action", map[string]any{"selection_id": p.data["selection_id"], "expected_digest": p.data["digest"], "action": archive, "mode": "execute"})
	if c.env.Problem != nil {
		t.Fatalf("commit: %+v", c.env.Problem)
	}
	if got := flakes.Written(); !slices.Equal(slices.Sorted(slices.Values(got)), picked) {
		t.Fatalf("the upstream saw writes to %q, want exactly %q", got, picked)
	}
	o := h.call("get_operation", map[string]any{"operation_id": c.data["operation_id"]})
	for name, doc := range h.copies("get_operation", o) {
		tooltest.NoRoundedNumbers(t, "get_operation's "+name+" content", doc)
		var ids []string
		for _, tgt := range get(doc, "data.results").([]any) {
			tm := tgt.(map[string]any)
			if tm["outcome"] != "succeeded" {
				t.Errorf("get_operation's %s content: target %v is %v", name, tm["id"], tm["outcome"])
			}
			ids = append(ids, tm["id"].(string))
		}
		if !slices.Equal(ids, picked) {
			t.Errorf("get_operation's %s content journals %q, want %q", name, ids, picked)
		}
	}
}

func TestDescribeResources_SaysHowNumbersBeyondADoubleTravel(t *testing.T) {
	h, _ := newSnowflakes(t)
	d := h.call("describe_resources", map[string]any{})
	note, _ := d.data["numbers"].(string)
	for _, words := range []string{"2^53", "string", "send it back"} {
		if !strings.Contains(note, words) {
			t.Errorf("describe_resources' numbers note %q does not say %q", note, words)
		}
	}
}

func TestNumbersADoubleRounds_AreRefusedAsArgumentsWithTheirField(t *testing.T) {
	h, flakes := newSnowflakes(t)
	archive := map[string]any{"type": "archive"}
	cases := []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{"search_all", map[string]any{"resource": "snowflakes", "filter": map[string]any{"team_id": json.Number("9007199254740993")}}, "filter.team_id"},
		{"search_all", map[string]any{"resource": "snowflakes", "filter": map[string]any{"id": []any{"9007199254740993", json.Number("9223372036854775001")}}}, "filter.id[1]"},
		{"preview_selection", map[string]any{"resource": "snowflakes", "ids": []any{json.Number("9007199254740993")}, "action": archive}, "ids[0]"},
		{"preview_selection", map[string]any{"resource": "snowflakes", "action": archive,
			"exclude": []any{map[string]any{"field": "id", "op": "eq", "value": json.Number("9007199254740993"), "reason": "kept by hand"}}}, "exclude[0].value"},
	}
	for _, c := range cases {
		r := h.call(c.tool, c.args)
		p := r.env.Problem
		if p == nil || p.Code != envelope.ProblemInvalidArguments {
			t.Errorf("%s %v: want INVALID_ARGUMENTS, got %s", c.tool, c.args, r.raw)
			continue
		}
		i := slices.IndexFunc(p.Errors, func(e envelope.FieldError) bool { return e.Field == c.field })
		if i < 0 || p.Errors[i].Code != envelope.FieldType || p.Errors[i].Message != envelope.NumberAsStringMessage {
			t.Errorf("%s: want %s refused with %q, got %+v", c.tool, c.field, envelope.NumberAsStringMessage, p.Errors)
		}
	}
	if got := flakes.Written(); len(got) > 0 {
		t.Errorf("a refused call wrote to %q", got)
	}
}

func TestGroupHandedOutAsAString_PagesThroughThatGroupOnly(t *testing.T) {
	h, _ := newSnowflakes(t)
	p := h.call("preview_selection", map[string]any{"resource": "snowflakes", "action": map[string]any{"type": "archive"}})
	if p.env.Problem != nil || !p.data["committable"].(bool) {
		t.Fatalf("preview: %s", p.raw)
	}
	for _, team := range fixtures.SnowflakeTeams {
		g := h.call("get_selection", map[string]any{"selection_id": p.data["selection_id"], "group": map[string]any{"team_id": team}})
		if g.env.Problem != nil {
			t.Fatalf("get_selection of team %s: %s", team, g.raw)
		}
		items := g.items()
		for _, it := range items {
			if got := it["fields"].(map[string]any)["team_id"]; got != team {
				t.Errorf("get_selection of team %s lists %v of team %v", team, it["id"], got)
			}
		}
		if len(items) != len(fixtures.SnowflakeIDs)/2 {
			t.Errorf("get_selection of team %s: %d members, want %d", team, len(items), len(fixtures.SnowflakeIDs)/2)
		}
	}
}
