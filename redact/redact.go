// Package redact removes configured secrets (credentials) from every byte
// that leaves airlock: tool results, stored documents, log records, audit
// lines. It finds a secret in the encodings upstreams echo it in, and in
// containers nested in each other (a base64 cursor of a query that holds
// it percent-escaped).
//
// It must never keep, log or return a secret it was given, and never
// reshape text that holds no trace of one.
package redact

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Redacted replaces a secret wherever a Redactor finds one.
const Redacted = "[redacted]"

// minSecret is the shortest secret a Redactor removes: a shorter one would
// match ordinary text everywhere, and is no secret.
const minSecret = 4

// minAnchor is the shortest base64 fragment taken as evidence of a secret.
const minAnchor = 8

// Redactor removes configured secrets (credentials) from bytes and strings
// before they are stored, logged, returned or exported. It finds each secret
// in the encodings upstreams echo it in: raw, after a Bearer or Basic
// prefix, JSON-escaped, URL-encoded, base64 (standard and URL alphabets,
// with or without padding, at any alignment inside a longer encoded value)
// and split at its punctuation (cnry.3f9a, cnry 3f9a, cnry%2D3f9a,
// cnry3f9a); and inside containers nested two deep: base64 of a text that
// holds it JSON- or URL-encoded (a cursor that is base64 of the request's
// query), base64 of a text that holds such base64, each base64 run as a
// query or a JSON string escapes it (%2B, %2F, \/). Input without a trace
// of a secret is returned as is, without copying; the search for the
// hundred or so forms of each secret is one pass over the input, whatever
// their number.
//
// The zero value and nil redact nothing. It is safe for concurrent use;
// Add may be called while other goroutines redact.
type Redactor struct {
	mu  sync.Mutex // serializes Add
	set atomic.Pointer[redactSet]
}

// redactSet is an immutable compiled set of secrets.
type redactSet struct {
	secrets []*compiled
	// long finds every literal and anchor of at least minLong bytes (every
	// encoded form of a secret, see encodedForms) in one pass; literal[i]
	// says whether its i-th pattern is a literal (else an anchor only).
	long    *table
	literal []bool
	// anchors are the short texts any other form holds (a secret's
	// alphanumeric run, a short secret's literals): a text holding none of
	// them and nothing long finds is returned untouched.
	anchors [][]byte
	// byFirst indexes the anchors by their first byte; minAnchor is the
	// shortest one's length.
	byFirst   [256][]string
	minAnchor int
	// short are the literals under minLong bytes.
	short [][]byte
	// splits match a secret's alphanumeric runs with punctuation (or an
	// escape of it, or nothing) between them.
	splits []*regexp.Regexp
}

// compiled is what one secret brings to a set, worked out once when it is
// added (a process adds every OAuth access token it obtains).
type compiled struct {
	secret string
	// literals are its forms to remove; every form holds one of its
	// anchors.
	literals, anchors []string
	// split matches its runs apart (nil for a secret of one run).
	split *regexp.Regexp
}

// New returns a redactor for the secrets given (more can be added).
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add adds secrets. Secrets shorter than four bytes are ignored.
func (r *Redactor) Add(secrets ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []*compiled
	var names []string
	if cur := r.set.Load(); cur != nil {
		all = append(all, cur.secrets...)
	}
	for _, c := range all {
		names = append(names, c.secret)
	}
	var added []string
	for _, s := range secrets {
		if len(s) < minSecret || containsString(names, s) {
			continue
		}
		names = append(names, s)
		added = append(added, s)
	}
	if len(added) == 0 {
		return
	}
	for _, s := range added {
		all = append(all, compileSecret(s, holdsAnother(s, names)))
	}
	r.set.Store(buildSet(all))
}

// Empty reports whether the redactor has no secret to remove.
func (r *Redactor) Empty() bool {
	return r == nil || r.set.Load() == nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compileSecret works out s's literals, anchors and split pattern;
// shallow says that s holds another secret, which finds its encodings.
func compileSecret(s string, shallow bool) *compiled {
	c := &compiled{secret: s}
	forms := secretForms(s)
	runs := alnumRuns(s)
	if a := anchorRun(runs); a != "" {
		c.anchors = append(c.anchors, a)
	} else {
		// A secret of short runs only: every literal form is its own
		// anchor.
		c.anchors = append(c.anchors, forms...)
	}
	encoded := encodedForms(s, forms, shallow)
	c.anchors = append(c.anchors, encoded...)
	for _, f := range append(forms, encoded...) {
		// A raw quote would match JSON's structure, never a value (inside
		// a string it is escaped, and the escaped form is a literal too).
		if !strings.Contains(f, `"`) {
			c.literals = append(c.literals, f)
		}
	}
	if len(runs) > 1 {
		c.split = splitPattern(runs)
	}
	return c
}

// buildSet puts compiled secrets together: the long literals and anchors
// in one table, the short ones in lists.
func buildSet(secrets []*compiled) *redactSet {
	set := &redactSet{secrets: secrets}
	long := map[string]bool{} // a long pattern: literal or anchor only
	short, anchors := map[string]bool{}, map[string]bool{}
	for _, c := range secrets {
		for _, f := range c.literals {
			if len(f) >= minLong {
				long[f] = true
			} else {
				short[f] = true
			}
		}
		for _, a := range c.anchors {
			if len(a) < minLong {
				anchors[a] = true
			} else if !long[a] {
				long[a] = false
			}
		}
		if c.split != nil {
			set.splits = append(set.splits, c.split)
		}
	}
	var pats [][]byte
	for _, p := range sortedKeys(long) {
		pats = append(pats, []byte(p))
		set.literal = append(set.literal, long[p])
	}
	set.long = newTable(pats)
	for _, f := range sortedKeys(short) {
		set.short = append(set.short, []byte(f))
	}
	for _, a := range sortedKeys(anchors) {
		set.anchors = append(set.anchors, []byte(a))
		set.byFirst[a[0]] = append(set.byFirst[a[0]], a)
		if set.minAnchor == 0 || len(a) < set.minAnchor {
			set.minAnchor = len(a)
		}
	}
	return set
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// holdsAnother reports whether s holds another of the secrets ("Bearer
// x" holds x) long enough to be found at every depth: every encoding of a
// text holding s holds that one's, which finds it.
func holdsAnother(s string, secrets []string) bool {
	for _, o := range secrets {
		if o != s && len(o) >= minLong && len(o) < len(s) && strings.Contains(s, o) {
			return true
		}
	}
	return false
}

// anchorRun picks the run every form of a secret keeps verbatim that is
// least likely in ordinary text: the longest with a digit, else the
// longest; "" when no run is long enough.
func anchorRun(runs []string) string {
	best, bestScore := "", 0
	for _, run := range runs {
		if len(run) < minSecret {
			continue
		}
		score := len(run)
		if strings.ContainsAny(run, "0123456789") {
			score += 1000
		}
		if score > bestScore {
			best, bestScore = run, score
		}
	}
	return best
}

// secretForms are a secret's literal encodings: raw, JSON-escaped (with
// and without HTML escaping, with / escaped as PHP does, as .NET's
// default encoder does, every punctuation byte as a \u escape in lower
// and upper case hex) and URL-encoded (query and path escaping, every
// reserved byte percent-encoded in upper and lower case hex).
func secretForms(s string) []string {
	forms := []string{s}
	add := func(f string) {
		if f != "" && !containsString(forms, f) {
			forms = append(forms, f)
		}
	}
	if b, err := json.Marshal(s); err == nil {
		add(string(b[1 : len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) == nil {
		b := bytes.TrimSpace(buf.Bytes())
		add(string(b[1 : len(b)-1]))
		add(strings.ReplaceAll(string(b[1:len(b)-1]), "/", `\/`))
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	add(percentEncode(s, "%", "0123456789ABCDEF"))
	add(percentEncode(s, "%", "0123456789abcdef"))
	add(dotnetEscape.Replace(s))
	add(percentEncode(s, `\u00`, "0123456789ABCDEF"))
	add(percentEncode(s, `\u00`, "0123456789abcdef"))
	return forms
}

// dotnetEscape escapes what .NET's default JSON encoder escapes besides
// quotes, backslashes and control bytes.
var dotnetEscape = strings.NewReplacer("+", `\u002B`, "<", `\u003C`, ">", `\u003E`, "&", `\u0026`, "'", `\u0027`, "`", `\u0060`)

// maxNesting is how many base64 layers, one inside the other, a secret is
// looked for under: a text holding it (in any of its forms) encoded, and
// a text holding that encoded again (a cursor inside a cursor). Each layer
// multiplies the forms by about three.
const maxNesting = 2

// encodedForms are the base64 fragments (see base64Fragments) of every
// text that holds s in one of its forms, under up to maxNesting layers of
// base64, each as a URL or JSON document would escape it (see
// escapedFragment). A secret that holds another is found through that
// one's: only its raw form's first layer is listed (shallow).
func encodedForms(s string, forms []string, shallow bool) []string {
	layer, depth := forms, maxNesting
	if shallow {
		layer, depth = []string{s}, 1
	}
	seen := map[string]bool{}
	var out []string
	for range depth {
		var next []string
		for _, t := range layer {
			for _, frag := range base64Fragments(t) {
				for _, f := range escapedFragment(frag) {
					if !seen[f] {
						seen[f] = true
						next = append(next, f)
					}
				}
			}
		}
		out = append(out, next...)
		layer = next
	}
	return out
}

// escapedFragment is a base64 fragment as it appears inside a query (+
// and / percent-encoded, in upper or lower case hex), a path (/ alone) or
// a JSON string that escapes / (\/). Of ASCII text, only the bytes >, ?
// and ~ encode to + or /: most fragments have one form.
func escapedFragment(f string) []string {
	if !strings.ContainsAny(f, "+/") {
		return []string{f}
	}
	return []string{f,
		strings.NewReplacer("+", "%2B", "/", "%2F").Replace(f),
		strings.NewReplacer("+", "%2b", "/", "%2f").Replace(f),
		strings.ReplaceAll(f, "/", "%2F"),
		strings.ReplaceAll(f, "/", `\/`),
	}
}

// percentEncode encodes every byte but letters and digits as prefix and
// two hex digits (%2D, \u002d).
func percentEncode(s, prefix, hex string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteString(prefix)
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// base64Fragments are the parts of the base64 encodings of any text that
// contains s which depend on s alone: for each of the three alignments s
// can have in the encoded text, the groups of four characters that encode
// three bytes of s. They are found whatever surrounds s ("Basic " +
// base64("user:" + s), a JSON document holding s, ...).
func base64Fragments(s string) []string {
	var out []string
	for k := 0; k < 3; k++ {
		in := append(bytes.Repeat([]byte{0}, k), s...)
		first := (k + 2) / 3     // the first group made of s bytes only
		last := (k + len(s)) / 3 // the groups before this one end inside s
		if (last-first)*4 < minAnchor {
			continue // too short to be evidence
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			full := enc.EncodeToString(in)
			frag := full[first*4 : last*4]
			if !containsString(out, frag) {
				out = append(out, frag)
			}
		}
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// alnumRuns splits s into its maximal runs of letters and digits.
func alnumRuns(s string) []string {
	var runs []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isAlnum(s[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			runs = append(runs, s[start:i])
			start = -1
		}
	}
	return runs
}

// splitPattern matches the runs in order with up to four separators
// between them: a punctuation or space byte (not a quote or a backslash,
// which would cut into JSON's structure or an escape), a JSON escape, or a
// %XX escape.
func splitPattern(runs []string) *regexp.Regexp {
	const sep = `(?:[^A-Za-z0-9"\\]|\\["\\/bfnrt]|\\\\?u00[0-9A-Fa-f]{2}|%[0-9A-Fa-f]{2}){0,4}`
	quoted := make([]string, len(runs))
	for i, r := range runs {
		quoted[i] = regexp.QuoteMeta(r)
	}
	return regexp.MustCompile(strings.Join(quoted, sep))
}

// Bytes returns b without any secret. When b holds none, b itself is
// returned. A JSON document stays valid: a secret inside a string becomes
// [redacted] (never cutting an escape in two); one outside a string (a
// number, in a document that is not JSON: a bare word) becomes the whole
// token replaced by "[redacted]".
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	set := r.set.Load()
	if set == nil || !set.anyAnchor(b) {
		return b
	}
	out := set.redact(b)
	// A secret that the marker completes (]x with x the rest of it) is
	// removed by a second pass.
	if len(out) != len(b) && set.anyAnchor(out) {
		out = set.redact(out)
	}
	return out
}

// span is a byte range [from, to) to replace.
type span struct{ from, to int }

func (s *redactSet) redact(b []byte) []byte {
	var spans []span
	tableScan(s.long, b, func(start, i int) bool {
		if s.literal[i] {
			spans = append(spans, span{start, start + len(s.long.pats[i])})
		}
		return true
	})
	for _, lit := range s.short {
		for i := 0; i < len(b); {
			j := bytes.Index(b[i:], lit)
			if j < 0 {
				break
			}
			spans = append(spans, span{i + j, i + j + len(lit)})
			i += j + len(lit)
		}
	}
	for _, re := range s.splits {
		for _, m := range re.FindAllIndex(b, -1) {
			spans = append(spans, span{m[0], m[1]})
		}
	}
	if len(spans) == 0 {
		return b
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	inString := stringStates(b, spans)
	for i := range spans {
		spans[i] = widen(b, spans[i], inString[i])
	}
	type marked struct {
		span
		inString bool
	}
	var merged []marked
	for i, sp := range spans {
		if n := len(merged); n > 0 && sp.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, sp.to)
			continue
		}
		merged = append(merged, marked{sp, inString[i]})
	}
	out := make([]byte, 0, len(b))
	at := 0
	for _, sp := range merged {
		out = append(out, b[at:sp.from]...)
		if sp.inString {
			out = append(out, Redacted...)
		} else {
			out = append(out, '"')
			out = append(out, Redacted...)
			out = append(out, '"')
		}
		at = sp.to
	}
	return append(out, b[at:]...)
}

// stringStates reads b as JSON text and reports, for each span (sorted by
// start), whether it starts inside a string. On text that is not JSON the
// answer is still one of the two, and either replacement leaves text
// without the secret.
func stringStates(b []byte, spans []span) []bool {
	out := make([]bool, len(spans))
	in := false
	k := 0
	for i := 0; i < len(b) && k < len(spans); i++ {
		for k < len(spans) && spans[k].from <= i {
			out[k] = in
			k++
		}
		switch {
		case b[i] == '"':
			in = !in
		case in && b[i] == '\\':
			i++ // the escaped byte cannot end the string
		}
	}
	for ; k < len(spans); k++ {
		out[k] = in
	}
	return out
}

// escapeAt returns the escape [start, end) that holds position p inside a
// JSON string, if any: a backslash, not itself escaped, among the five
// bytes before p.
func escapeAt(b []byte, p int) (int, int, bool) {
	for q := p - 1; q >= 0 && q >= p-5; q-- {
		if b[q] != '\\' {
			continue
		}
		run := 0
		for r := q - 1; r >= 0 && b[r] == '\\'; r-- {
			run++
		}
		if run%2 == 1 {
			continue // an escaped backslash: the escape starts before it
		}
		n := 2
		if q+1 < len(b) && b[q+1] == 'u' {
			n = 6
		}
		if p < q+n {
			return q, min(q+n, len(b)), true
		}
		return 0, 0, false
	}
	return 0, 0, false
}

// isToken reports a byte of a bare JSON token (number, literal) or word.
func isToken(c byte) bool {
	return isAlnum(c) || c == '.' || c == '+' || c == '-' || c == '_'
}

// widen grows a span so that replacing it keeps the text's structure: to
// whole escapes inside a string, to the whole token outside one.
func widen(b []byte, sp span, inString bool) span {
	if inString {
		if from, _, ok := escapeAt(b, sp.from); ok {
			sp.from = from
		}
		if _, to, ok := escapeAt(b, sp.to); ok {
			sp.to = max(sp.to, to)
		}
		return sp
	}
	for sp.from > 0 && isToken(b[sp.from-1]) {
		sp.from--
	}
	for sp.to < len(b) && isToken(b[sp.to]) {
		sp.to++
	}
	return sp
}

// anyAnchor reports whether b holds a long literal or an anchor.
func (s *redactSet) anyAnchor(b []byte) bool {
	if tableAny(s.long, b) {
		return true
	}
	if len(b) < s.minAnchor || len(s.anchors) == 0 {
		return false
	}
	if len(b) >= shortText {
		for _, a := range s.anchors {
			if bytes.Contains(b, a) {
				return true
			}
		}
		return false
	}
	return anyShort(s, b)
}

// anyShort reports, in one pass, whether b holds an anchor: a table lookup
// per byte and a comparison only where an anchor could start. (Longer
// texts are searched anchor by anchor, with vectorized searches.)
func anyShort[T ~string | ~[]byte](s *redactSet, b T) bool {
	for i := 0; i+s.minAnchor <= len(b); i++ {
		for _, a := range s.byFirst[b[i]] {
			if len(b)-i >= len(a) && string(b[i:i+len(a)]) == a {
				return true
			}
		}
	}
	return false
}

// shortText is the length under which one pass beats a search per anchor.
const shortText = 512

// anyAnchorString is anyAnchor for a string.
func (s *redactSet) anyAnchorString(t string) bool {
	if tableAny(s.long, t) {
		return true
	}
	if len(t) < s.minAnchor || len(s.anchors) == 0 {
		return false
	}
	if len(t) >= shortText {
		for _, a := range s.byFirst {
			for _, x := range a {
				if strings.Contains(t, x) {
					return true
				}
			}
		}
		return false
	}
	return anyShort(s, t)
}

// String returns s without any secret.
func (r *Redactor) String(s string) string {
	if !r.MayContain(s) {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// MayContain reports whether s might hold a secret: false means it holds
// none, true that String may change it. It is the cheap first step of
// String, for callers that must copy a structure before redacting it.
func (r *Redactor) MayContain(s string) bool {
	if r == nil {
		return false
	}
	set := r.set.Load()
	return set != nil && set.anyAnchorString(s)
}

// Contains reports whether b holds a secret in a form Bytes removes.
func (r *Redactor) Contains(b []byte) bool {
	out := r.Bytes(b)
	return len(out) != len(b) || !bytes.Equal(out, b)
}

// Writer returns a writer that redacts each Write before passing it on. A
// secret split across two Writes is not seen: use it under writers that
// write whole records (slog handlers, json.Encoder).
func (r *Redactor) Writer(w io.Writer) io.Writer {
	return &redactWriter{r: r, w: w}
}

type redactWriter struct {
	r *Redactor
	w io.Writer
}

func (rw *redactWriter) Write(p []byte) (int, error) {
	if _, err := rw.w.Write(rw.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Handler returns a slog handler that redacts every record's message and
// attributes (values of any kind, by their text) before h sees them.
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	if rh, ok := h.(*redactHandler); ok && rh.r == r {
		return h
	}
	return &redactHandler{r: r, h: h}
}

type redactHandler struct {
	r *Redactor
	h slog.Handler
}

func (rh *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return rh.h.Enabled(ctx, l) }

func (rh *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	if rh.r.Empty() {
		return rh.h.Handle(ctx, rec)
	}
	out := slog.NewRecord(rec.Time, rec.Level, rh.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rh.attr(a))
		return true
	})
	return rh.h.Handle(ctx, out)
}

func (rh *redactHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, rh.r.String(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]any, len(attrs))
		for i, g := range attrs {
			out[i] = rh.attr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		text := fmt.Sprint(v.Any())
		if red := rh.r.String(text); red != text {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (rh *redactHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = rh.attr(a)
	}
	return &redactHandler{r: rh.r, h: rh.h.WithAttrs(out)}
}

func (rh *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{r: rh.r, h: rh.h.WithGroup(name)}
}
