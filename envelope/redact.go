package envelope

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
// cnry3f9a). Input without a trace of a secret is returned as is, without
// copying.
//
// The zero value and nil redact nothing. It is safe for concurrent use;
// Add may be called while other goroutines redact.
type Redactor struct {
	mu  sync.Mutex // serializes Add
	set atomic.Pointer[redactSet]
}

// redactSet is an immutable compiled set of secrets.
type redactSet struct {
	secrets []string
	// anchors: a text holding any form of a secret holds one of them, so
	// a text holding none is returned untouched after a few searches.
	anchors [][]byte
	// byFirst indexes the anchors by their first byte; minAnchor is the
	// shortest one's length.
	byFirst   [256][]string
	minAnchor int
	// literals are the encoded forms, longest first.
	literals [][]byte
	// splits match a secret's alphanumeric runs with punctuation (or an
	// escape of it, or nothing) between them.
	splits []*regexp.Regexp
}

// NewRedactor returns a redactor for the secrets given (more can be added).
func NewRedactor(secrets ...string) *Redactor {
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
	var all []string
	if cur := r.set.Load(); cur != nil {
		all = append(all, cur.secrets...)
	}
	added := false
	for _, s := range secrets {
		if len(s) < minSecret || containsString(all, s) {
			continue
		}
		all = append(all, s)
		added = true
	}
	if added {
		r.set.Store(compileSecrets(all))
	}
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

func compileSecrets(secrets []string) *redactSet {
	set := &redactSet{secrets: secrets}
	lits := map[string]bool{}
	anchors := map[string]bool{}
	for _, s := range secrets {
		for _, f := range secretForms(s) {
			lits[f] = true
		}
		runs := alnumRuns(s)
		if a := anchorRun(runs); a != "" {
			anchors[a] = true
		} else {
			// A secret of short runs only: every literal form is its own
			// anchor.
			for _, f := range secretForms(s) {
				anchors[f] = true
			}
		}
		for _, a := range base64Fragments(s) {
			lits[a] = true
			anchors[a] = true
		}
		if len(runs) > 1 {
			set.splits = append(set.splits, splitPattern(runs))
		}
	}
	for f := range lits {
		set.literals = append(set.literals, []byte(f))
	}
	sort.Slice(set.literals, func(i, j int) bool {
		if len(set.literals[i]) != len(set.literals[j]) {
			return len(set.literals[i]) > len(set.literals[j])
		}
		return bytes.Compare(set.literals[i], set.literals[j]) < 0
	})
	var sorted []string
	for a := range anchors {
		sorted = append(sorted, a)
	}
	sort.Strings(sorted)
	for _, a := range sorted {
		set.anchors = append(set.anchors, []byte(a))
		set.byFirst[a[0]] = append(set.byFirst[a[0]], a)
		if set.minAnchor == 0 || len(a) < set.minAnchor {
			set.minAnchor = len(a)
		}
	}
	return set
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
// and without HTML escaping) and URL-encoded (query and path escaping,
// every reserved byte percent-encoded in upper and lower case hex).
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
	}
	add(url.QueryEscape(s))
	add(url.PathEscape(s))
	add(percentEncode(s, "0123456789ABCDEF"))
	add(percentEncode(s, "0123456789abcdef"))
	return forms
}

// percentEncode encodes every byte but letters and digits.
func percentEncode(s, hex string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
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
// between them: a punctuation or space byte, a %XX or \u00XX escape.
func splitPattern(runs []string) *regexp.Regexp {
	const sep = `(?:[^A-Za-z0-9]|%[0-9A-Fa-f]{2}|\\u00[0-9A-Fa-f]{2}){0,4}`
	quoted := make([]string, len(runs))
	for i, r := range runs {
		quoted[i] = regexp.QuoteMeta(r)
	}
	return regexp.MustCompile(strings.Join(quoted, sep))
}

// Bytes returns b without any secret. When b holds none, b itself is
// returned.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil {
		return b
	}
	set := r.set.Load()
	if set == nil || !set.anyAnchor(b) {
		return b
	}
	out := b
	copied := false
	for _, lit := range set.literals {
		if bytes.Contains(out, lit) {
			if !copied {
				out = bytes.Clone(out)
				copied = true
			}
			out = bytes.ReplaceAll(out, lit, []byte(Redacted))
		}
	}
	for _, re := range set.splits {
		if re.Match(out) {
			out = re.ReplaceAllLiteral(out, []byte(Redacted))
		}
	}
	return out
}

// anyAnchor reports whether b holds an anchor. Long texts are searched
// anchor by anchor (vectorized searches); short ones in one pass, with a
// table lookup per byte and a comparison only where an anchor could
// start.
func (s *redactSet) anyAnchor(b []byte) bool {
	if len(b) < s.minAnchor {
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
	if len(t) < s.minAnchor {
		return false
	}
	if len(t) >= shortText {
		return s.anyAnchor([]byte(t))
	}
	for i := 0; i+s.minAnchor <= len(t); i++ {
		for _, a := range s.byFirst[t[i]] {
			if len(t)-i >= len(a) && t[i:i+len(a)] == a {
				return true
			}
		}
	}
	return false
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
