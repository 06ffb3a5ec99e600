package write

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// A write is proven by the target's own record. The judge below is the
// one place that decides a target succeeded: only a record of the target
// (its id equal to the target's) that shows the effect's after-values and
// every other declared field as it was (the frame) proves it, whether that
// record is the write's answer or a re-read. An empty body, a 204, {}, a
// bare status, an answer that only echoes the request where the action
// says answers are no evidence (verify: reread), or another record leave
// the target unknown until a re-read shows it.

// Frame is a target's declared fields outside the action's effect, as the
// preview read them: each field's name and a digest of its value. A record
// that shows one of them otherwise was changed by more than the effect
// (a PUT that replaced the whole record, another writer). The id, the
// version field and fields declared volatile (changed by the upstream on
// every write: updated_on, _rev) are left out.
type Frame map[string]string

// FrameOf computes a record's frame for the action. The record is as a
// read gives it: decoded and normalized.
func FrameOf(a *upstream.Action, doc map[string]any) Frame {
	fields := frameFields(a)
	if len(fields) == 0 {
		return nil
	}
	out := make(Frame, len(fields))
	for _, f := range fields {
		out[f] = fieldDigest(jsonvalue.Get(doc, a.Resource.FieldPath(f)))
	}
	return out
}

// frameFields are the declared fields a frame holds, sorted.
func frameFields(a *upstream.Action) []string {
	r := a.Resource
	skip := map[string]bool{r.Config.IDField: true, r.Config.VersionField: true}
	for _, e := range a.Config.Effect {
		skip[e.Field] = true
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		if fc := r.Config.Fields[name]; fc == nil || skip[name] || fc.Volatile {
			continue
		}
		out = append(out, name)
	}
	return out
}

// fieldDigest is a short digest of a field's value: its canonical
// encoding, or absence.
func fieldDigest(v any, present bool) string {
	if !present {
		return "absent"
	}
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		b = []byte(fmt.Sprint(v))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// changed lists the frame's fields the record shows otherwise, sorted.
func (f Frame) changed(a *upstream.Action, doc map[string]any) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(f)) {
		if fc, ok := a.Resource.Config.Fields[name]; ok && fc != nil && fc.Volatile {
			continue // declared volatile since the preview
		}
		if fieldDigest(jsonvalue.Get(doc, a.Resource.FieldPath(name))) != f[name] {
			out = append(out, name)
		}
	}
	return out
}

// Target is what the judge knows of one target: its id, the values the
// preview read (the effect's before-values and the frame) and the
// after-values the effect computes.
type Target struct {
	ID string
	// Version is the target's version the write was sent at (the
	// preview's, or a re-read's right before it); "" when it has none.
	Version string
	Before  map[string]any
	After   map[string]any
	Frame   Frame
}

// State is what a record of the target shows.
type State int

// States of a record.
const (
	// StateApplied: the target's record shows the effect, and every other
	// declared field as the preview read it.
	StateApplied State = iota + 1
	// StateUntouched: the effect's fields hold their before-values.
	StateUntouched
	// StateMoved: something else changed it: the effect's fields hold
	// other values, or fields outside the effect changed (Changed).
	StateMoved
	// StateOther: the record is not the target's (another id, or none).
	StateOther
)

// Examination is what a record of the target shows.
type Examination struct {
	State State
	// Changed names the fields outside the effect that the record shows
	// otherwise than the preview read them.
	Changed []string
}

// Examine compares a record (as a read gives it: decoded, normalized)
// with the target: whose it is, whether it shows the effect, and what
// else changed.
func Examine(a *upstream.Action, doc map[string]any, t Target) Examination {
	id, ok := jsonvalue.GetID(doc, a.Resource.FieldPath(a.Resource.Config.IDField))
	if !ok || id != t.ID {
		return Examination{State: StateOther}
	}
	changed := t.Frame.changed(a, doc)
	applied, untouched := true, true
	for _, e := range a.Config.Effect {
		v, _ := jsonvalue.Get(doc, a.Resource.FieldPath(e.Field))
		fd, _ := a.Resource.Field(e.Field)
		if !e.Applied(v, t.After[e.Field], fd) {
			applied = false
		}
		if describe(v) != describe(t.Before[e.Field]) {
			untouched = false
		}
	}
	switch {
	case applied && len(changed) == 0:
		return Examination{State: StateApplied}
	case untouched && len(changed) == 0:
		return Examination{State: StateUntouched}
	}
	return Examination{State: StateMoved, Changed: changed}
}

func describe(v any) string {
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Verdict is the judge's finding on one answered write.
type Verdict int

// Verdicts.
const (
	// Proven: the answer is the target's own record, showing the effect
	// and nothing else changed.
	Proven Verdict = iota + 1
	// Unproven: the write may have applied, but the answer does not show
	// it: a re-read decides.
	Unproven
)

// Judgment is the judge's finding on a 2xx answer that claims success:
// the verdict, and for an unproven one why, as a journal note and a
// problem.
type Judgment struct {
	Verdict Verdict
	Note    string
	Problem *envelope.Problem
}

// JudgeAnswer judges a 2xx answer the other checks found to claim success
// (not an error, within the response contract, not refused): Proven only
// when the answer is the target's own record showing the effect and every
// other declared field as it was; else Unproven, for a re-read to decide.
func JudgeAnswer(a *upstream.Action, resp *transport.Response, t Target) Judgment {
	switch {
	case a.VerifyByReread():
		return unproven("verify: reread: the action's answers are not evidence; a re-read decides",
			"The action declares that its answers are not evidence of the write (verify: reread); whether it applied is observed by re-reading the target.")
	case a.Deletes():
		return unproven("a delete is proven by the target's absence: a re-read decides",
			"A delete is proven by the target's absence; whether it applied is observed by re-reading the target.")
	case resp.Status == http.StatusAccepted:
		// Accepted for processing is not done: it may still fail, or land
		// later.
		return unproven("accepted (202) for later processing: whether it applied is observed by re-reading",
			"The upstream accepted the write for later processing; whether it applied is observed by re-reading the target.")
	}
	rec := answerRecord(a, resp)
	if rec == nil {
		what := "without the target's record"
		if len(bytes.TrimSpace(resp.Body)) == 0 {
			what = "with an empty body"
		}
		return unproven(fmt.Sprintf("answered %d %s: whether it applied is observed by re-reading", resp.Status, what),
			"The upstream answered the write without the target's record; whether it applied is observed by re-reading the target.")
	}
	return judgeRecord(a, rec, t)
}

// JudgeResult judges a bulk result whose status says applied: proven only
// by its record (result_item) of the target, showing the effect and
// nothing else changed.
func JudgeResult(a *upstream.Action, item any, t Target) Judgment {
	if a.VerifyByReread() {
		return unproven("verify: reread: the action's answers are not evidence; a re-read decides",
			"The action declares that its answers are not evidence of the write (verify: reread); whether it applied is observed by re-reading the target.")
	}
	m, _ := item.(map[string]any)
	var rec map[string]any
	if len(m) > 0 {
		rec, _ = a.Resource.AsRead(m)
	}
	if rec == nil {
		return unproven("the bulk result says applied without the target's record: a re-read decides",
			"The bulk result says applied without the target's record; whether it applied is observed by re-reading the target.")
	}
	return judgeRecord(a, rec, t)
}

// judgeRecord judges a record an answer holds.
func judgeRecord(a *upstream.Action, rec map[string]any, t Target) Judgment {
	switch ex := Examine(a, rec, t); ex.State {
	case StateApplied:
		if j, ok := unversioned(a, rec, t); ok {
			return j
		}
		return Judgment{Verdict: Proven}
	case StateOther:
		return unproven("the answer is not the target's record (another id, or none): a re-read decides",
			"The upstream answered the write with a record that is not the target's; whether the target changed is observed by re-reading it.")
	case StateMoved:
		if len(ex.Changed) > 0 {
			return unproven("the answer shows fields outside the effect changed ("+strings.Join(ex.Changed, ", ")+"): a re-read decides",
				"The upstream's answer shows fields the action does not change changed; whether the write did only what was approved is observed by re-reading the target.")
		}
	}
	return unproven("answered 2xx, but the answer shows the target without the change: a re-read decides",
		"The upstream answered success with the target unchanged; whether the write applied is observed by re-reading the target.")
}

// unversioned says why an answer that shows the effect is still no proof
// for a resource with a version: a record after a write holds the version
// the write gave it. One without a version is not the whole record; one at
// the version the write was sent at is the record before the write, or the
// request echoed back (a whole-record request holds that version too).
func unversioned(a *upstream.Action, rec map[string]any, t Target) (Judgment, bool) {
	vf := a.Resource.Config.VersionField
	if vf == "" || t.Version == "" {
		return Judgment{}, false
	}
	switch v, ok := jsonvalue.GetID(rec, a.Resource.FieldPath(vf)); {
	case !ok:
		return unproven("the answer shows the change without a version ("+vf+"): not the whole record; a re-read decides",
			"The upstream's answer shows the change without the record's version; whether the write applied is observed by re-reading the target."), true
	case v == t.Version:
		return unproven("the answer shows the change at the version the write was sent at ("+vf+"): the record before the write, or the request echoed; a re-read decides",
			"The upstream's answer shows the change at the version the write was sent at, as an echo of the request would; whether the write applied is observed by re-reading the target."), true
	}
	return Judgment{}, false
}

func unproven(note, detail string) Judgment {
	p := envelope.NewProblem(envelope.ProblemWriteUnconfirmed, detail)
	p.StateChanged = envelope.StateUnknown
	return Judgment{Verdict: Unproven, Note: note, Problem: p}
}

// answerRecord is the record a write's answer holds (at response.item,
// else the body), read as a read by id reads one; nil when it holds none.
func answerRecord(a *upstream.Action, resp *transport.Response) map[string]any {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return nil
	}
	path := ""
	if a.Config.Response != nil {
		path = a.Config.Response.Item
	}
	item, _ := jsonvalue.Get(doc, path)
	m, ok := item.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	rec, err := a.Resource.AsRead(m)
	if err != nil {
		return nil
	}
	return rec
}

// Outcome is the judge's finding on one attempt at one target.
type Outcome int

// Outcomes of an attempt.
const (
	// Succeeded: the answer is the target's own record showing the
	// effect and nothing else changed.
	Succeeded Outcome = iota + 1
	// Failed: refused; nothing applied.
	Failed
	// Skipped: refused because the target changed (a failed condition)
	// or is not found; nothing applied.
	Skipped
	// Unknown: the write may have applied; a re-read decides.
	Unknown
	// Pending: not processed (rate limited before processing, not sent):
	// to be sent again.
	Pending
)

// Finding is the judge's verdict on one attempt, with its evidence and
// what the run must do besides journaling it.
type Finding struct {
	Outcome Outcome
	Status  int
	// Problem is the failure's, with state_changed set (nil for a
	// success or a target put back to pending).
	Problem *envelope.Problem
	Note    string
	// Rules: the attempt counts for the stop rules, under Problem's code;
	// with OnlyIfFinal, only when no earlier attempt may have applied (a
	// refusal is final only then: the journal keeps the target unknown
	// otherwise).
	Rules       bool
	OnlyIfFinal bool
	// Stop, when set, stops the run for this reason.
	Stop string
	// RateLimited: the run pauses for Wait before sending more.
	RateLimited bool
	Wait        time.Duration
	// NoToken: no access token could be had; the run stops.
	NoToken bool
}

// Judge is the one place that decides a write attempt's outcome: the
// answer (resp, or the failure err) of the request sent for target t.
// Only the target's own record proves a success; anything that may have
// applied without showing it is unknown, for a re-read to settle.
func Judge(a *upstream.Action, resp *transport.Response, err error, t Target) Finding {
	if err == nil {
		return judgeAnswered(a, resp, t)
	}
	return judgeFailed(a, err)
}

func unobserved(status int, p *envelope.Problem, note string) Finding {
	p.StateChanged = envelope.StateUnknown
	return Finding{Outcome: Unknown, Status: status, Problem: p, Note: note}
}

func refused(outcome Outcome, status int, p *envelope.Problem, note string, rules bool) Finding {
	p.StateChanged = envelope.StateNone
	return Finding{Outcome: outcome, Status: status, Problem: p, Note: note, Rules: rules, OnlyIfFinal: true}
}

func judgeAnswered(a *upstream.Action, resp *transport.Response, t Target) Finding {
	switch verdict, msg := GraphQLVerdict(a, resp); verdict {
	case GraphQLRefused:
		// Errors before execution (no data at all), or the API's own user
		// errors: nothing was applied.
		p := envelope.NewProblem(envelope.ProblemUpstreamRejected, "The upstream refused the GraphQL mutation.")
		p.UpstreamMessage = msg
		return refused(Failed, resp.Status, p, "the GraphQL mutation was refused", true)
	case GraphQLUnknown:
		// Errors during execution: the mutation may have applied.
		p := envelope.NewProblem(envelope.ProblemUpstreamGraphQL, "The GraphQL mutation answered with errors during execution; whether it applied is observed by re-reading.")
		p.UpstreamMessage = msg
		return unobserved(resp.Status, p, "the GraphQL mutation reported errors while executing: whether it applied is unknown until re-read")
	}
	switch MemberVerdict(a, resp) {
	case MemberConflict:
		// The API says its condition failed (etcd's txn: succeeded false):
		// refused like a 409 or 412, nothing applied.
		p := envelope.NewProblem(envelope.ProblemUpstreamConflict, "The upstream answered that the write's condition failed: the target changed since it was read.")
		return refused(Skipped, resp.Status, p, "precondition changed: the upstream's answer says its condition failed", false)
	case MemberUnknown:
		return unobserved(resp.Status, envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The upstream's answer does not say whether the write applied, as the action declares it must; a re-read decides."),
			"answered 2xx without the declared outcome member's applied or conflict value: whether it applied is unknown until re-read")
	}
	if berr := CheckBody(resp); berr != nil {
		// A 2xx whose body is an error or unreadable is never a success.
		return unobserved(resp.Status, transport.ProblemFor(berr, nil), "the upstream answered 2xx with a body that is not a success; whether it applied is unknown")
	}
	if vs := CheckContract(a, resp); len(vs) > 0 {
		// The answer does not look like what was approved: the write may
		// have done something else. The run stops at the first.
		what := vs[0].Describe()
		f := unobserved(resp.Status, envelope.NewProblem(envelope.ProblemUpstreamContract, "The upstream's answer broke the action's response contract: "+what+"."),
			"the answer broke the response contract: "+what)
		f.Stop = what + " in the upstream's answer: " + a.Name + " stopped"
		return f
	}
	// Only the target's own record, showing the change and nothing else
	// moved, proves it; anything else is settled by a re-read.
	if j := JudgeAnswer(a, resp, t); j.Verdict != Proven {
		return unobserved(resp.Status, j.Problem, j.Note)
	}
	return Finding{Outcome: Succeeded, Status: resp.Status, Rules: true}
}

func judgeFailed(a *upstream.Action, err error) Finding {
	p := transport.ProblemFor(err, a.FieldName)
	if transport.IsTokenProblem(p.Code) {
		p.StateChanged = envelope.StateNone
		return Finding{Outcome: Pending, Problem: p, Note: "not sent: no access token could be obtained", NoToken: true}
	}
	var he *transport.HTTPError
	if !errors.As(err, &he) {
		return unobserved(0, p, "the write failed in an unexpected way; its outcome was not observed")
	}
	switch he.Kind {
	case transport.FailCanceled:
		if !he.Sent {
			return Finding{Outcome: Pending, Note: "not sent: airlock was stopping"}
		}
		return unobserved(he.Status, p, "sent, but airlock stopped before the answer was observed")
	case transport.FailTimeout, transport.FailTooLarge:
		if he.Sent || he.Kind == transport.FailTooLarge {
			return unobserved(he.Status, p, "sent, but no answer was observed before the timeout")
		}
		// Timed out while the connection was still being made: nothing
		// was written, as when the connection is refused.
		return refused(Failed, 0, p, "not sent: the connection could not be made in time", true)
	case transport.FailConnection:
		if he.Sent {
			return unobserved(0, p, "the connection broke after sending")
		}
		return refused(Failed, 0, p, "not sent: the connection could not be made", true)
	}
	st := he.Status
	switch {
	case st >= 300 && st < 400:
		f := unobserved(st, envelope.NewProblem(envelope.ProblemUpstreamBadResponse, "The upstream redirected the write; airlock does not follow redirects with writes."),
			"redirected: the redirect was not followed; whether the upstream did anything is unknown until re-read")
		f.Stop = fmt.Sprintf("the upstream answered a write with a redirect (%d): the operation stopped", st)
		return f
	case st == http.StatusNotFound:
		return refused(Skipped, st, p, "not found", false)
	case st == http.StatusConflict || st == http.StatusPreconditionFailed || he.Conflict:
		return refused(Skipped, st, p, "precondition changed: the upstream refused the conditional write", false)
	case he.RateLimited():
		// A 429 (or a throttle the upstream declares) is a refusal before
		// processing: the target goes back to pending and the run pauses
		// for the wait airlock keeps.
		return Finding{Outcome: Pending, Status: st, Note: "rate limited before processing; it will be sent again", RateLimited: true, Wait: he.RetryAfter}
	case he.CredentialRefused() || st == http.StatusForbidden:
		// The credential was refused: the stop rules end the run at once,
		// whatever an earlier attempt did.
		f := refused(Failed, st, p, "", true)
		f.OnlyIfFinal = false
		return f
	case st == http.StatusBadRequest || st == http.StatusUnprocessableEntity:
		return refused(Failed, st, p, "", true)
	case st >= 500:
		f := unobserved(st, p, "the upstream failed while handling the write")
		f.Rules = true
		return f
	}
	f := unobserved(st, p, fmt.Sprintf("unexpected status %d", st))
	f.Stop = fmt.Sprintf("unexpected status %d from the upstream: the operation stopped", st)
	return f
}

// JudgeBulk is Judge for one target's result in a bulk response (answered
// false: the response holds none for it, or two). A status proves nothing
// by itself: the result's record of the target (result_item) does, or a
// re-read.
func JudgeBulk(a *upstream.Action, res BulkResult, answered bool, status int, t Target) Finding {
	unclear := func(detail, note string) Finding {
		return unobserved(status, envelope.NewProblem(envelope.ProblemUpstreamBadResponse, detail), note)
	}
	if !answered {
		return unclear("The bulk response did not mention this target, or answered it twice.", "absent from the bulk response, or answered twice")
	}
	switch res.Outcome {
	case BulkApplied:
		if j := JudgeResult(a, res.Item, t); j.Verdict != Proven {
			return unobserved(status, j.Problem, j.Note)
		}
		return Finding{Outcome: Succeeded, Status: status, Rules: true}
	case BulkConflict:
		return Finding{Outcome: Skipped, Status: status, Note: "precondition changed: the upstream refused this target", OnlyIfFinal: true}
	case BulkNotFound:
		return Finding{Outcome: Skipped, Status: status, Note: "not found", OnlyIfFinal: true}
	case BulkFailed:
		return refused(Failed, status, envelope.NewProblem(envelope.ProblemUpstreamRejected, "The bulk endpoint reported a failure for this target."), "", true)
	}
	return unclear("The bulk result's status is none the action declares and not a refusal; whether the write applied is observed by re-reading.",
		"the result's status is neither applied, conflict, not found nor a refusal: a re-read decides")
}
