// Package review is the operator's review page: it shows a frozen selection
// the way an approval needs it (the decision and what it acknowledges
// first, then the effect, composition, exclusions and manifest) and records
// the operator's approval or rejection outside the agent's channel. It also
// exports a selection's manifest (CSV, JSON) for the page and for airlock
// approve.
//
// It must never record a decision for another selection or action than the
// one the page showed (the digest travels with the form), never accept a
// form that its own page did not serve (session-bound form tokens, same
// origin), and never show a field the configuration marks sensitive (such
// fields never reach the store).
package review

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode"

	"github.com/google/uuid"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/httpguard"
	"github.com/airlock-mcp/airlock/internal/signing"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// Deps are what the page reads and decides with.
type Deps struct {
	// Store holds the selections, approvals and operations (required).
	Store selection.Store
	// Engine records decisions and applies approval policies (required).
	Engine *selection.Engine
	// Runtime is the server's configuration: approval policies, the
	// upstreams' names, which fields are money, which actions are
	// destructive. nil: policies read "unknown" and values are shown as
	// stored.
	Runtime *upstream.Runtime
	// Clock says what is expired; nil means the wall clock.
	Clock upstream.Clock
	// Secret, when set, is what the form tokens' key derives from, so that
	// every process given it accepts the others' forms (AIRLOCK_SECRET).
	// Without it the key is generated once and kept in the store.
	Secret []byte
	// Logger receives refusals and decisions; nil discards them.
	Logger *slog.Logger
}

// Options configure access to the page.
type Options struct {
	// Token, when set, admits whoever presents it: a browser once as
	// ?token=… (then in a cookie), a program as Authorization: Bearer.
	// Without one, the page serves loopback clients on a loopback host
	// name only.
	Token string
	// Principal is recorded as who decided, beside the typed name: the
	// holder of Token, or local without one (the zero value is recorded
	// as unrecorded).
	Principal selection.Principal
}

const (
	// Prefix is the path the page is served under.
	Prefix         = "/review/"
	sessionCookie  = "airlock_review_session"
	tokenCookie    = "airlock_review_token"
	manifestPage   = 50
	maxDecisionLen = 64 << 10
	// recentLimit bounds the selections the index considers.
	recentLimit = 200
	// indexRows bounds the rows the index shows.
	indexRows = 50
)

//go:embed page.html
var pageFS embed.FS

// pages are the page's templates, parsed when first served: a server
// that does not serve the review page never parses them.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page.html").Funcs(template.FuncMap{
		"short": shortDigest,
		"json":  jsonOf,
		"stamp": stamp,
	}).ParseFS(pageFS, "page.html"))
})

type page struct {
	d    Deps
	opts Options
}

// NewHandler serves the review page under /review/.
func NewHandler(d Deps, opts Options) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = upstream.WallClock
	}
	rv := &page{d: d, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /review/{$}", rv.index)
	mux.HandleFunc("GET /review/selections/{id}", rv.selection)
	mux.HandleFunc("GET /review/selections/{id}/manifest.csv", rv.export(ExportCSV))
	mux.HandleFunc("GET /review/selections/{id}/manifest.json", rv.export(ExportJSON))
	mux.HandleFunc("POST /review/selections/{id}/decision", rv.decide)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// An approval page must not be framed (clickjacking) or cached,
		// and its address stays on this origin. (no-referrer would make
		// Chromium send "Origin: null" with the decision form.)
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !rv.admit(w, r) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// admit applies the access rule; it answers the request itself when it
// does not admit it (or when it trades a ?token= for a cookie).
func (rv *page) admit(w http.ResponseWriter, r *http.Request) bool {
	if rv.opts.Token != "" {
		tok := []byte(rv.opts.Token)
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), tok) == 1 {
			return true
		}
		if c, err := r.Cookie(tokenCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), tok) == 1 {
			return true
		}
		if q := r.URL.Query().Get("token"); r.Method == http.MethodGet && q != "" && subtle.ConstantTimeCompare([]byte(q), tok) == 1 {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: rv.opts.Token, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.String(), http.StatusSeeOther)
			return false
		}
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemReviewAccessDenied, "This review page needs its token: open it with ?token=… once."))
		return false
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || !httpguard.IsLoopback(r.Host) {
		rv.d.Logger.Warn("review page refused a request", "remote", r.RemoteAddr)
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemReviewAccessDenied, ""))
		return false
	}
	return true
}

func newRequestID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// fail answers a problem: as application/problem+json to a program that
// asks for JSON, as a page otherwise.
func (rv *page) fail(w http.ResponseWriter, r *http.Request, p *envelope.Problem) {
	if p.RequestID == "" {
		p.WithRequest(newRequestID())
	}
	if strings.Contains(r.Header.Get("Accept"), "json") {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(p.Status)
		_ = json.NewEncoder(w).Encode(p)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(p.Status)
	_ = pages().ExecuteTemplate(w, "problem", p)
}

func (rv *page) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages().ExecuteTemplate(w, name, data); err != nil {
		rv.d.Logger.Error("review page", "template", name, "err", err)
	}
}

func (rv *page) load(w http.ResponseWriter, r *http.Request) *selection.Selection {
	sel, err := rv.d.Store.Selection(r.Context(), r.PathValue("id"))
	if err != nil || sel.State != selection.StateReady {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemSelectionNotFound, "No selection with this id is ready."))
		return nil
	}
	return sel
}

// session returns the browser's review session id, starting one.
func (rv *page) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return v
}

// csrfKeyName names the form tokens' key, in the store or derived from
// the secret.
const csrfKeyName = "review_csrf_key"

// key returns the form tokens' key: derived from the secret when there is
// one, else generated once and kept in the store.
func (rv *page) key(ctx context.Context) ([]byte, error) {
	return signing.Key(ctx, rv.d.Secret, csrfKeyName, rv.d.Store)
}

// csrf is the form token of one session and selection.
func (rv *page) csrf(ctx context.Context, session, selID string) (string, error) {
	key, err := rv.key(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("review|" + session + "|" + selID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

func (rv *page) export(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sel := rv.load(w, r)
		if sel == nil {
			return
		}
		ct := "text/csv; charset=utf-8"
		if format == ExportJSON {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-manifest.%s"`, sel.ID, format))
		if err := ExportManifest(r.Context(), rv.d.Store, sel, format, w); err != nil {
			rv.d.Logger.Error("manifest export failed", "selection_id", sel.ID, "err", err)
		}
	}
}

// sameOrigin reports whether a form post came from a page of this server:
// Origin (when the browser sends it) names this host, and Fetch metadata
// (when sent) says same-origin.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

func (rv *page) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxDecisionLen)
	if err := r.ParseForm(); err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemReviewFormInvalid, "The form could not be read."))
		return
	}
	ctx := r.Context()
	id := r.PathValue("id")
	c, err := r.Cookie(sessionCookie)
	want := ""
	if err == nil {
		want, err = rv.csrf(ctx, c.Value, id)
		if err != nil {
			rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
			return
		}
	}
	got := r.PostForm.Get("csrf")
	if want == "" || !hmac.Equal([]byte(got), []byte(want)) || !sameOrigin(r) {
		rv.d.Logger.Warn("review page refused a decision without a valid form token", "selection_id", id, "remote", r.RemoteAddr)
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemReviewFormInvalid, ""))
		return
	}
	sel := rv.load(w, r)
	if sel == nil {
		return
	}
	var errs []envelope.FieldError
	decision := map[string]string{"approve": selection.DecisionApproved, "reject": selection.DecisionRejected}[r.PostForm.Get("decision")]
	if decision == "" {
		errs = append(errs, envelope.NewFieldError("decision", envelope.FieldEnum, []any{"approve", "reject"}))
	}
	name := personName(r.PostForm.Get("name"))
	if name == "" {
		errs = append(errs, envelope.NewFieldError("name", envelope.FieldRequired, "Ada Lovelace"))
	}
	digest := r.PostForm.Get("digest")
	if digest == "" {
		errs = append(errs, envelope.NewFieldError("digest", envelope.FieldRequired, sel.Digest))
	}
	acks := selection.Acknowledgements(sel)
	if decision == selection.DecisionApproved && len(acks) > 0 && r.PostForm.Get("acknowledge") != "yes" {
		errs = append(errs, envelope.NewFieldError("acknowledge", envelope.FieldRequired, "yes"))
	}
	if len(errs) > 0 {
		rv.fail(w, r, envelope.InvalidArguments(errs))
		return
	}
	if decision == selection.DecisionRejected {
		acks = nil
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	who := "review page: " + name + " from " + host
	ap, err := rv.d.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: digest, Decision: decision, Who: who,
		Channel: selection.ChannelReviewPage, Acknowledgements: acks, RequestID: newRequestID(), Principal: rv.opts.Principal})
	if err != nil {
		rv.fail(w, r, tools.ProblemOf(err))
		return
	}
	rv.d.Logger.Info("review page decision", "selection_id", sel.ID, "decision", decision, "approval_id", ap.ID)
	http.Redirect(w, r, Prefix+"selections/"+url.PathEscape(sel.ID)+"?decided="+url.QueryEscape(ap.ID), http.StatusSeeOther)
}

// personName keeps a typed name printable and short: letters, digits,
// spaces and a little punctuation.
func personName(s string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(s) {
		if b.Len() >= 64 {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(" .-_@'", r) {
			b.WriteRune(r)
		}
	}
	return strings.TrimSpace(b.String())
}
