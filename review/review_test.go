package review_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/review"
	"github.com/airlock-mcp/airlock/selection"
)

// TestSelectionPage_TheDecisionAndWhatItAcknowledgesComeFirst: the page
// reads top to bottom as a decision: what is decided and whether it is
// destructive, what approving acknowledges, the form; the digest in full,
// the effect table, exclusions and manifest after it.
func TestSelectionPage_TheDecisionAndWhatItAcknowledgesComeFirst(t *testing.T) {
	h := newHarness(t, nil)
	base := h.serve(h.reviewDeps(nil), review.Options{})
	b := newBrowser(t, base)

	arc := h.preview(map[string]any{"resource": "projects", "ids": []any{"proj_0023", "proj_0042"}, "action": archive})
	_, page := b.get("/review/selections/" + arc["selection_id"].(string))
	order := []string{`<h1>`, `id="destructive"`, `id="effect-summary"`, `id="decision"`, `id="acks"`, `id="acknowledge"`,
		`id="name"`, `id="approve"`, `id="reject"`, `class="details"`, `id="digest"`, `id="effect"`, `id="manifest"`}
	last := -1
	for _, marker := range order {
		i := strings.Index(page, marker)
		if i < 0 || i < last {
			t.Fatalf("%q is missing or out of order (at %d, after %d): the decision must precede the details", marker, i, last)
		}
		last = i
	}
	if alert := section(t, page, `<div class="alert danger" role="alert" id="destructive">`, `</div>`); !strings.Contains(alert, "The action is destructive") {
		t.Errorf("the destructive action is not a warning: %s", alert)
	}
	if !strings.Contains(page, `class="approve destructive"`) {
		t.Error("approving a destructive action does not look like it")
	}
	acks := section(t, page, `id="acks"`, `</ul>`)
	if !strings.Contains(acks, "named, not found by a complete scan") {
		t.Errorf("what approving acknowledges: %s", acks)
	}
	if s := section(t, page, `id="effect-summary"`, `</ul>`); !strings.Contains(s, "inactive (2)") || !strings.Contains(s, "archived") {
		t.Errorf("the effect is not summarized above the decision: %s", s)
	}

	// An action that is not destructive but cannot be undone is a warning
	// too, and approving it is not styled as destructive.
	p := h.preview(pastDueEU())
	_, page = b.get("/review/selections/" + p["selection_id"].(string))
	if strings.Contains(page, `id="destructive"`) || strings.Contains(page, `class="approve destructive"`) {
		t.Error("pause_collection is not destructive")
	}
	if w := section(t, page, `id="irreversible"`, `</div>`); !strings.Contains(w, "the customer is emailed that collection is paused") {
		t.Errorf("what cannot be undone is not a warning: %s", w)
	}
	if strings.Index(page, `id="acks"`) > strings.Index(page, `class="details"`) {
		t.Error("the acknowledgements come after the details")
	}
}

func TestSelectionPage_ShowsWhatTheApprovalNeeds(t *testing.T) {
	h := newHarness(t, nil)
	base := h.serve(h.reviewDeps(nil), review.Options{})
	p := h.preview(pastDueEU())
	selID := p["selection_id"].(string)
	b := newBrowser(t, base)

	code, index := b.get("/review/")
	if code != 200 || !strings.Contains(index, selID) || !strings.Contains(index, "awaiting a decision") {
		t.Fatalf("index (%d):\n%s", code, index)
	}
	_, page := b.get("/review/selections/" + selID)
	for _, want := range []string{
		`<code>pause_collection</code> on <span id="members">131</span> subscriptions in <span id="environment">demo</span>`,
		`<code id="digest">` + p["digest"].(string) + `</code>`, `{&#34;reason&#34;:&#34;approved credit hold review&#34;}`,
		"collection_paused", "legal hold", "disputed invoices stay", "NO_SNAPSHOT",
		"cannot be undone: the customer is emailed that collection is paused", `region &#34;eu&#34; never approved before`,
		"131 targets, more than 100", "By region", `id="next-page"`, `name="acknowledge"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	rowID := regexp.MustCompile(`<tr><td>(sub_[0-9]+)</td>`)
	if rows := len(rowID.FindAllString(page, -1)); rows != 50 {
		t.Errorf("%d manifest rows on the first page, want 50", rows)
	}
	// Paging through the manifest reaches every member exactly once.
	seen := map[string]bool{}
	next := "/review/selections/" + selID
	nextLink := regexp.MustCompile(`id="next-page" href="([^"]+)"`)
	for next != "" {
		_, pg := b.get(strings.ReplaceAll(next, "&amp;", "&"))
		for _, m := range rowID.FindAllStringSubmatch(pg, -1) {
			if seen[m[1]] {
				t.Fatalf("%s twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := nextLink.FindStringSubmatch(pg); m != nil {
			next = m[1]
		}
	}
	if len(seen) != 131 {
		t.Fatalf("paged through %d members, want 131", len(seen))
	}

	// The exports hold every member, and only members.
	_, csvBody := b.get("/review/selections/" + selID + "/manifest.csv")
	rows, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
	if err != nil || len(rows) != 132 || rows[0][0] != "id" {
		t.Fatalf("csv: %d rows, err %v", len(rows), err)
	}
	hasBefore := false
	for _, c := range rows[0] {
		hasBefore = hasBefore || c == "before.collection_paused"
	}
	if !hasBefore {
		t.Fatalf("csv header %v lacks the before-values", rows[0])
	}
	for _, r := range rows[1:] {
		if !seen[r[0]] {
			t.Fatalf("csv row %s is not a member", r[0])
		}
	}
	_, jsonBody := b.get("/review/selections/" + selID + "/manifest.json")
	var doc struct {
		Digest  string `json:"digest"`
		Members []struct {
			ID string `json:"id"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(jsonBody), &doc); err != nil || len(doc.Members) != 131 || doc.Digest != p["digest"] {
		t.Fatalf("json export: %v, %d members", err, len(doc.Members))
	}
}

// TestSelectionPage_ShowsMoneyWithItsCurrency: amount_due is declared money
// in minor units, with the currency in another field: every amount on the
// page reads as that currency's units; without the declaration, as the
// bare number the API gave.
func TestSelectionPage_ShowsMoneyWithItsCurrency(t *testing.T) {
	for _, declared := range []bool{true, false} {
		t.Run(fmt.Sprintf("declared=%v", declared), func(t *testing.T) {
			var edit func(string) string
			if !declared {
				edit = func(doc string) string {
					return strings.Replace(doc, ", money: {currency_field: currency, minor_units: true}", "", 1)
				}
			}
			h := newHarness(t, edit)
			base := h.serve(h.reviewDeps(nil), review.Options{})
			p := h.preview(pastDueEU())
			selID := p["selection_id"].(string)
			b := newBrowser(t, base)
			_, page := b.get("/review/selections/" + selID)
			_, body := b.get("/review/selections/" + selID + "/manifest.json")
			var doc struct {
				Members []struct {
					ID     string         `json:"id"`
					Fields map[string]any `json:"fields"`
				} `json:"members"`
			}
			if err := json.Unmarshal([]byte(body), &doc); err != nil {
				t.Fatal(err)
			}
			manifest := section(t, page, `id="manifest"`, `</table>`)
			checked := 0
			for _, m := range doc.Members {
				row := regexp.MustCompile(`<tr><td>` + m.ID + `</td>.*</tr>`).FindString(manifest)
				if row == "" {
					continue // on a later page
				}
				cents := int(m.Fields["amount_due"].(float64))
				cur := m.Fields["currency"].(string)
				if cents >= 100000 || cur != "EUR" {
					t.Fatalf("the fixture changed: %d %s", cents, cur)
				}
				money := fmt.Sprintf(`<span class="money">EUR %d.%02d</span>`, cents/100, cents%100)
				bare := fmt.Sprintf(`<td>%d</td>`, cents)
				if declared && !strings.Contains(row, money) {
					t.Errorf("%s: the amount %d is not shown as %s: %s", m.ID, cents, money, row)
				}
				if !declared && (!strings.Contains(row, bare) || strings.Contains(row, "class=\"money\"")) {
					t.Errorf("%s: an undeclared amount must read as the API's number %d: %s", m.ID, cents, row)
				}
				checked++
			}
			if checked != 50 {
				t.Fatalf("checked %d rows, want the first page's 50", checked)
			}
		})
	}
}

// TestSelectionPage_ShowsNullValues: a null is a value the reviewer must
// see (an account without an owner), in the composition, the effect and
// the manifest, never a blank cell.
func TestSelectionPage_ShowsNullValues(t *testing.T) {
	h := newHarness(t, func(doc string) string {
		return strings.Replace(doc, "    review_groups: [project, disabled]", "    review_groups: [owner, last_used_at, disabled]", 1)
	})
	base := h.serve(h.reviewDeps(nil), review.Options{})
	p := h.preview(map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil},
		"action": map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}})
	members := int(p["counts"].(map[string]any)["members"].(float64))
	var nullUsed int
	for _, g := range p["groups"].(map[string]any)["last_used_at"].([]any) {
		if g := g.(map[string]any); g["value"] == nil {
			nullUsed = int(g["count"].(float64))
		}
	}
	if members == 0 || nullUsed == 0 {
		t.Fatalf("the fixture has no null to show: %d members, %d never used", members, nullUsed)
	}
	b := newBrowser(t, base)
	_, page := b.get("/review/selections/" + p["selection_id"].(string))
	null := `<span class="null">null</span>`
	owner := section(t, page, `data-dim="owner"`, `</table>`)
	if want := fmt.Sprintf(`%s</td><td class="n">%d</td><td class="n">100%%</td>`, null, members); !strings.Contains(owner, want) {
		t.Errorf("the composition by owner does not show null (%d):\n%s", members, owner)
	}
	if used := section(t, page, `data-dim="last_used_at"`, `</table>`); !strings.Contains(used, fmt.Sprintf(`%s</td><td class="n">%d</td>`, null, nullUsed)) {
		t.Errorf("the composition by last_used_at does not show its %d nulls:\n%s", nullUsed, used)
	}
	if s := section(t, page, `id="effect-summary"`, `</ul>`); !strings.Contains(s, fmt.Sprintf("%s (%d)", null, members)) {
		t.Errorf("the effect does not show the null before-value: %s", s)
	}
	if m := section(t, page, `id="manifest"`, `</table>`); strings.Contains(m, "<td></td>") || !strings.Contains(m, null) {
		t.Errorf("the manifest shows a null as a blank cell")
	}
}

// TestSelectionPage_NamesTheUpstreamAsConfigured: the upstream is the name
// the configuration gives it (with its host); without the configuration,
// the host the selection recorded.
func TestSelectionPage_NamesTheUpstreamAsConfigured(t *testing.T) {
	h := newHarness(t, nil)
	p := h.preview(pastDueEU())
	path := "/review/selections/" + p["selection_id"].(string)
	host := strings.TrimPrefix(h.api, "http://")

	_, page := newBrowser(t, h.serve(h.reviewDeps(nil), review.Options{})).get(path)
	if want := `<strong id="upstream">demo (` + host + `)</strong>`; !strings.Contains(page, want) {
		t.Errorf("with the configuration, want %s in:\n%s", want, section(t, page, "<h1>", `id="decision"`))
	}
	bare := h.reviewDeps(nil)
	bare.Runtime = nil
	_, page = newBrowser(t, h.serve(bare, review.Options{})).get(path)
	if want := `<strong id="upstream">` + host + `</strong>`; !strings.Contains(page, want) {
		t.Errorf("without the configuration, want %s", want)
	}
	if !strings.Contains(page, "unknown (no configuration given)") {
		t.Error("without the configuration the policy must read unknown")
	}
}

// TestIndex_FiltersByStateAndShowsExpiry: the list opens on what awaits a
// decision; each state has its filter with a count; every row says when
// the selection expires, and once past it, that it expired.
func TestIndex_FiltersByStateAndShowsExpiry(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	ids := map[string]string{}
	for _, name := range []string{"awaiting", "approved", "rejected", "committed"} {
		ids[name] = h.preview(map[string]any{"resource": "projects", "ids": []any{map[string]string{
			"awaiting": "proj_0004", "approved": "proj_0023", "rejected": "proj_0042", "committed": "proj_0068"}[name]}, "action": archive})["selection_id"].(string)
	}
	decide := func(name, decision string) {
		sel, err := h.deps.Store.Selection(ctx, ids[name])
		if err != nil {
			t.Fatal(err)
		}
		if _, p := h.deps.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: sel.Digest, Decision: decision,
			Who: "Ada", Channel: selection.ChannelOperator, Acknowledgements: selection.Acknowledgements(sel), RequestID: "t-" + name}); p != nil {
			t.Fatalf("%s: %v", name, p)
		}
	}
	decide("approved", selection.DecisionApproved)
	decide("rejected", selection.DecisionRejected)
	decide("committed", selection.DecisionApproved)
	sel, _ := h.deps.Store.Selection(ctx, ids["committed"])
	if _, p := h.call("commit_bulk_action", map[string]any{"selection_id": sel.ID, "expected_digest": sel.Digest, "action": archive, "mode": "execute"}); p != nil {
		t.Fatalf("commit: %s", p.Code)
	}
	blocked := h.preview(map[string]any{"resource": "service_accounts", "filter": map[string]any{"owner": nil},
		"action": map[string]any{"type": "assign_owner", "params": map[string]any{"owner": "team-identity"}}})["selection_id"].(string)
	ids["blocked"] = blocked

	// The page's clock stands a minute after the first preview: every
	// selection expires in 13 or 14 minutes.
	first, err := h.deps.Store.Selection(ctx, ids["awaiting"])
	if err != nil {
		t.Fatal(err)
	}
	soon := clocktest.New(first.CreatedAt.Add(time.Minute))

	listed := regexp.MustCompile(`href="/review/selections/(sel_[^"]+)"`)
	rows := func(page string) map[string]bool {
		out := map[string]bool{}
		for _, m := range listed.FindAllStringSubmatch(page, -1) {
			out[m[1]] = true
		}
		return out
	}
	b := newBrowser(t, h.serve(h.reviewDeps(soon), review.Options{}))
	for state, want := range map[string][]string{
		"":          {"awaiting"},
		"awaiting":  {"awaiting"},
		"approved":  {"approved"},
		"rejected":  {"rejected"},
		"committed": {"committed"},
		"blocked":   {"blocked"},
		"expired":   nil,
		"all":       {"awaiting", "approved", "rejected", "committed", "blocked"},
	} {
		code, page := b.get("/review/?state=" + state)
		got := rows(page)
		if code != 200 || len(got) != len(want) {
			t.Errorf("state %q: %d, listed %d selections, want %v", state, code, len(got), want)
			continue
		}
		for _, w := range want {
			if !got[ids[w]] {
				t.Errorf("state %q does not list the %s selection", state, w)
			}
		}
		if state == "awaiting" {
			if !strings.Contains(page, `aria-current="page">Awaiting a decision <span class="n">1</span>`) {
				t.Errorf("the current filter and its count are not shown")
			}
			if !regexp.MustCompile(`class="expires"><span title="[0-9-]+ [0-9:]+ UTC">in 1[34] min</span>`).MatchString(page) {
				t.Errorf("the row does not say when it expires:\n%s", section(t, page, `id="selections"`, `</table>`))
			}
		}
	}
	if _, page := b.get("/review/?state=all"); !strings.Contains(page, `Expired <span class="n">0</span>`) || !strings.Contains(page, `All <span class="n">5</span>`) {
		t.Error("the filters do not count each state")
	}

	// An hour later every selection not committed has expired, whatever
	// was decided about it.
	b = newBrowser(t, h.serve(h.reviewDeps(clocktest.New(first.CreatedAt.Add(time.Hour))), review.Options{}))
	_, page := b.get("/review/?state=expired")
	got := rows(page)
	for _, name := range []string{"awaiting", "approved", "rejected", "blocked"} {
		if !got[ids[name]] {
			t.Errorf("an hour later the %s selection is not listed as expired", name)
		}
	}
	if got[ids["committed"]] || !regexp.MustCompile(`expired 4[45] min ago`).MatchString(page) {
		t.Errorf("expired rows: %v\n%s", got, section(t, page, `id="selections"`, `</table>`))
	}
	if _, page := b.get("/review/"); !strings.Contains(page, `id="empty"`) {
		t.Error("an hour later nothing awaits a decision")
	}
	req, _ := http.NewRequest(http.MethodGet, b.base+"/review/?state=pending", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown state: %d, want 400", resp.StatusCode)
	}
}

func TestSelectionPage_DecisionsAndTheirRefusals(t *testing.T) {
	h := newHarness(t, nil)
	base := h.serve(h.reviewDeps(nil), review.Options{})
	p := h.preview(pastDueEU())
	selID, digest := p["selection_id"].(string), p["digest"].(string)
	path := "/review/selections/" + selID + "/decision"
	b := newBrowser(t, base)
	form := b.form(selID)

	// A form posted from elsewhere: no token, a token of another session,
	// or another origin.
	stranger := newBrowser(t, base)
	if _, pr, _ := stranger.post(path, url.Values{"decision": {"approve"}, "name": {"Mallory"}, "digest": {digest}}, ""); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("no token: %+v", pr)
	}
	stolen := url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Mallory"}, "digest": {digest}, "acknowledge": {"yes"}}
	if _, pr, _ := stranger.post(path, stolen, ""); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("another session's token: %+v", pr)
	}
	withOrigin := url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Ada"}, "digest": {digest}, "acknowledge": {"yes"}}
	if _, pr, _ := b.post(path, withOrigin, "https://evil.example"); pr == nil || pr.Code != envelope.ProblemReviewFormInvalid {
		t.Fatalf("foreign origin: %+v", pr)
	}
	// Every missing field is named.
	_, pr, _ := b.post(path, url.Values{"csrf": form["csrf"], "decision": {"approve"}}, base)
	if pr == nil || pr.Code != envelope.ProblemInvalidArguments || len(pr.Errors) != 3 {
		t.Fatalf("missing fields: %+v", pr)
	}
	if _, pr, _ := b.post(path, url.Values{"csrf": form["csrf"], "decision": {"approve"}, "name": {"Ada"}, "digest": {"sha256:0"}, "acknowledge": {"yes"}}, base); pr == nil || pr.Code != envelope.ProblemDigestMismatch {
		t.Fatalf("wrong digest: %+v", pr)
	}
	if aps := h.approvals(selID); len(aps) != 0 {
		t.Fatalf("refused forms recorded %d decisions", len(aps))
	}

	code, _, page := b.post(path, withOrigin, base)
	if code != 200 || !strings.Contains(page, `id="decided"`) || !strings.Contains(page, "approved by review page: Ada from 127.0.0.1") {
		t.Fatalf("approve (%d):\n%s", code, page)
	}
	if strings.Contains(page, `id="approve"`) {
		t.Fatal("the form is still offered after the decision")
	}
	if _, pr, _ := b.post(path, withOrigin, base); pr == nil || pr.Code != envelope.ProblemApprovalDecided {
		t.Fatalf("approving twice: %+v", pr)
	}
	aps := h.approvals(selID)
	if len(aps) != 1 || aps[0].Channel != selection.ChannelReviewPage || len(aps[0].Acknowledgements) == 0 {
		t.Fatalf("approval records %+v", aps)
	}
	// The agent's commit goes through on the page's approval: the client
	// (which cannot answer an elicitation here) is not asked.
	op, pr := h.call("commit_bulk_action", map[string]any{"selection_id": selID, "expected_digest": digest, "action": pauseAction, "mode": "execute"})
	if pr != nil || op["operation_id"] == nil {
		t.Fatalf("commit after the page approved: %+v %v", pr, op)
	}

	// Another selection, rejected on the page: the commit is refused.
	q := h.preview(map[string]any{"resource": "projects", "ids": []any{"proj_0004"}, "action": archive})
	form = b.form(q["selection_id"].(string))
	if code, _, _ := b.post("/review/selections/"+q["selection_id"].(string)+"/decision",
		url.Values{"csrf": form["csrf"], "decision": {"reject"}, "name": {"Ada"}, "digest": {q["digest"].(string)}}, base); code != 200 {
		t.Fatalf("reject: %d", code)
	}
	_, pr = h.call("commit_bulk_action", map[string]any{"selection_id": q["selection_id"], "expected_digest": q["digest"], "action": archive, "mode": "execute"})
	if pr == nil || pr.Code != envelope.ProblemApprovalRejected || !strings.Contains(pr.Detail, "Ada") {
		t.Fatalf("commit of a rejected selection: %+v", pr)
	}
	if code, _ := b.get("/review/selections/sel_nope"); code != http.StatusNotFound {
		t.Fatalf("unknown selection: %d", code)
	}
}

func TestPage_Access(t *testing.T) {
	h := newHarness(t, nil)
	open := review.NewHandler(h.reviewDeps(nil), review.Options{})
	do := func(hd http.Handler, remote, host, target string, hdr map[string]string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.RemoteAddr, req.Host = remote, host
		req.Header.Set("Accept", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		hd.ServeHTTP(w, req)
		if strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
			var p envelope.Problem
			if json.Unmarshal(w.Body.Bytes(), &p) == nil {
				record(p.Code)
			}
		}
		return w
	}
	for _, c := range []struct {
		name, remote, host string
		want               int
	}{
		{"loopback", "127.0.0.1:5000", "127.0.0.1:8766", 200},
		{"localhost", "[::1]:5000", "localhost:8766", 200},
		{"another machine", "10.1.2.3:5000", "127.0.0.1:8766", 403},
		{"DNS rebinding", "127.0.0.1:5000", "evil.example:8766", 403},
	} {
		w := do(open, c.remote, c.host, "/review/", nil)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, w.Code, c.want)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(w.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
			t.Errorf("%s: the page may be framed", c.name)
		}
	}
	if w := do(open, "10.1.2.3:5000", "airlock.internal", "/review/", nil); !strings.Contains(w.Body.String(), string(envelope.ProblemReviewAccessDenied)) {
		t.Fatalf("denied body: %s", w.Body)
	}

	// With a token, any address may use the page: the token once in the
	// address, then a cookie.
	tok := review.NewHandler(h.reviewDeps(nil), review.Options{Token: "review-secret"})
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", nil); w.Code != 403 {
		t.Fatalf("no token: %d", w.Code)
	}
	w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/?token=review-secret", nil)
	cookie := w.Header().Get("Set-Cookie")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/review/" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("token exchange: %d %v", w.Code, w.Header())
	}
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", map[string]string{"Cookie": strings.Split(cookie, ";")[0]}); w.Code != 200 {
		t.Fatalf("with the cookie: %d", w.Code)
	}
	if w := do(tok, "10.1.2.3:5000", "airlock.internal", "/review/", map[string]string{"Authorization": "Bearer review-secret"}); w.Code != 200 {
		t.Fatalf("with a bearer: %d", w.Code)
	}

	// Mounted on the MCP HTTP server behind its bearer token, the page
	// keeps its own check: a browser cannot send a bearer header.
	srv, err := mcpserver.NewServer(h.deps, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mounted := mcpserver.NewHTTPHandler(srv, mcpserver.HTTPOptions{Options: httpserve.Options{Token: "review-secret", Extra: map[string]http.Handler{review.Prefix: tok}}})
	if w := do(mounted, "10.1.2.3:5000", "airlock.internal", "/review/?token=review-secret", nil); w.Code != http.StatusSeeOther {
		t.Fatalf("mounted, token exchange: %d %s", w.Code, w.Body)
	}
	if w := do(mounted, "10.1.2.3:5000", "airlock.internal", "/mcp", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("mounted: /mcp without a bearer: %d", w.Code)
	}
}

// TestSelectionPage_ShowsWhoAskedAndWhoDecided: the page says who asked
// for the write (the principal that previewed it) beside the decision,
// and records and shows the principal of each decision; under a four-eyes
// policy the principal who asked cannot approve through the page.
func TestSelectionPage_ShowsWhoAskedAndWhoDecided(t *testing.T) {
	h := newHarness(t, func(doc string) string {
		return strings.Replace(doc, "approval: {mode: operator, destructive: true}", "approval: {mode: operator, destructive: true, four_eyes: true}", 1)
	})
	// The agent's client is in process: it asks as local.
	reviewer := selection.Principal{Subject: selection.SubjectReviewToken, ClientID: "review-page"}
	base := h.serve(h.reviewDeps(nil), review.Options{Token: "review-secret", Principal: reviewer})
	b := newBrowser(t, base)
	if code, _ := b.get("/review/?token=review-secret"); code != 200 {
		t.Fatalf("open with the token: %d", code)
	}
	p := h.preview(map[string]any{"resource": "projects", "ids": []any{"proj_0004"}, "action": archive})
	selID := p["selection_id"].(string)
	_, page := b.get("/review/selections/" + selID)
	if !strings.Contains(section(t, page, `id="decision"`, `</section>`), `id="asked-by">local (stdio)<`) {
		t.Fatalf("the decision does not say who asked:\n%s", section(t, page, `id="decision"`, `</section>`))
	}
	form := b.form(selID)
	form.Set("decision", "approve")
	form.Set("name", "Ada")
	form.Set("digest", p["digest"].(string))
	form.Set("acknowledge", "yes")
	code, pr, page := b.post("/review/selections/"+selID+"/decision", form, base)
	if code != 200 || pr != nil || !strings.Contains(page, "approved by review page: Ada from 127.0.0.1 as review-token (review-page)") {
		t.Fatalf("approve (%d, %+v):\n%s", code, pr, page)
	}
	if !strings.Contains(section(t, page, `id="decisions"`, `</table>`), "<td>review-token (review-page)</td>") {
		t.Fatalf("the decisions table does not name the principal:\n%s", section(t, page, `id="decisions"`, `</table>`))
	}
	if aps := h.approvals(selID); len(aps) != 1 || aps[0].Principal.Subject != selection.SubjectReviewToken {
		t.Fatalf("approval records %+v", aps)
	}

	// A page without a token is reached from this machine: local, the
	// principal who asked. Four eyes refuses it.
	local := newBrowser(t, h.serve(h.reviewDeps(nil), review.Options{Principal: selection.Principal{Subject: selection.SubjectLocal, ClientID: "review-page"}}))
	q := h.preview(map[string]any{"resource": "projects", "ids": []any{"proj_0005"}, "action": archive})
	form = local.form(q["selection_id"].(string))
	form.Set("decision", "approve")
	form.Set("name", "Ada")
	form.Set("digest", q["digest"].(string))
	form.Set("acknowledge", "yes")
	if _, pr, _ := local.post("/review/selections/"+q["selection_id"].(string)+"/decision", form, local.base); pr == nil || pr.Code != envelope.ProblemApprovalByRequester {
		t.Fatalf("local approves what local asked, under four eyes: %+v", pr)
	}
	if aps := h.approvals(q["selection_id"].(string)); len(aps) != 0 {
		t.Fatalf("a refused approval was recorded: %+v", aps)
	}
}
