package interop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/interop/upstreams"
	"github.com/airlock-mcp/airlock/tools"
)

// airlock's SigV4 signatures, proven against AWS's own JavaScript signer
// rather than only against AWS's published vectors: interop/sigv4verify.mjs
// stands in front of dynalite (which checks no signature), recomputes
// every request's signature with @smithy/signature-v4 from the one secret
// it knows, over the headers the request says it signed and the body it
// carries, answers a mismatch as DynamoDB does (400,
// InvalidSignatureException) and forwards the rest. The requests are the
// ones airlock really sends: through its HTTP client, with bodies, after
// retries.

const (
	dynTargetScan   = "DynamoDB_20120810.Scan"
	dynTargetQuery  = "DynamoDB_20120810.Query"
	dynTargetUpdate = "DynamoDB_20120810.UpdateItem"
)

// TestDynaliteSigV4_AWSsSignerAcceptsWhatAirlockSends starts its own
// dynalite: a subtest writes.
func TestDynaliteSigV4_AWSsSignerAcceptsWhatAirlockSends(t *testing.T) {
	started := time.Now()
	d := upstreams.StartDynalite(t)
	d.SeedLedger(t)
	truth := d.Records(t)
	v := upstreams.StartSigV4Verifier(t, d.URL, dynEnv["AWS_ACCESS_KEY_ID"], dynEnv["AWS_SECRET_ACCESS_KEY"], "us-east-1", "dynamodb")
	t.Run("lists_and_a_write_all_verified", func(t *testing.T) { checkSigV4Verified(t, d, v, truth) })
	t.Run("wrong_secret_is_an_authentication_problem", func(t *testing.T) { checkSigV4WrongSecret(t, v) })
	t.Run("throttled_request_re_signed", func(t *testing.T) { checkSigV4Throttle(t, v, truth) })
	t.Run("rotated_secret_stops_a_write", func(t *testing.T) { checkSigV4RotatedWrite(t, d, v) })
	t.Logf("dynalite SigV4 suite: %.1fs", time.Since(started).Seconds())
}

// checkSigV4Verified: the accounts' Scan (counts, and a walk of every item
// through cursors), the ledger's Query, and a conditional write (preview,
// commit of UpdateItem per target): every request the verifier saw was
// verified, each signed host, x-amz-date and x-amz-target, and the counts
// are dynalite's.
func checkSigV4Verified(t *testing.T, d *upstreams.Dynalite, v *upstreams.SigV4Verifier, truth []upstreams.Record) {
	v.Reset(t)
	al := startAirlock(t, "dynalite.yaml", v.URL, dynEnv)
	want := len(upstreams.IDs(truth, valueIn("status", "past_due")))
	ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due"}, "max_items": 0, "deadline_ms": deadlineMS})
	if !ans.Complete || ans.Data.TotalMatched != want {
		t.Errorf("past_due through the verifier: %s; dynalite holds %d", ans, want)
	}
	last, ids := al.walk(t, map[string]any{"resource": "accounts", "max_items": 500, "fields": []string{"pk"}, "deadline_ms": deadlineMS}, "pk")
	if !last.Complete || len(ids) != len(truth) {
		t.Errorf("every account through the verifier: %d delivered, %s; dynalite holds %d", len(ids), last, len(truth))
	}
	q := startAirlock(t, "dynalite_query.yaml", v.URL, dynEnv)
	qa := q.search(t, map[string]any{"resource": "ledger", "filter": map[string]any{"tenant": upstreams.DynaliteHostileTenant, "status": "active"}, "max_items": 0, "deadline_ms": deadlineMS})
	qwant, _, _ := truthQuery(t, d, dynQueryCase{key: "#t = :t", filterExpr: "#s = :s", names: map[string]any{"#t": "tenant", "#s": "status"},
		values: map[string]any{":t": s(upstreams.DynaliteHostileTenant), ":s": s("active")}}, 0)
	if !qa.Complete || qa.Data.TotalMatched != len(qwant) {
		t.Errorf("the hostile tenant's active entries through the verifier: %s; dynalite's Query holds %d", qa, len(qwant))
	}

	wa := withStore(t, startAirlock(t, "dynalite.yaml", v.URL, dynEnv))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "past_due", "team": "payments"},
		"action": map[string]any{"type": "set_status", "params": map[string]any{"status": "disabled"}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	members := data["counts"].(map[string]any)["members"].(float64)
	if data["committable"] != true || members < 3 {
		t.Fatalf("preview: committable %v, %v members; want 3 or more, committable", data["committable"], members)
	}
	_, counts := commitCounts(t, wa, data)
	if counts["succeeded"] != members {
		t.Errorf("commit through the verifier: %v; want %v succeeded", counts, members)
	}

	log := v.Log(t)
	byTarget := map[string]int{}
	for _, e := range log {
		byTarget[e.Target]++
		if !e.Verified {
			t.Errorf("request %d (%s) not verified: %s", e.Seq, e.Target, e.Why)
		}
		for _, h := range []string{"host", "x-amz-date", "x-amz-target"} {
			if !strings.Contains(";"+e.SignedHeaders+";", ";"+h+";") {
				t.Errorf("request %d (%s) signed %s, not %s", e.Seq, e.Target, e.SignedHeaders, h)
			}
		}
	}
	if byTarget[dynTargetScan] < 10 || byTarget[dynTargetQuery] < 1 || byTarget[dynTargetUpdate] != int(members) {
		t.Errorf("requests by operation %v; want the Scans, a Query and %v UpdateItems", byTarget, members)
	}
	t.Logf("%d requests, every one verified by @smithy/signature-v4: %v; signed headers %s", len(log), byTarget, log[0].SignedHeaders)
}

// checkSigV4WrongSecret: airlock configured with another secret than the
// one the verifier knows is refused; airlock says UPSTREAM_UNAUTHORIZED
// (the declared InvalidSignatureException), never a rejected value, and
// nothing in its answer holds either secret, the access key id or the
// signature sent, though the refusal quotes the Authorization header.
func checkSigV4WrongSecret(t *testing.T, v *upstreams.SigV4Verifier) {
	v.Reset(t)
	wrong := map[string]string{"AWS_ACCESS_KEY_ID": dynEnv["AWS_ACCESS_KEY_ID"], "AWS_SECRET_ACCESS_KEY": "wrong-secret-airlock-must-hide"}
	al := startAirlock(t, "dynalite.yaml", v.URL, wrong)
	env := al.specs["search_all"].Handler(t.Context(), &tools.Call{RequestID: "interop", Raw: []byte(`{"resource": "accounts", "max_items": 0}`)})
	env.Finish()
	b := env.Marshal()
	var ans answer
	_ = json.Unmarshal(b, &ans)
	if ans.Problem == nil || ans.Problem.Code != "UPSTREAM_UNAUTHORIZED" || ans.Complete {
		t.Errorf("a wrong secret: %s; want UPSTREAM_UNAUTHORIZED", b)
	}
	for _, secret := range []string{wrong["AWS_SECRET_ACCESS_KEY"], dynEnv["AWS_SECRET_ACCESS_KEY"], dynEnv["AWS_ACCESS_KEY_ID"]} {
		if strings.Contains(string(b), secret) {
			t.Errorf("the answer holds %q: %s", secret, b)
		}
	}
	log := v.Log(t)
	if len(log) == 0 || log[0].Verified || log[0].Why != "signature mismatch" {
		t.Errorf("the verifier's log %+v; want the request refused for its signature", log)
	}
	// The refusal quotes the Authorization header airlock sent: the
	// signature of each attempt, which no stored secret matches, is not
	// in the answer either.
	for _, e := range log {
		if e.Signature == "" || strings.Contains(string(b), e.Signature) {
			t.Errorf("the answer holds the signature %q airlock sent (or the verifier saw none): %s", e.Signature, b)
		}
	}
	// A signature of zeros in AWS's form (what the harness sends dynalite,
	// which takes it) is refused too.
	zeros := (&upstreams.Dynalite{URL: v.URL}).Raw(t, upstreams.DynamoHeader("Scan"), []byte(`{"TableName": "accounts", "Limit": 1}`))
	if zeros.Status != 400 || !strings.Contains(string(zeros.Body), "InvalidSignatureException") {
		t.Errorf("a signature of zeros: %d %s; want 400 InvalidSignatureException", zeros.Status, zeros.Body)
	}
	if ans.Problem != nil {
		t.Logf("a wrong secret: %d request(s), %s: %s; upstream_message %q", len(log), ans.Problem.Code, ans.Problem.Detail, truncateStr(ans.Problem.UpstreamMessage, 160))
	}
}

// checkSigV4Throttle: the verifier answers the third Scan page as a
// throttle after verifying it; airlock waits and asks again, and the
// retry carries a new X-Amz-Date and a new signature, which verify; the
// count is dynalite's.
func checkSigV4Throttle(t *testing.T, v *upstreams.SigV4Verifier, truth []upstreams.Record) {
	v.Reset(t)
	v.Throttle(t, dynTargetScan, 3)
	// A wait past the second X-Amz-Date counts in: a retry sent again
	// without signing anew would carry the throttled request's date and
	// signature; signed anew, it carries its own.
	al := startAirlockWith(t, "dynalite.yaml", v.URL, dynEnv, func(c *configpkg.Config) {
		c.Upstreams["dynamodb"].Backoff = configpkg.BackoffConfig{Min: 1100 * time.Millisecond, Max: 1500 * time.Millisecond}
	})
	want := len(upstreams.IDs(truth, valueIn("status", "active")))
	ans := al.search(t, map[string]any{"resource": "accounts", "filter": map[string]any{"status": "active"}, "max_items": 0, "deadline_ms": deadlineMS})
	if !ans.Complete || ans.Data.TotalMatched != want {
		t.Errorf("active through one throttle: %s; dynalite holds %d", ans, want)
	}
	log := v.Log(t)
	var throttled, retry *upstreams.SigV4Entry
	for i := range log {
		e := &log[i]
		if !e.Verified {
			t.Errorf("request %d not verified: %s", e.Seq, e.Why)
		}
		switch {
		case e.Throttled:
			throttled = e
		case throttled != nil && retry == nil && e.BodySHA256 == throttled.BodySHA256:
			retry = e
		}
	}
	if throttled == nil || retry == nil {
		t.Fatalf("no throttled request and its retry in the log (%d requests)", len(log))
	}
	if retry.AmzDate <= throttled.AmzDate || retry.Signature == throttled.Signature {
		t.Errorf("the retry (%s, %s…) is not signed anew after the throttle (%s, %s…)", retry.AmzDate, retry.Signature[:12], throttled.AmzDate, throttled.Signature[:12])
	}
	t.Logf("throttled request %d at %s, signature %s…; its retry %d at %s, signature %s…, verified; %d matched of %d",
		throttled.Seq, throttled.AmzDate, throttled.Signature[:12], retry.Seq, retry.AmzDate, retry.Signature[:12], ans.Data.TotalMatched, want)
}

// checkSigV4RotatedWrite: a selection previewed while the secret held is
// committed after the verifier's secret changed (the key rotated): the
// first UpdateItem is refused as an authentication failure, the run stops
// at once, and dynalite shows no target changed.
func checkSigV4RotatedWrite(t *testing.T, d *upstreams.Dynalite, v *upstreams.SigV4Verifier) {
	v.Reset(t)
	before := map[string]string{}
	for _, it := range d.Items(t) {
		before[upstreams.DynamoString(it["pk"])] = upstreams.DynamoString(it["status"])
	}
	wa := withStore(t, startAirlock(t, "dynalite.yaml", v.URL, dynEnv))
	prev := wa.tool(t, "preview_selection", map[string]any{"resource": "accounts", "filter": map[string]any{"status": "archived", "team": "platform"},
		"action": map[string]any{"type": "set_status", "params": map[string]any{"status": "retired"}}, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true {
		t.Fatalf("preview: %v", data["committable_reasons"])
	}
	v.SetSecret(t, "rotated-secret")
	defer v.SetSecret(t, dynEnv["AWS_SECRET_ACCESS_KEY"])
	res := wa.tool(t, "commit_bulk_action", map[string]any{"selection_id": data["selection_id"], "expected_digest": data["digest"],
		"action": data["action"], "mode": "execute", "wait_ms": 60000})
	op := res["data"].(map[string]any)
	for i := 0; op["status"] == "running" && i < 120; i++ {
		time.Sleep(250 * time.Millisecond)
		op = wa.tool(t, "get_operation", map[string]any{"operation_id": op["operation_id"]})["data"].(map[string]any)
	}
	counts := op["counts"].(map[string]any)
	failed := wa.tool(t, "get_operation", map[string]any{"operation_id": op["operation_id"], "outcome": "failed"})
	b, _ := json.Marshal(failed["data"])
	// Writes in flight together may each meet the refusal before the run
	// stops: at least one fails, none succeeds.
	nFailed, _ := counts["failed"].(float64)
	if op["status"] != "stopped" || nFailed < 1 || counts["succeeded"] != nil && counts["succeeded"] != float64(0) ||
		!strings.Contains(string(b), "UPSTREAM_UNAUTHORIZED") {
		t.Errorf("commit after the rotation: status %v, counts %v, failed %s; want stopped at the first UPSTREAM_UNAUTHORIZED", op["status"], counts, truncateStr(string(b), 600))
	}
	if strings.Contains(string(b), dynEnv["AWS_SECRET_ACCESS_KEY"]) || strings.Contains(string(b), dynEnv["AWS_ACCESS_KEY_ID"]) {
		t.Errorf("the operation's results hold a credential: %s", b)
	}
	for _, it := range d.Items(t) {
		if pk := upstreams.DynamoString(it["pk"]); upstreams.DynamoString(it["status"]) != before[pk] {
			t.Errorf("%s changed to %s though every write was refused", pk, upstreams.DynamoString(it["status"]))
		}
	}
	t.Logf("commit after the rotation: status %v, counts %v, stop %q", op["status"], counts, op["stop_reason"])
}
