package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	configpkg "github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
)

// Evidence mutation: the answers a real upstream gave to one
// representative scan are recorded, then replayed to airlock with one
// signal the configuration declares changed at a time (removed, null, of
// another type, an object for a string and back, named twice with another
// value, empty, negative, on one page). Typed items (item_encoding:
// dynamodb) have their encoding mutated too: one item's typed value of the
// id and of each decision or filtered field, a continuation object's
// members, and the answer's own counts. The property: no mutated replay
// yields a claim stronger than the truth (complete with other records or
// another count), and every weakened claim carries a stable code.

// evidenceCase is one representative scan of a real upstream.
type evidenceCase struct {
	upstream string // the upstream's name in the report
	config   string // testdata/<config>, {{BASE_URL}} replaced
	base     string
	env      map[string]string
	resource string
	filter   map[string]any
	pageSize int // 0: the configuration's
}

// evidenceReportEnv names a file the matrix rows are appended to.
const evidenceReportEnv = "AIRLOCK_EVIDENCE_REPORT"

// Placeholders for the upstream's origin in recorded answers (a next link,
// a Link header), plain and with its slashes escaped as PHP writes them.
const (
	originMark    = "{{ORIGIN}}"
	originEscMark = "{{ORIGIN_ESC}}"
)

// exchange is one recorded answer.
type exchange struct {
	key    string
	status int
	header http.Header
	body   []byte
}

// tape records an upstream's answers through a proxy and replays them.
type tape struct {
	mu    sync.Mutex
	order []string
	byKey map[string]*exchange
	// mutate, when set, changes the answer to key before it is served.
	mutate func(key string, ex exchange) exchange
	misses int
}

func requestKey(r *http.Request, body []byte) string {
	return r.Method + " " + r.URL.RequestURI() + "\n" + string(body)
}

func withOrigin(b []byte, origin string) []byte {
	b = bytes.ReplaceAll(b, []byte(originEscMark), []byte(strings.ReplaceAll(origin, "/", `\/`)))
	return bytes.ReplaceAll(b, []byte(originMark), []byte(origin))
}

func withoutOrigin(b []byte, origin string) []byte {
	b = bytes.ReplaceAll(b, []byte(strings.ReplaceAll(origin, "/", `\/`)), []byte(originEscMark))
	return bytes.ReplaceAll(b, []byte(origin), []byte(originMark))
}

// record serves as a proxy to target, keeping every answer.
func (tp *tape) record(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	origin := u.Scheme + "://" + u.Host
	tp.byKey = map[string]*exchange{}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, origin+r.URL.RequestURI(), bytes.NewReader(body))
		for k, vs := range r.Header {
			if k == "Accept-Encoding" || k == "Host" {
				continue
			}
			req.Header[k] = slices.Clone(vs)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rb, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		ex := &exchange{key: requestKey(r, body), status: resp.StatusCode, header: http.Header{}, body: withoutOrigin(rb, origin)}
		for k, vs := range resp.Header {
			switch k {
			case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection", "Date":
				continue
			}
			for _, v := range vs {
				ex.header.Add(k, string(withoutOrigin([]byte(v), origin)))
			}
		}
		tp.mu.Lock()
		if _, seen := tp.byKey[ex.key]; !seen {
			tp.order = append(tp.order, ex.key)
		}
		tp.byKey[ex.key] = ex
		tp.mu.Unlock()
		tp.serve(w, *ex, "http://"+srv.Listener.Addr().String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// replay serves the recorded answers (mutated by tp.mutate); a request
// that was not recorded is refused as an upstream refuses a cursor it
// did not hand out.
func (tp *tape) replay(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := requestKey(r, body)
		tp.mu.Lock()
		ex, ok := tp.byKey[key]
		mutate := tp.mutate
		if !ok {
			tp.misses++
		}
		tp.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"not recorded"}`)
			return
		}
		e := *ex
		if mutate != nil {
			e = mutate(key, e)
		}
		tp.serve(w, e, "http://"+srv.Listener.Addr().String())
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (tp *tape) serve(w http.ResponseWriter, ex exchange, origin string) {
	for k, vs := range ex.header {
		for _, v := range vs {
			w.Header().Add(k, string(withOrigin([]byte(v), origin)))
		}
	}
	w.WriteHeader(ex.status)
	_, _ = w.Write(withOrigin(ex.body, origin))
}

// evidenceRun is what one scan claimed.
type evidenceRun struct {
	ids      []string
	matched  int
	complete bool
	codes    []string // reasons, or the problem's code
	err      error
}

func (c evidenceCase) scan(t *testing.T, base string) evidenceRun {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", c.config))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configpkg.Parse([]byte(strings.ReplaceAll(string(b), "{{BASE_URL}}", base)))
	if err != nil {
		t.Fatalf("testdata/%s: %v", c.config, err)
	}
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(k string) string { return c.env[k] }})
	if err != nil {
		t.Fatalf("initialize testdata/%s: %v", c.config, err)
	}
	r := rt.Resources[c.resource]
	if r == nil {
		t.Fatalf("testdata/%s has no resource %q", c.config, c.resource)
	}
	if c.pageSize > 0 {
		r = r.WithPageSize(c.pageSize)
	}
	var mu sync.Mutex
	var run evidenceRun
	scan := r.NewScan(upstream.ScanSpec{Filter: c.filter, RequestID: "evidence", Sink: sinkOf(func(it *upstream.Item) {
		mu.Lock()
		run.ids = append(run.ids, it.ID)
		mu.Unlock()
	})})
	run.err = scan.Run(t.Context(), upstream.Budget{MaxPages: 400, PagesLimitSource: "airlock", Deadline: 60 * time.Second})
	out := scan.Outcome()
	sort.Strings(run.ids)
	run.matched, run.complete = out.Matched, out.ScanComplete && run.err == nil
	if run.err != nil {
		var se *upstream.ScanError
		if ok := asScanError(run.err, &se); ok && se.Problem != nil {
			run.codes = []string{string(se.Problem.Code)}
		}
		return run
	}
	for _, rs := range out.Reasons {
		if !slices.Contains(run.codes, string(rs.Code)) {
			run.codes = append(run.codes, string(rs.Code))
		}
	}
	sort.Strings(run.codes)
	return run
}

type sinkOf func(*upstream.Item)

func (f sinkOf) Add(it *upstream.Item) error { f(it); return nil }

func asScanError(err error, se **upstream.ScanError) bool {
	for e := err; e != nil; {
		if x, ok := e.(*upstream.ScanError); ok {
			*se = x
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// signalDecl is a signal the configuration declares: a body path or a
// header.
type signalDecl struct {
	path   string
	header bool
	items  bool
	// attr: a field's typed value in one item (item_encoding: dynamodb),
	// path the field's path in the item.
	attr bool
	// object: a continuation object sent back whole (continue_param).
	object bool
}

// declaredSignals lists the signals a resolved resource declares.
func declaredSignals(r *upstream.Resource) []signalDecl {
	p := r.Pagination
	var out []signalDecl
	add := func(path string, header bool) {
		if path == "" || path == configpkg.NoTotal {
			return
		}
		for _, d := range out {
			if d.path == path && d.header == header {
				return
			}
		}
		out = append(out, signalDecl{path: path, header: header})
	}
	if p.Dialect == configpkg.DialectGraphQL {
		conn := "data." + p.Connection
		out = append(out, signalDecl{path: conn + ".nodes", items: true})
		add(conn+"."+p.HasMore, false)
		add(conn+"."+p.NextCursor, false)
		if p.Total != "" {
			add(conn+"."+p.Total, false)
		}
		return out
	}
	out = append(out, signalDecl{path: r.Config.List.Items, items: true})
	for _, path := range []string{p.HasMore, p.IsLast, p.NextCursor, p.Next, p.ContinuePath, p.Total, p.TotalRelation, p.TotalPages, p.Remaining, p.BatchComplete, p.Evaluated} {
		add(path, false)
	}
	if p.Dialect == configpkg.DialectContinue || p.Dialect == configpkg.DialectContinueObject {
		add(p.ContinuePath, false)
	}
	if s := p.Snapshot; s != nil {
		add(s.From, false)
	}
	if p.PIT != nil {
		add(p.PIT.Response, false)
	}
	add(p.TotalHeader, true)
	add(p.TotalPagesHeader, true)
	if p.Dialect == configpkg.DialectLink {
		add("Link", true)
	}
	if p.Dialect == configpkg.DialectContinueObject && p.ContinueParam != "" {
		out = append(out, signalDecl{path: p.ContinuePath, object: true})
	}
	if r.Config.ItemEncoding == configpkg.EncodingDynamoDB {
		// The encoding's own counts beside the items, declared or not.
		add("Count", false)
		add("ScannedCount", false)
		for _, name := range typedFields(r) {
			out = append(out, signalDecl{path: r.FieldPath(name), attr: true})
		}
	}
	return out
}

// typedFields are the fields whose typed values are mutated: the id, then
// every decision field and every field a filter reads.
func typedFields(r *upstream.Resource) []string {
	out := []string{r.Config.IDField}
	var more []string
	for name, fc := range r.Config.Fields {
		if fc != nil && fc.Decision {
			more = append(more, name)
		}
	}
	for name, f := range r.Config.Filters {
		if f == nil {
			continue
		}
		field := f.Field
		if field == "" {
			field = name
		}
		if _, declared := r.Config.Fields[field]; declared {
			more = append(more, field)
		}
	}
	sort.Strings(more)
	for _, f := range slices.Compact(more) {
		if f != r.Config.IDField {
			out = append(out, f)
		}
	}
	return out
}

// bodyMutations and headerMutations are the single changes tried.
var (
	bodyMutations   = []string{"removed", "null", "wrong_type", "object_for_string", "twice_other_last", "twice_other_first", "empty_string", "negative"}
	itemMutations   = []string{"id_twice_other_last", "id_twice_other_first"}
	headerMutations = []string{"removed", "empty", "garbage", "negative", "twice"}
	// attrMutations change one item's typed value of a field (DynamoDB's
	// AttributeValue): a tag it does not know, two tags, an N that is no
	// number or past a double's range, an S holding a number, NULL false,
	// no tag at all, the tag named twice.
	attrMutations = []string{"av_unknown_tag", "av_two_tags", "av_n_not_number", "av_n_past_range", "av_s_number", "av_null_false", "av_empty", "av_tag_twice_other_last", "av_tag_twice_other_first"}
	// objectMutations change a continuation object sent back whole: a
	// member's type tag unknown or named twice, a member removed, no
	// member at all.
	objectMutations = []string{"member_unknown_tag", "member_tag_twice", "member_removed", "empty_object"}
)

// mutateAttr changes the typed value at fieldPath of the first item (under
// itemsPath) that holds it; ok is false when no item does.
func mutateAttr(body []byte, itemsPath, fieldPath, kind string) ([]byte, bool) {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		return nil, false
	}
	items, _ := jsonvalue.Get(doc, itemsPath)
	arr, _ := items.([]any)
	for _, e := range arr {
		it, _ := e.(map[string]any)
		if it == nil {
			continue
		}
		parent, key, ok := locate(it, fieldPath)
		if !ok {
			continue
		}
		av, _ := parent[key].(map[string]any)
		if len(av) != 1 {
			continue
		}
		return retag(doc, parent, key, av, kind)
	}
	return nil, false
}

// retag replaces parent[key], the typed value av, as kind says, and
// encodes doc.
func retag(doc any, parent map[string]any, key string, av map[string]any, kind string) ([]byte, bool) {
	var tag string
	var inner any
	for tag, inner = range av {
	}
	switch kind {
	case "av_unknown_tag":
		parent[key] = map[string]any{"Q": inner}
	case "av_two_tags":
		two := map[string]any{tag: inner}
		if tag == "N" {
			two["S"] = "1"
		} else {
			two["N"] = "1"
		}
		parent[key] = two
	case "av_n_not_number":
		parent[key] = map[string]any{"N": "abc"}
	case "av_n_past_range":
		parent[key] = map[string]any{"N": "1e400"}
	case "av_s_number":
		parent[key] = map[string]any{"S": json.Number("5")}
	case "av_null_false":
		parent[key] = map[string]any{"NULL": false}
	case "av_empty":
		parent[key] = map[string]any{}
	case "av_tag_twice_other_last", "av_tag_twice_other_first":
		return encodeTwice(doc, av, tag, inner, otherValue(inner), kind == "av_tag_twice_other_last"), true
	default:
		return nil, false
	}
	b, err := jsonvalue.Encode(doc)
	return b, err == nil
}

// mutateObject changes the continuation object at path; ok is false when
// the answer holds none, or no member of the form kind changes.
func mutateObject(body []byte, path, kind string) ([]byte, bool) {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		return nil, false
	}
	v, _ := jsonvalue.Get(doc, path)
	o, _ := v.(map[string]any)
	if len(o) == 0 {
		return nil, false
	}
	first := slices.Sorted(maps.Keys(o))[0]
	switch kind {
	case "member_unknown_tag", "member_tag_twice":
		av, _ := o[first].(map[string]any)
		if len(av) != 1 {
			return nil, false
		}
		k := "av_unknown_tag"
		if kind == "member_tag_twice" {
			k = "av_tag_twice_other_last"
		}
		return retag(doc, o, first, av, k)
	case "member_removed":
		delete(o, first)
	case "empty_object":
		parent, key, ok := locate(doc, path)
		if !ok {
			return nil, false
		}
		parent[key] = map[string]any{}
	default:
		return nil, false
	}
	b, err := jsonvalue.Encode(doc)
	return b, err == nil
}

// locate finds the object holding path's last step (a key with dots as
// jsonvalue.Get finds it).
func locate(doc any, path string) (map[string]any, string, bool) {
	if m, ok := doc.(map[string]any); ok {
		if _, has := m[path]; has || !strings.Contains(path, ".") {
			return m, path, true
		}
	}
	for i := len(path) - 1; i > 0; i-- {
		if path[i] != '.' {
			continue
		}
		if p, ok := jsonvalue.Get(doc, path[:i]); ok {
			if m, ok := p.(map[string]any); ok {
				return m, path[i+1:], true
			}
		}
	}
	return nil, "", false
}

func otherValue(v any) any {
	switch x := v.(type) {
	case string:
		return x + "-other"
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(n+1, 10))
		}
		return json.Number("0")
	case bool:
		return !x
	case []any:
		return []any{}
	case map[string]any:
		return map[string]any{}
	}
	return "other"
}

func wrongType(v any) any {
	switch x := v.(type) {
	case string:
		return json.Number("7")
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return true
	}
	return "x"
}

func objectForString(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return "x"
	}
	return map[string]any{"value": v}
}

// mutateBody applies one mutation at path; ok is false when it does not
// apply to this answer (removing a member it does not hold).
func mutateBody(body []byte, path, kind, idPath string) ([]byte, bool) {
	doc, err := jsonvalue.Decode(body)
	if err != nil {
		return nil, false
	}
	if strings.HasPrefix(kind, "id_twice") {
		items, _ := jsonvalue.Get(doc, path)
		arr, _ := items.([]any)
		if len(arr) == 0 {
			return nil, false
		}
		first, _ := arr[0].(map[string]any)
		parent, key, ok := locate(first, idPath)
		if first == nil || !ok {
			return nil, false
		}
		orig, has := parent[key]
		if !has {
			return nil, false
		}
		return encodeTwice(doc, parent, key, orig, otherValue(orig), kind == "id_twice_other_last"), true
	}
	if path == "" {
		switch kind {
		case "removed":
			return []byte(`{}`), true
		case "null":
			return []byte(`null`), true
		case "twice_other_last", "twice_other_first":
			return nil, false
		}
		v := map[string]any{"wrong_type": wrongType(doc), "object_for_string": objectForString(doc), "empty_string": "", "negative": json.Number("-1")}[kind]
		b, _ := jsonvalue.Encode(v)
		return b, true
	}
	parent, key, ok := locate(doc, path)
	if !ok {
		return nil, false
	}
	orig, has := parent[key]
	switch kind {
	case "removed":
		if !has {
			return nil, false
		}
		delete(parent, key)
	case "null":
		parent[key] = nil
	case "wrong_type":
		parent[key] = wrongType(orig)
	case "object_for_string":
		parent[key] = objectForString(orig)
	case "empty_string":
		parent[key] = ""
	case "negative":
		parent[key] = json.Number("-1")
	case "twice_other_last", "twice_other_first":
		if !has {
			return nil, false
		}
		return encodeTwice(doc, parent, key, orig, otherValue(orig), kind == "twice_other_last"), true
	}
	b, err := jsonvalue.Encode(doc)
	return b, err == nil
}

// encodeTwice writes doc with target's member key named twice: its own
// value and another, in the order asked.
func encodeTwice(doc any, target map[string]any, key string, orig, other any, otherLast bool) []byte {
	var b bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			b.WriteByte('{')
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			first := true
			member := func(k string, v any) {
				if !first {
					b.WriteByte(',')
				}
				first = false
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				enc(v)
			}
			same := reflect.ValueOf(x).Pointer() == reflect.ValueOf(target).Pointer()
			for _, k := range keys {
				if same && k == key {
					if otherLast {
						member(k, orig)
						member(k, other)
					} else {
						member(k, other)
						member(k, orig)
					}
					continue
				}
				member(k, x[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				enc(e)
			}
			b.WriteByte(']')
		default:
			vb, _ := jsonvalue.Encode(x)
			b.Write(vb)
		}
	}
	enc(doc)
	return b.Bytes()
}

func mutateHeader(h http.Header, name, kind string) (http.Header, bool) {
	h = h.Clone()
	orig := h.Get(name)
	switch kind {
	case "removed":
		if orig == "" {
			return nil, false
		}
		h.Del(name)
	case "empty":
		h.Set(name, "")
	case "garbage":
		h.Set(name, "abc")
	case "negative":
		h.Set(name, "-1")
	case "twice":
		if orig == "" {
			return nil, false
		}
		other := "1"
		if n, err := strconv.Atoi(orig); err == nil {
			other = strconv.Itoa(n + 1)
		} else if strings.EqualFold(name, "Link") {
			other = `<` + originMark + `/elsewhere?page=99>; rel="next"`
		}
		h.Add(name, other)
	}
	return h, true
}

// evidenceRow is one upstream's line of the matrix.
type evidenceRow struct {
	upstream   string
	mutations  int
	same       int
	weakened   map[string]int // code -> count, for reasons and problems
	violations []string
}

// checkEvidence records c's scan through a proxy, replays it unmutated
// (it must give the recorded truth) and then once per mutation, and
// checks the property.
func checkEvidence(t *testing.T, c evidenceCase) {
	t.Helper()
	started := time.Now()
	var tp tape
	rec := tp.record(t, c.base)
	truth := c.scan(t, rec.URL)
	if !truth.complete || truth.err != nil {
		t.Fatalf("the recorded scan of %s is not a complete answer to mutate: %d read, codes %v, %v", c.upstream, len(truth.ids), truth.codes, truth.err)
	}
	rep := tp.replay(t)
	if again := c.scan(t, rep.URL); !again.complete || again.matched != truth.matched || !slices.Equal(again.ids, truth.ids) {
		t.Fatalf("the unmutated replay differs from the recorded scan: %d read, %d matched, codes %v, %v; recorded %d matched", len(again.ids), again.matched, again.codes, again.err, truth.matched)
	}
	b, _ := os.ReadFile(filepath.Join("testdata", c.config))
	cfg, _ := configpkg.Parse([]byte(strings.ReplaceAll(string(b), "{{BASE_URL}}", rep.URL)))
	rt, err := upstream.Initialize(t.Context(), cfg, upstream.Options{Getenv: func(k string) string { return c.env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	r := rt.Resources[c.resource]
	idPath := r.FieldPath(r.Config.IDField)
	// The pages: the answers that hold the items, in the order read.
	var pages []string
	for _, key := range tp.order {
		ex := tp.byKey[key]
		if ex.status/100 != 2 {
			continue
		}
		doc, err := jsonvalue.Decode(ex.body)
		if err != nil {
			continue
		}
		items := declaredSignals(r)[0].path
		if _, ok := jsonvalue.Get(doc, items); ok {
			pages = append(pages, key)
		}
	}
	if len(pages) == 0 {
		t.Fatalf("%s: no recorded answer holds the items", c.upstream)
	}
	chosen := []int{0}
	if len(pages) > 2 {
		chosen = append(chosen, len(pages)/2)
	}
	if len(pages) > 1 {
		chosen = append(chosen, len(pages)-1)
	}
	row := evidenceRow{upstream: c.upstream, weakened: map[string]int{}}
	for _, sig := range declaredSignals(r) {
		kinds := bodyMutations
		switch {
		case sig.header:
			kinds = headerMutations
		case sig.attr:
			kinds = attrMutations
		case sig.object:
			kinds = objectMutations
		case sig.items:
			kinds = append(slices.Clone(bodyMutations), itemMutations...)
		}
		for _, pi := range chosen {
			page := pages[pi]
			for _, kind := range kinds {
				ex := *tp.byKey[page]
				switch {
				case sig.header:
					h, ok := mutateHeader(ex.header, sig.path, kind)
					if !ok {
						continue
					}
					ex.header = h
				case sig.attr:
					body, ok := mutateAttr(ex.body, declaredSignals(r)[0].path, sig.path, kind)
					if !ok {
						continue
					}
					ex.body = body
				case sig.object:
					body, ok := mutateObject(ex.body, sig.path, kind)
					if !ok {
						continue
					}
					ex.body = body
				default:
					body, ok := mutateBody(ex.body, sig.path, kind, idPath)
					if !ok {
						continue
					}
					ex.body = body
				}
				tp.mu.Lock()
				tp.mutate = func(key string, e exchange) exchange {
					if key == page {
						return ex
					}
					return e
				}
				tp.mu.Unlock()
				got := c.scan(t, rep.URL)
				row.mutations++
				name := fmt.Sprintf("%s %s on page %d of %d", sig.path, kind, pi+1, len(pages))
				if sig.attr {
					name = "an item's " + name
				}
				switch {
				case got.complete && got.matched == truth.matched && slices.Equal(got.ids, truth.ids):
					row.same++
				case got.complete:
					row.violations = append(row.violations, fmt.Sprintf("%s: complete with %d matched (truth %d)", name, got.matched, truth.matched))
				case len(got.codes) == 0:
					row.violations = append(row.violations, fmt.Sprintf("%s: weakened without a stable code (%v)", name, got.err))
				default:
					for _, code := range got.codes {
						row.weakened[code]++
					}
				}
			}
		}
	}
	tp.mu.Lock()
	tp.mutate = nil
	tp.mu.Unlock()
	for _, v := range row.violations {
		t.Errorf("%s: %s", c.upstream, v)
	}
	line := row.String()
	t.Logf("evidence mutation, %s (%d pages, %d matched): %s in %.1fs", c.upstream, len(pages), truth.matched, line, time.Since(started).Seconds())
	if path := os.Getenv(evidenceReportEnv); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "| %s | %s | %d | %d | %s |\n", c.upstream, c.resource, len(pages), truth.matched, line)
			f.Close()
		}
	}
}

func (r evidenceRow) String() string {
	codes := make([]string, 0, len(r.weakened))
	for code, n := range r.weakened {
		codes = append(codes, fmt.Sprintf("%s %d", code, n))
	}
	sort.Strings(codes)
	return fmt.Sprintf("%d mutations: %d same claim, %d weakened (%s), %d stronger than the truth", r.mutations, r.same, r.mutations-r.same-len(r.violations), strings.Join(codes, ", "), len(r.violations))
}
