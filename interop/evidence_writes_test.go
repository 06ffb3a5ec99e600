package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// Evidence mutation on writes: airlock writes to a real upstream through a
// proxy that changes each write's answer in one way (a 204 instead of the
// record, {}, another record's id, a field outside the effect changed, the
// version dropped) or does not forward the write at all and answers it
// itself (204, {}, or an echo of the request: the API ignored it). Each
// mutation gets targets of its own, in an operation of its own. The
// property, held against the upstream's own store: a target is journaled
// succeeded only when the store shows the effect, and, when its answer was
// mutated, only after the proxy saw it re-read after its write; a target
// journaled as untouched (skipped, failed) is untouched in the store; and
// every target that did not succeed carries a stable problem code.

// writeEvidenceCase is one action of a real upstream, with targets to
// spend on the mutations.
type writeEvidenceCase struct {
	upstream string // the upstream's name in the report
	config   string // testdata/<config>, {{BASE_URL}} replaced
	base     string
	env      map[string]string
	action   string
	params   map[string]any
	// pool holds the ids of records the action may write (each eligible,
	// none written yet): writeMutationTargets per mutation and one more.
	pool []string
	// target names the target a request the proxy saw writes (write) or
	// reads by id; "" for any other request.
	target func(r proxied) (id string, write bool)
	// applied reads the upstream's own store: which of ids show the
	// effect.
	applied func(t *testing.T, ids []string) map[string]bool
}

// writeMutationTargets is how many targets each mutation writes.
const writeMutationTargets = 3

// writeReportEnv names a file the matrix rows are appended to.
const writeReportEnv = "AIRLOCK_WRITE_EVIDENCE_REPORT"

// writeMutation is one change of a write's answer. forward says whether
// the write reaches the upstream; answer returns what airlock gets
// instead of the upstream's answer (or, not forwarded, the proxy's own),
// and false when the mutation does not apply to this API's answers.
type writeMutation struct {
	name    string
	forward bool
	answer  func(c *writeAnswerCtx, status int, body []byte) (int, []byte, bool)
}

// writeAnswerCtx is what a mutation knows of the action and of the write
// it answers.
type writeAnswerCtx struct {
	item, idPath, versionPath string
	frame                     []string       // paths of the declared fields outside the effect
	effect                    map[string]any // the effect's after-values, by path, in the API's encoding
	id, other                 any            // the target's id and another record's, in the API's type
	typed                     bool           // values are typed (item_encoding: dynamodb)
	request                   []byte
}

// record decodes an answer and finds the record in it (at response.item,
// else the body).
func (c *writeAnswerCtx) record(body []byte) (doc any, rec map[string]any, ok bool) {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		return nil, nil, false
	}
	v, _ := jsonvalue.Get(doc, c.item)
	rec, ok = v.(map[string]any)
	return doc, rec, ok && len(rec) > 0
}

func encoded(doc any) []byte {
	b, _ := jsonvalue.Encode(doc)
	return b
}

var writeMutations = []writeMutation{
	{name: "none", forward: true, answer: func(_ *writeAnswerCtx, status int, body []byte) (int, []byte, bool) { return status, body, true }},
	{name: "204 instead of the answer", forward: true, answer: func(*writeAnswerCtx, int, []byte) (int, []byte, bool) { return http.StatusNoContent, nil, true }},
	{name: "{} instead of the answer", forward: true, answer: func(*writeAnswerCtx, int, []byte) (int, []byte, bool) { return http.StatusOK, []byte("{}"), true }},
	{name: "another record's id", forward: true, answer: func(c *writeAnswerCtx, status int, body []byte) (int, []byte, bool) {
		doc, rec, ok := c.record(body)
		switch {
		case ok && has(rec, c.idPath):
			jsonvalue.Set(rec, c.idPath, c.other)
		case ok && has(rec, "id"):
			rec["id"] = fmt.Sprint(c.other) // CouchDB's {ok, id, rev}
		default:
			return status, body, false
		}
		return status, encoded(doc), true
	}},
	{name: "a field outside the effect changed", forward: true, answer: func(c *writeAnswerCtx, status int, body []byte) (int, []byte, bool) {
		doc, rec, ok := c.record(body)
		if !ok {
			return status, body, false
		}
		for _, path := range c.frame {
			if v, found := jsonvalue.Get(rec, path); found {
				other := otherValue(v)
				if av, isAV := v.(map[string]any); c.typed && isAV && len(av) == 1 {
					// Another value of the same type, not an unreadable one.
					for tag, inner := range av {
						other = map[string]any{tag: otherValue(inner)}
					}
				}
				jsonvalue.Set(rec, path, other)
				return status, encoded(doc), true
			}
		}
		return status, body, false
	}},
	{name: "the version dropped", forward: true, answer: func(c *writeAnswerCtx, status int, body []byte) (int, []byte, bool) {
		doc, rec, ok := c.record(body)
		if !ok || c.versionPath == "" {
			return status, body, false
		}
		m, key, found := locate(rec, c.versionPath)
		if !found {
			return status, body, false
		}
		if _, there := m[key]; !there {
			return status, body, false
		}
		delete(m, key)
		return status, encoded(doc), true
	}},
	{name: "not forwarded, 204", answer: func(*writeAnswerCtx, int, []byte) (int, []byte, bool) { return http.StatusNoContent, nil, true }},
	{name: "not forwarded, {}", answer: func(*writeAnswerCtx, int, []byte) (int, []byte, bool) { return http.StatusOK, []byte("{}"), true }},
	{name: "not forwarded, an echo of the request", answer: func(c *writeAnswerCtx, _ int, _ []byte) (int, []byte, bool) {
		// The request's body when it is the record's shape (it names the
		// effect's fields where the record holds them), else the record
		// the request asks for: the id and the effect's after-values.
		echo := map[string]any{}
		if req, err := jsonvalue.Decode(c.request); err == nil {
			if m, ok := req.(map[string]any); ok && holdsAll(m, slices.Collect(maps.Keys(c.effect))) {
				echo = m
			}
		}
		if len(echo) == 0 {
			for path, v := range c.effect {
				jsonvalue.Put(echo, path, v)
			}
		}
		if !has(echo, c.idPath) {
			jsonvalue.Put(echo, c.idPath, c.id)
		}
		var doc any = echo
		if c.item != "" {
			wrap := map[string]any{}
			jsonvalue.Put(wrap, c.item, echo)
			doc = wrap
		}
		return http.StatusOK, encoded(doc), true
	}},
}

// typedWriteMutations change, in the record a write's answer holds, the
// typed value (item_encoding: dynamodb) of the id and of each field the
// effect sets, one at a time, each as attrMutations does on a read.
func typedWriteMutations(base writeAnswerCtx) []writeMutation {
	paths := append([]string{base.idPath}, slices.Sorted(maps.Keys(base.effect))...)
	var out []writeMutation
	for _, path := range paths {
		for _, kind := range attrMutations {
			out = append(out, writeMutation{name: fmt.Sprintf("%s typed %s", path, kind), forward: true,
				answer: func(c *writeAnswerCtx, status int, body []byte) (int, []byte, bool) {
					doc, rec, ok := c.record(body)
					if !ok {
						return status, body, false
					}
					parent, key, found := locate(rec, path)
					if !found {
						return status, body, false
					}
					av, _ := parent[key].(map[string]any)
					if len(av) != 1 {
						return status, body, false
					}
					b, changed := retag(doc, parent, key, av, kind)
					if !changed {
						return status, body, false
					}
					return status, b, true
				}})
		}
	}
	return out
}

func has(m map[string]any, path string) bool {
	_, ok := jsonvalue.Get(m, path)
	return ok
}

func holdsAll(m map[string]any, paths []string) bool {
	for _, p := range paths {
		if !has(m, p) {
			return false
		}
	}
	return len(paths) > 0
}

// writeRow is one row of the matrix: one mutation's targets and what
// became of them.
type writeRow struct {
	mutation   string
	applies    bool // the mutation changed at least one answer
	targets    int
	outcomes   map[string]int
	reread     int // succeeded targets the proxy saw re-read after their write
	writes     int // the writes of the targets the proxy saw (re-sends included)
	codes      map[string]int
	violations []string
	stopped    string
}

// checkWriteEvidence runs every mutation of c's action against its own
// targets and checks the property.
func checkWriteEvidence(t *testing.T, c writeEvidenceCase) []writeRow {
	t.Helper()
	started := time.Now()
	px := startWriteProxy(t, c.base)
	// The re-reads that settle an unknown outcome wait briefly: a mutated
	// answer is no delayed write, so waiting longer would tell nothing more.
	w := withStore(t, startAirlockWith(t, c.config, px.URL, c.env, func(cfg *configpkg.Config) {
		cfg.Actions[c.action].Reconcile = configpkg.ReconcileConfig{Rereads: 3, Backoff: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	}))
	a := w.runtime.Actions[c.action]
	wctx := writeCtxFor(t, a, c.params)
	mutations := writeMutations
	if a.Resource.Config.ItemEncoding == configpkg.EncodingDynamoDB {
		mutations = append(slices.Clone(writeMutations), typedWriteMutations(wctx)...)
	}
	if need := writeMutationTargets*len(mutations) + 1; len(c.pool) < need {
		t.Fatalf("%s: %d eligible targets; the matrix needs %d", c.upstream, len(c.pool), need)
	}
	other := c.pool[len(c.pool)-1]
	var rows []writeRow
	for i, m := range mutations {
		ids := c.pool[i*writeMutationTargets : (i+1)*writeMutationTargets]
		rows = append(rows, runWriteMutation(t, c, w, px, a, wctx, m, ids, other))
	}
	px.set(nil, nil)
	var lines []string
	for _, r := range rows {
		for _, v := range r.violations {
			t.Errorf("%s, %s: %s", c.upstream, r.mutation, v)
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s |", c.upstream, c.action, r))
	}
	t.Logf("write evidence mutation, %s %s, in %.1fs:\n%s", c.upstream, c.action, time.Since(started).Seconds(), strings.Join(lines, "\n"))
	if path := os.Getenv(writeReportEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, strings.Join(lines, "\n"))
			f.Close()
		}
	}
	return rows
}

// writeCtxFor is what every mutation knows of the action: where the record
// sits in its answer and its paths, and the effect's after-values.
func writeCtxFor(t *testing.T, a *upstream.Action, params map[string]any) writeAnswerCtx {
	t.Helper()
	r := a.Resource
	c := writeAnswerCtx{idPath: r.FieldPath(r.Config.IDField), effect: map[string]any{}, typed: r.Config.ItemEncoding == configpkg.EncodingDynamoDB}
	if a.Config.Response != nil {
		c.item = a.Config.Response.Item
	}
	if r.Config.VersionField != "" {
		c.versionPath = r.FieldPath(r.Config.VersionField)
	}
	after, err := a.After(params)
	if err != nil {
		t.Fatalf("the effect of %s: %v", a.Name, err)
	}
	inEffect := map[string]bool{}
	for _, e := range a.Config.Effect {
		inEffect[e.Field] = true
		if v, ok := after[e.Field]; ok {
			c.effect[r.FieldPath(e.Field)] = r.Encode(e.Field, v)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		fc := r.Config.Fields[name]
		if name == r.Config.IDField || name == r.Config.VersionField || inEffect[name] || fc == nil || fc.Volatile {
			continue
		}
		c.frame = append(c.frame, r.FieldPath(name))
	}
	return c
}

func runWriteMutation(t *testing.T, c writeEvidenceCase, w *airlock, px *writeProxy, a *upstream.Action, base writeAnswerCtx, m writeMutation, ids []string, other string) writeRow {
	t.Helper()
	row := writeRow{mutation: m.name, targets: len(ids), outcomes: map[string]int{}, codes: map[string]int{}}
	res := a.Resource
	var (
		mu      sync.Mutex
		mutated = map[string]int{}
	)
	answerFor := func(req proxied) (*writeAnswerCtx, string, bool) {
		id, write := c.target(req)
		if !write || !slices.Contains(ids, id) {
			return nil, "", false
		}
		wc := base
		wc.id, wc.other = res.Encode(res.Config.IDField, res.TypedID(id)), res.Encode(res.Config.IDField, res.TypedID(other))
		wc.request = req.Body
		return &wc, id, true
	}
	px.set(func(req proxied) (int, []byte, bool) {
		wc, id, ok := answerFor(req)
		if !ok || m.forward {
			return 0, nil, false
		}
		status, body, applies := m.answer(wc, 0, nil)
		if applies {
			mu.Lock()
			mutated[id]++
			mu.Unlock()
		}
		return status, body, applies
	}, func(req proxied, status int, body []byte) (int, []byte) {
		wc, id, ok := answerFor(req)
		if !ok {
			return status, body
		}
		s, b, applies := m.answer(wc, status, body)
		if applies && m.name != "none" {
			mu.Lock()
			mutated[id]++
			mu.Unlock()
		}
		return s, b
	})
	action := map[string]any{"type": c.action}
	if c.params != nil {
		action["params"] = c.params
	}
	prev := w.tool(t, "preview_selection", map[string]any{"resource": res.Name, "ids": ids, "action": action, "deadline_ms": deadlineMS})
	data := prev["data"].(map[string]any)
	if data["committable"] != true || data["counts"].(map[string]any)["members"] != float64(len(ids)) {
		t.Fatalf("%s, %s: preview of %v: committable %v, counts %v", c.upstream, m.name, ids, data["committable"], data["counts"])
	}
	op, opData := commitOp(t, w, data)
	seen := px.requests()
	j := journalOf(t, w, op)
	store := c.applied(t, ids)
	mu.Lock()
	defer mu.Unlock()
	row.applies = len(mutated) > 0 || m.name == "none"
	if s, _ := opData["stop_reason"].(string); s != "" {
		row.stopped = s
	}

	// The last write of each target, and the reads of it after that.
	lastWrite, readAfter := map[string]int{}, map[string]bool{}
	for _, r := range seen {
		id, write := c.target(r)
		if id == "" {
			continue
		}
		if write {
			row.writes++
			lastWrite[id] = r.Seq
			readAfter[id] = false
		} else if _, wrote := lastWrite[id]; wrote {
			readAfter[id] = true
		}
	}
	for _, id := range ids {
		e := j[id]
		row.outcomes[e.Outcome]++
		// The rows say something only if the unchanged answers prove the
		// writes, and the writes held back never reach the store.
		if m.name == "none" && e.Outcome != "succeeded" {
			row.violations = append(row.violations, fmt.Sprintf("%s, its answer unchanged, is %s (%s %q): the case cannot tell a mutation's effect", id, e.Outcome, e.code(), e.Note))
		}
		if !m.forward && store[id] {
			row.violations = append(row.violations, fmt.Sprintf("%s: the store shows the effect of a write the proxy held back", id))
		}
		if e.code() != "" && e.Outcome != "succeeded" {
			row.codes[e.code()]++
		}
		_, written := lastWrite[id]
		switch {
		case e.Outcome == "succeeded":
			if !store[id] {
				row.violations = append(row.violations, fmt.Sprintf("%s journaled succeeded; the store does not show the effect", id))
			}
			if readAfter[id] {
				row.reread++
			} else if mutated[id] > 0 {
				row.violations = append(row.violations, fmt.Sprintf("%s journaled succeeded on a mutated answer, never re-read after its write", id))
			}
		case e.Outcome == "pending" && !written:
			if row.stopped == "" {
				row.violations = append(row.violations, fmt.Sprintf("%s was never sent, and the operation says no stop", id))
			}
		case e.code() == "":
			row.violations = append(row.violations, fmt.Sprintf("%s is %s without a problem code (%q)", id, e.Outcome, e.Note))
		case e.Problem.StateChanged == "none" && store[id]:
			row.violations = append(row.violations, fmt.Sprintf("%s journaled %s, nothing changed (%s); the store shows the effect", id, e.Outcome, e.code()))
		}
	}
	return row
}

// String is the row's cells after the upstream and action.
func (r writeRow) String() string {
	if !r.applies {
		return fmt.Sprintf("%s | n/a: the answers hold nothing it changes | | | | | |", r.mutation)
	}
	var codes []string
	for code, n := range r.codes {
		codes = append(codes, fmt.Sprintf("%s %d", code, n))
	}
	sort.Strings(codes)
	other := []string{}
	for _, o := range slices.Sorted(maps.Keys(r.outcomes)) {
		if o != "succeeded" && o != "unknown" {
			other = append(other, fmt.Sprintf("%s %d", o, r.outcomes[o]))
		}
	}
	if r.stopped != "" {
		other = append(other, "operation stopped")
	}
	return fmt.Sprintf("%s | %d | %d writes | %d (%d re-read) | %d | %s | %s | %d",
		r.mutation, r.targets, r.writes, r.outcomes["succeeded"], r.reread, r.outcomes["unknown"], strings.Join(other, ", "), strings.Join(codes, ", "), len(r.violations))
}

// pathTarget reads the target from a request's path: re's first group is
// the id; any method but GET writes.
func pathTarget(re string) func(proxied) (string, bool) {
	rx := regexp.MustCompile(re)
	return func(r proxied) (string, bool) {
		m := rx.FindStringSubmatch(r.Path)
		if m == nil {
			return "", false
		}
		return m[1], r.Method != http.MethodGet
	}
}

// jsonBody decodes a request's JSON body into v; false when it is not.
func jsonBody(r proxied, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	return dec.Decode(v) == nil
}
