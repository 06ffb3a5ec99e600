package write

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
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
func JudgeAnswer(a *upstream.Action, resp *upstream.Response, t Target) Judgment {
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
func answerRecord(a *upstream.Action, resp *upstream.Response) map[string]any {
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return nil
	}
	doc, err := upstream.DecodeJSONBody(resp, true)
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
