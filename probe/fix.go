package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/draft"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Fix (airlock probe --fix) turns a draft's TODOs and wrong assumptions
// into what the live API proves: a dialect and its end signal, the cursor
// parameter, the total, the page size the API accepts, filter forms, the
// id field, element types, timestamp layouts and null stand-ins. It only
// reads from the API, as probe does. Each value it writes carries a
// one-line comment of its evidence; what it cannot prove stays a TODO (or
// as it was). The file is edited in place, line by line where it can be,
// so that the user's comments and layout survive.

// FixOptions bound a fix.
type FixOptions struct {
	// Resources fixes only these resources (all when empty).
	Resources []string
	// MaxRequests is the request budget of each probe run (default 100).
	MaxRequests int
	// Getenv reads the credential's environment (nil: none).
	Getenv func(string) string
	// Logger receives the upstream client's logs (nil: discarded).
	Logger *slog.Logger
}

// Fixed is one value Fix wrote, with its evidence.
type Fixed struct {
	Resource string `json:"resource"`
	Key      string `json:"key"`
	Value    string `json:"value"`
	Evidence string `json:"evidence"`
}

// FixResult is what a fix proved, wrote and left.
type FixResult struct {
	// YAML is the fixed file.
	YAML []byte
	// Fixed lists the values written.
	Fixed []Fixed
	// Left names each decision left to a person, and why.
	Left []string
	// Reports are the probes of the fixed resources, as they stand.
	Reports []*Report
}

// maxCandidates bounds the dialects Fix tries per resource, and
// maxTrialRequests the requests they may spend together, in request
// budgets (FixOptions.MaxRequests).
const (
	maxCandidates    = 14
	maxTrialRequests = 4
)

// cursorParamGuesses are the query parameters a next cursor is usually
// sent back in, tried in this order when nothing says which.
var cursorParamGuesses = []string{"cursor", "page_token", "pageToken", "next_cursor", "starting_after", "after", "next_page_token", "nextPageToken", "page", "offset", "start_cursor", "continuation_token", "token", "marker", "next"}

// offsetParamGuesses are the query parameters an offset is usually sent
// in (CouchDB's skip beside an answer that echoes it as offset).
var offsetParamGuesses = []string{"offset", "skip", "start", "_start", "$skip", "from"}

// paramGuesses are the values tried for a pagination key left a TODO
// because only the live API can settle it: the usual names of a cursor or
// offset parameter, and for a page size parameter APIs read differently
// ($top) the parameter itself, then none (the server sizes its pages).
var paramGuesses = map[string][]string{
	"cursor_param":    cursorParamGuesses,
	"offset_param":    offsetParamGuesses,
	"page_size_param": append(draft.AmbiguousSizeParams(), config.NoPageSize),
}

// guessable is the one TODO key of an inferred pagination whose values
// can be tried, and those values; -1 when there is none (or more TODOs).
func guessable(kvs [][2]string) (int, []string) {
	at := -1
	for i, kv := range kvs {
		if !config.IsTodo(kv[1]) {
			continue
		}
		if at >= 0 || paramGuesses[kv[0]] == nil {
			return -1, nil
		}
		at = i
	}
	if at < 0 {
		return -1, nil
	}
	return at, paramGuesses[kvs[at][0]]
}

// Fix resolves a configuration file against the live API (see the
// comment above). It fails only when the file cannot be read or the API
// cannot be reached at all (the upstream's base URL or credential is
// still a TODO).
func Fix(ctx context.Context, file []byte, opts FixOptions) (*FixResult, error) {
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = DefaultRequests
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return nil, fmt.Errorf("read the configuration: %w", err)
	}
	root := mapping(&doc)
	if root == nil {
		return nil, errors.New("read the configuration: it is not a mapping")
	}
	for _, up := range pairs(get(root, "upstreams")) {
		if bu := get(up.v, "base_url"); bu != nil && config.IsTodo(bu.Value) {
			return nil, fmt.Errorf("line %d: upstreams.%s.base_url is still a TODO: probe --fix reads the live API, so it needs the API's address first", bu.Line, up.k.Value)
		}
		if todos := todosUnder(get(up.v, "credential")); len(todos) > 0 {
			return nil, fmt.Errorf("line %d: upstreams.%s.credential is still a TODO: probe --fix sends the credential the API needs, so it needs it first", todos[0].Line, up.k.Value)
		}
	}
	f := &fixer{opts: opts, doc: &doc, root: root, lines: strings.SplitAfter(string(file), "\n"), patched: map[*yaml.Node]string{}}
	out := &FixResult{}
	for _, res := range pairs(get(root, "resources")) {
		name := res.k.Value
		if len(opts.Resources) > 0 && !slices.Contains(opts.Resources, name) {
			continue
		}
		rep := f.fixResource(ctx, name, res.k, res.v, out)
		if rep != nil {
			out.Reports = append(out.Reports, rep)
		}
	}
	b, err := f.render()
	if err != nil {
		return nil, err
	}
	out.YAML = b
	for _, t := range config.FindTodos(b) {
		out.Left = append(out.Left, fmt.Sprintf("line %d: %s: %s", t.Line, t.Path, strings.TrimPrefix(t.Msg, "unresolved TODO left by airlock init: ")))
	}
	return out, nil
}

type fixer struct {
	opts  FixOptions
	doc   *yaml.Node
	root  *yaml.Node
	lines []string
	// patched maps a key node whose line is rewritten to the comment its
	// line ends with.
	patched map[*yaml.Node]string
}

// fixResource fixes one resource and returns its final probe (nil when it
// could not be probed at all).
func (f *fixer) fixResource(ctx context.Context, name string, key, res *yaml.Node, out *FixResult) *Report {
	list := get(res, "list")
	if p := get(list, "path"); p == nil || config.IsTodo(p.Value) {
		return nil // a parent's value only a person knows: the TODO stays
	}
	if m := get(list, "method"); m != nil && strings.EqualFold(m.Value, "POST") || get(list, "graphql") != nil {
		if len(todosUnder(get(res, "pagination"))) > 0 || len(todosUnder(list)) > 0 {
			// POST and GraphQL lists are checked, not drafted, by fix.
			return f.verify(ctx, name, res, out)
		}
	}
	first, u, err := f.firstAnswer(ctx, name, res)
	if err != nil {
		if len(todosUnder(res)) == 0 {
			// The list as declared may still answer (a page size the
			// plain request lacks): probe it as it stands.
			return f.verify(ctx, name, res, out)
		}
		out.Left = append(out.Left, fmt.Sprintf("resources.%s: the first page could not be read: %v", name, err))
		return nil
	}
	inf, _ := draft.InferFromAnswer(u, first.Header, first.doc)
	f.fixItems(name, res, inf, first, out)
	f.fixIDField(name, res, first, out)
	pg := get(res, "pagination")
	candidates := f.candidates(res, inf, first.doc)
	var chosen *candidate
	var chosenRep *Report
	spent := 0
	for _, c := range candidates {
		if spent >= maxTrialRequests*f.opts.MaxRequests {
			break // enough asked of the API for one resource
		}
		trial := cloneNode(res)
		setNode(trial, "pagination", c.node)
		for _, p := range c.params {
			setParam(trial, p[0], p[1])
		}
		rep, err := f.probe(ctx, name, trial)
		if err != nil {
			continue
		}
		spent += rep.Requests
		if end := checkNamed(rep, "pagination.end"); end.Status == OK && !wrongIn(rep, "list.", "pagination.end", "pagination.count", "contract") {
			chosen, chosenRep = &c, rep
			break
		}
	}
	switch {
	case chosen == nil && len(todosUnder(pg)) > 0:
		out.Left = append(out.Left, fmt.Sprintf("resources.%s.pagination: no dialect tried (%d) reached a proven end on the live API", name, len(candidates)))
		return nil
	case chosen == nil:
		// The declared dialect stands as written: probe says why.
		return f.verify(ctx, name, res, out)
	}
	if !chosen.same {
		setNode(res, "pagination", chosen.node)
		for _, p := range chosen.params {
			setParam(res, p[0], p[1])
			f.patch(get(res, "list"), "params", "the first page is named, as the answer's own paging does")
		}
		ev := "a walk " + strings.TrimPrefix(checkNamed(chosenRep, "pagination.end").Evidence, "a walk ")
		f.patchKey(res, "pagination", ev)
		out.Fixed = append(out.Fixed, Fixed{Resource: name, Key: "pagination", Value: flow(chosen.node), Evidence: ev})
	}
	f.applyReport(name, res, chosenRep, out)
	return f.verify(ctx, name, res, out)
}

// verify probes the resource as it now stands, applies what the report
// proves, and returns the report.
func (f *fixer) verify(ctx context.Context, name string, res *yaml.Node, out *FixResult) *Report {
	if len(todosUnder(res)) > 0 {
		return nil
	}
	rep, err := f.probe(ctx, name, res)
	if err != nil {
		out.Left = append(out.Left, fmt.Sprintf("resources.%s: %v", name, err))
		return nil
	}
	if f.applyReport(name, res, rep, out) {
		if again, err := f.probe(ctx, name, res); err == nil {
			rep = again
		}
	}
	return rep
}

// answer is a list's first page, read without paging parameters.
type answer struct {
	Header http.Header
	doc    any
}

// firstAnswer reads the list's first page as the configuration asks for
// it, without any paging parameter.
func (f *fixer) firstAnswer(ctx context.Context, name string, res *yaml.Node) (*answer, *url.URL, error) {
	trial := cloneNode(res)
	// A resource the runtime accepts whatever the TODOs: the request is
	// built from list.path and list.params alone.
	setNode(trial, "pagination", flowMap([][2]string{{"dialect", "link"}}))
	if v := get(get(trial, "list"), "items"); v == nil || config.IsTodo(v.Value) {
		setNode(get(trial, "list"), "items", scalar("."))
	}
	if v := get(trial, "id_field"); v == nil || config.IsTodo(v.Value) {
		setNode(trial, "id_field", scalar("id"))
		setNode(trial, "fields", flowMap([][2]string{{"id", "{type: string}"}}))
	}
	rt, err := f.runtime(name, trial, false)
	if err != nil {
		return nil, nil, err
	}
	r := rt.Resources[name]
	q := url.Values{}
	for k, v := range r.Config.List.Params {
		q.Set(k, v)
	}
	u := r.Upstream.ResolveURL(nil, r.Config.List.Path, q)
	resp, err := r.Upstream.Do(ctx, transport.Request{Method: http.MethodGet, URL: u, RequestID: "airlock-probe-fix", Idempotent: true, Header: http.Header{"Accept": {"application/json"}}})
	if err != nil {
		return nil, nil, errors.New(describeErr(err))
	}
	d, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return nil, nil, err
	}
	return &answer{Header: resp.Header, doc: d}, u, nil
}

// candidate is a pagination to try.
type candidate struct {
	node   *yaml.Node
	params [][2]string
	same   bool // the file's own, unchanged
}

// candidates are the paginations to try, best first: the file's own when
// it holds no TODO, else what the live answer shows completed by what the
// file already says (its page size parameter, its cursor parameter).
func (f *fixer) candidates(res *yaml.Node, inf *draft.Inferred, doc any) []candidate {
	pg := get(res, "pagination")
	if pg != nil && len(todosUnder(pg)) == 0 {
		return []candidate{{node: cloneNode(pg), same: true}}
	}
	declared := map[string]string{}
	for _, kv := range pairs(pg) {
		if !config.IsTodo(kv.v.Value) {
			declared[kv.k.Value] = flow(kv.v)
		}
	}
	var out []candidate
	add := func(kvs [][2]string, params [][2]string) {
		if len(out) < maxCandidates {
			out = append(out, candidate{node: flowMap(kvs), params: params})
		}
	}
	// The file's own dialect, its TODO members filled from the answer.
	if d := declared["dialect"]; d != "" {
		for _, fill := range fillTodos(pg, doc) {
			add(fill, nil)
		}
	}
	if inf != nil {
		kvs := mergeDeclared(inf.Pagination, declared)
		if i, guesses := guessable(kvs); i >= 0 {
			for _, guess := range guesses {
				c := slices.Clone(kvs)
				c[i][1] = quoteYAML(guess)
				add(c, inf.Params)
			}
		} else if todoFree(kvs) {
			add(kvs, inf.Params)
		}
	}
	return out
}

// fillTodos proposes values for the TODO members of a declared
// pagination: a next cursor is a string the answer holds under a name
// that says so; a cursor parameter is one of the usual names.
func fillTodos(pg *yaml.Node, doc any) [][][2]string {
	base := [][2]string{}
	var holes []int
	for _, kv := range pairs(pg) {
		if config.IsTodo(kv.v.Value) {
			holes = append(holes, len(base))
		}
		base = append(base, [2]string{kv.k.Value, flow(kv.v)})
	}
	if len(holes) != 1 {
		return nil
	}
	h := holes[0]
	var values []string
	switch base[h][0] {
	case "next_cursor":
		values = tokenPaths(doc)
	case "total":
		values = []string{"none"}
	default:
		values = paramGuesses[base[h][0]]
	}
	var out [][][2]string
	for _, v := range values {
		c := slices.Clone(base)
		c[h][1] = quoteYAML(v)
		out = append(out, c)
	}
	return out
}

var tokenKey = regexp.MustCompile(`(?i)(next|cursor|token|offset|continu|marker)`)

// tokenPaths are the answer's string members (two levels deep) whose
// name says they lead on: next_page.offset, meta.next_token.
func tokenPaths(doc any) []string {
	var out []string
	var walk func(v any, path string, depth int)
	walk = func(v any, path string, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 2 {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			p := strings.TrimPrefix(path+"."+k, ".")
			switch x := m[k].(type) {
			case string:
				if tokenKey.MatchString(p) && !strings.Contains(x, "://") {
					out = append(out, p)
				}
			case nil:
				if tokenKey.MatchString(p) {
					out = append(out, p)
				}
			case map[string]any:
				walk(x, p, depth+1)
			}
		}
	}
	walk(doc, "", 0)
	return out
}

// mergeDeclared completes an inferred pagination with what the file
// declares of the same dialect (its page size parameter and size).
func mergeDeclared(inferred [][2]string, declared map[string]string) [][2]string {
	out := slices.Clone(inferred)
	if declared["dialect"] != "" && declared["dialect"] != valueOf(out, "dialect") {
		// Another dialect: only the page size carries over.
		declared = map[string]string{"page_size_param": declared["page_size_param"], "page_size": declared["page_size"]}
	}
	for _, k := range []string{"page_size_param", "page_size", "cursor_param"} {
		v := declared[k]
		if v == "" {
			continue
		}
		if i := indexOf(out, k); i >= 0 {
			if config.IsTodo(out[i][1]) || k != "cursor_param" {
				out[i][1] = v
			}
		} else if k != "cursor_param" || valueOf(out, "dialect") == "cursor" {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

func indexOf(kvs [][2]string, k string) int {
	for i, kv := range kvs {
		if kv[0] == k {
			return i
		}
	}
	return -1
}

func valueOf(kvs [][2]string, k string) string {
	if i := indexOf(kvs, k); i >= 0 {
		return kvs[i][1]
	}
	return ""
}

func todoFree(kvs [][2]string) bool {
	for _, kv := range kvs {
		if config.IsTodo(kv[1]) {
			return false
		}
	}
	return true
}

// fixItems resolves a TODO items path from the answer.
func (f *fixer) fixItems(name string, res *yaml.Node, inf *draft.Inferred, first *answer, out *FixResult) {
	list := get(res, "list")
	it := get(list, "items")
	if it == nil || !config.IsTodo(it.Value) || inf == nil || config.IsTodo(inf.Items) {
		return
	}
	n := 0
	if v, ok := jsonvalue.Get(first.doc, inf.Items); ok {
		if l, ok := v.([]any); ok {
			n = len(l)
		}
	}
	setNode(list, "items", scalar(inf.Items))
	ev := fmt.Sprintf("the first page holds %d items at %s", n, inf.Items)
	f.patchKey(list, "items", ev)
	out.Fixed = append(out.Fixed, Fixed{Resource: name, Key: "list.items", Value: inf.Items, Evidence: ev})
}

// fixIDField resolves a TODO id field: the declared field present on
// every item of the first page with a distinct value on each, preferring
// the usual names.
func (f *fixer) fixIDField(name string, res *yaml.Node, first *answer, out *FixResult) {
	idn := get(res, "id_field")
	if idn == nil || !config.IsTodo(idn.Value) {
		return
	}
	items := itemsOf(res, first.doc)
	if len(items) == 0 {
		return
	}
	fields := pairs(get(res, "fields"))
	order := func(n string) int {
		for i, p := range []string{"id", "uid", "uuid", "key", "sid", "gid", "name", "slug"} {
			if n == p {
				return i
			}
		}
		if strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "id") {
			return 20
		}
		return 50
	}
	slices.SortStableFunc(fields, func(a, b kv) int { return order(a.k.Value) - order(b.k.Value) })
	for _, fd := range fields {
		if config.IsTodo(fd.k.Value) || get(fd.v, "sensitive") != nil && get(fd.v, "sensitive").Value == "true" {
			continue
		}
		path := fd.k.Value
		if p := get(fd.v, "path"); p != nil {
			path = p.Value
		}
		seen := map[string]bool{}
		ok := true
		for _, it := range items {
			id, has := jsonvalue.GetID(it, path)
			if !has || seen[id] {
				ok = false
				break
			}
			seen[id] = true
		}
		if ok {
			setNode(res, "id_field", scalar(fd.k.Value))
			ev := fmt.Sprintf("%s is present and distinct on all %d items of the first page", fd.k.Value, len(items))
			f.patchKey(res, "id_field", ev)
			out.Fixed = append(out.Fixed, Fixed{Resource: name, Key: "id_field", Value: fd.k.Value, Evidence: ev})
			return
		}
	}
	// An id nested in an object the items carry (Kubernetes'
	// metadata.uid): declared as a field of its own.
	for _, fd := range fields {
		if t := get(fd.v, "type"); t == nil || t.Value != "object" {
			continue
		}
		path := fd.k.Value
		if p := get(fd.v, "path"); p != nil {
			path = p.Value
		}
		for _, inner := range []string{"uid", "id", "uuid", "key", "name"} {
			seen := map[string]bool{}
			ok := true
			for _, it := range items {
				id, has := jsonvalue.GetID(it, path+"."+inner)
				if !has || seen[id] {
					ok = false
					break
				}
				seen[id] = true
			}
			if !ok {
				continue
			}
			fname := fd.k.Value + "_" + inner
			setNode(get(res, "fields"), fname, flowMap([][2]string{{"path", quoteYAML(path + "." + inner)}, {"type", "string"}}))
			ev := fmt.Sprintf("%s.%s is present and distinct on all %d items of the first page", path, inner, len(items))
			f.patchKey(get(res, "fields"), fname, ev)
			setNode(res, "id_field", scalar(fname))
			f.patchKey(res, "id_field", ev)
			out.Fixed = append(out.Fixed, Fixed{Resource: name, Key: "id_field", Value: fname, Evidence: ev})
			return
		}
	}
}

func itemsOf(res *yaml.Node, doc any) []map[string]any {
	path := "."
	if it := get(get(res, "list"), "items"); it != nil && !config.IsTodo(it.Value) {
		path = it.Value
	}
	v := doc
	if path != "." {
		v, _ = jsonvalue.Get(doc, path)
	}
	list, _ := v.([]any)
	var out []map[string]any
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

var (
	setSize   = regexp.MustCompile(`set pagination\.page_size: (\d+)`)
	setLayout = regexp.MustCompile(`declare layout: ("[^"]*"|\S+)`)
	setElems  = regexp.MustCompile(`declare elements: (\w+)`)
)

// applyReport writes what a probe report proves into the resource:
// the page size the API accepts, a total it does not send (total: none),
// element types, timestamp layouts, "" read as null, and filter forms
// the API does not read as declared (left to airlock). It reports whether
// it changed anything.
func (f *fixer) applyReport(name string, res *yaml.Node, rep *Report, out *FixResult) bool {
	changed := false
	fixed := func(key, value, ev string) {
		changed = true
		out.Fixed = append(out.Fixed, Fixed{Resource: name, Key: key, Value: value, Evidence: ev})
	}
	pg := get(res, "pagination")
	for _, c := range rep.Checks {
		switch {
		case c.Check == "pagination.page_size" && c.Status == Wrong:
			if m := setSize.FindStringSubmatch(c.Hint); m != nil {
				setNode(pg, "page_size", intNode(m[1]))
				f.patchKey(res, "pagination", c.Evidence)
				fixed("pagination.page_size", m[1], c.Evidence)
			}
		case (c.Check == "pagination.total" || c.Check == "pagination.count") && c.Status == Wrong:
			deleteKey(pg, "total_header")
			setNode(pg, "total", scalar("none"))
			f.patchKey(res, "pagination", c.Evidence)
			fixed("pagination.total", "none", c.Evidence)
		case c.Check == "pagination.total_header" && c.Status == Wrong:
			deleteKey(pg, "total_header")
			f.patchKey(res, "pagination", c.Evidence)
			fixed("pagination.total_header", "(removed)", c.Evidence)
		case strings.HasPrefix(c.Check, "fields.") && strings.HasSuffix(c.Check, ".elements") && c.Status != OK:
			if m := setElems.FindStringSubmatch(c.Hint); m != nil {
				fname := strings.TrimSuffix(strings.TrimPrefix(c.Check, "fields."), ".elements")
				if fd := get(get(res, "fields"), fname); fd != nil && fd.Kind == yaml.MappingNode {
					setNode(fd, "elements", scalar(m[1]))
					f.patchKey(get(res, "fields"), fname, c.Evidence)
					fixed(c.Check, m[1], c.Evidence)
				}
			} else if c.Status == Wrong {
				fname := strings.TrimSuffix(strings.TrimPrefix(c.Check, "fields."), ".elements")
				if fd := get(get(res, "fields"), fname); fd != nil {
					deleteKey(fd, "elements")
					f.patchKey(get(res, "fields"), fname, c.Evidence)
					fixed(c.Check, "(removed)", c.Evidence)
				}
			}
		case strings.HasPrefix(c.Check, "fields.") && strings.HasSuffix(c.Check, ".layout") && c.Status == Wrong:
			if m := setLayout.FindStringSubmatch(c.Hint); m != nil {
				fname := strings.TrimSuffix(strings.TrimPrefix(c.Check, "fields."), ".layout")
				if fd := get(get(res, "fields"), fname); fd != nil {
					l := strings.Trim(m[1], `"`)
					setNode(fd, "layout", scalar(l))
					f.patchKey(get(res, "fields"), fname, c.Evidence)
					fixed(c.Check, l, c.Evidence)
				}
			}
		case strings.HasPrefix(c.Check, "fields.") && strings.HasSuffix(c.Check, ".null_values") && c.Status == Wrong:
			fname := strings.TrimSuffix(strings.TrimPrefix(c.Check, "fields."), ".null_values")
			if fd := get(get(res, "fields"), fname); fd != nil {
				setNode(fd, "null_values", flowSeq(`""`))
				f.patchKey(get(res, "fields"), fname, c.Evidence)
				fixed(c.Check, `[""]`, c.Evidence)
			}
		case strings.HasPrefix(c.Check, "filters.") && c.Status == Wrong:
			parts := strings.SplitN(strings.TrimPrefix(c.Check, "filters."), ".", 2)
			fd := get(get(res, "filters"), parts[0])
			if fd == nil || len(parts) < 2 {
				continue
			}
			switch parts[1] {
			case "multi":
				deleteKey(fd, "multi")
				deleteKey(fd, "multi_param")
			case "separator":
				setNode(fd, "multi", scalar("comma"))
			case "null_param":
				deleteKey(fd, "null_param")
			case "is_null":
				deleteKey(fd, "is_null")
			case "literal":
				// The characters the API was shown to misread: values
				// holding them are then applied by airlock alone.
				lit := hintLiteral(c.Hint)
				if lit == nil {
					continue
				}
				setNode(fd, "literal", lit)
			default:
				// The API does not read the parameter as airlock does:
				// airlock applies the filter alone.
				for _, k := range []string{"param", "multi", "multi_param", "null_param", "is_null", "separator", "literal", "operator", "param_compares"} {
					deleteKey(fd, k)
				}
			}
			f.patchKey(get(res, "filters"), parts[0], c.Evidence)
			fixed(c.Check, flow(fd), c.Evidence)
		}
	}
	return changed
}

// probe checks a trial of the resource against the live API.
func (f *fixer) probe(ctx context.Context, name string, res *yaml.Node) (*Report, error) {
	rt, err := f.runtime(name, res, true)
	if err != nil {
		return nil, err
	}
	r := rt.Resources[name]
	var actions []*upstream.Action
	for _, an := range rt.ActionNames() {
		if a := rt.Actions[an]; a.Resource == r {
			actions = append(actions, a)
		}
	}
	rep := CheckAssumptions(ctx, r, Options{RequestID: "airlock-probe-fix", MaxRequests: f.opts.MaxRequests, Actions: actions})
	// Evidence is written into the file: nothing the API echoed of the
	// credential may reach it.
	for i := range rep.Checks {
		rep.Checks[i].Evidence = rt.Redactor.String(rep.Checks[i].Evidence)
		rep.Checks[i].Hint = rt.Redactor.String(rep.Checks[i].Hint)
	}
	return rep, nil
}

// runtime builds the runtime of one resource as the file would have it,
// with res in place of the file's, a placeholder environment, and only
// the actions on it that hold no TODO (withActions).
func (f *fixer) runtime(name string, res *yaml.Node, withActions bool) (*upstream.Runtime, error) {
	root := cloneNode(f.root)
	if env := get(root, "environment"); env == nil || config.IsTodo(env.Value) {
		setNode(root, "environment", scalar("probe-fix"))
	}
	resources := &yaml.Node{Kind: yaml.MappingNode}
	resources.Content = []*yaml.Node{scalar(name), res}
	setNode(root, "resources", resources)
	actions := &yaml.Node{Kind: yaml.MappingNode}
	for _, a := range pairs(get(root, "actions")) {
		if withActions && get(a.v, "resource") != nil && get(a.v, "resource").Value == name && len(todosUnder(a.v)) == 0 {
			actions.Content = append(actions.Content, a.k, a.v)
		}
	}
	if len(actions.Content) > 0 {
		setNode(root, "actions", actions)
	} else {
		deleteKey(root, "actions")
	}
	b, err := yaml.Marshal(root)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Parse(b)
	if err != nil {
		return nil, err
	}
	return upstream.Initialize(context.Background(), cfg, upstream.Options{Getenv: f.opts.Getenv, Logger: f.opts.Logger})
}

// wrongIn says whether a check under one of the prefixes is wrong.
func wrongIn(rep *Report, prefixes ...string) bool {
	for _, c := range rep.Checks {
		if c.Status != Wrong {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(c.Check, p) {
				return true
			}
		}
	}
	return false
}

func checkNamed(rep *Report, name string) Check {
	for _, c := range rep.Checks {
		if c.Check == name {
			return c
		}
	}
	return Check{}
}
