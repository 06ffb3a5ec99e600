package tools

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
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
)

// ReviewOptions configure the operator's review page.
type ReviewOptions struct {
	// Token, when set, admits whoever presents it: a browser once as
	// ?token=… (then in a cookie), a program as Authorization: Bearer.
	// Without one, the page serves loopback clients on a loopback host
	// name only.
	Token  string
	Logger *slog.Logger
}

const (
	reviewPrefix   = "/review/"
	sessionCookie  = "airlock_review_session"
	tokenCookie    = "airlock_review_token"
	manifestPage   = 50
	maxDecisionLen = 64 << 10
)

//go:embed review.html
var reviewFS embed.FS

var reviewTmpl = template.Must(template.New("review.html").Funcs(template.FuncMap{
	"json": func(v any) string { b, _ := selection.Canonical(v); return string(b) },
	"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"cell": cell,
}).ParseFS(reviewFS, "review.html"))

// review serves the review page: an operator sees a selection the way the
// approval needs it (environment, action and effect, composition,
// exclusions, what is missing, the manifest) and approves or rejects that
// exact selection and action, outside the agent's channel.
type review struct {
	d    *Deps
	opts ReviewOptions
}

// NewReviewHandler serves the review page under /review/.
func NewReviewHandler(d *Deps, opts ReviewOptions) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	rv := &review{d: d, opts: opts}
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
func (rv *review) admit(w http.ResponseWriter, r *http.Request) bool {
	if rv.opts.Token != "" {
		tok := []byte(rv.opts.Token)
		if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(b), tok) == 1 {
			return true
		}
		if c, err := r.Cookie(tokenCookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), tok) == 1 {
			return true
		}
		if q := r.URL.Query().Get("token"); r.Method == http.MethodGet && q != "" && subtle.ConstantTimeCompare([]byte(q), tok) == 1 {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: rv.opts.Token, Path: reviewPrefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
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
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || !IsLoopback(r.Host) {
		rv.opts.Logger.Warn("review page refused a request", "remote", r.RemoteAddr)
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemReviewAccessDenied, ""))
		return false
	}
	return true
}

// fail answers a problem: as application/problem+json to a program that
// asks for JSON, as a page otherwise.
func (rv *review) fail(w http.ResponseWriter, r *http.Request, p *envelope.Problem) {
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
	_ = reviewTmpl.ExecuteTemplate(w, "problem", p)
}

func (rv *review) index(w http.ResponseWriter, r *http.Request) {
	sels, err := rv.d.Store.RecentSelections(r.Context(), 50)
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	type row struct {
		Sel    *selection.Selection
		Need   string
		Status string
	}
	var rows []row
	for _, s := range sels {
		rows = append(rows, row{Sel: s, Need: rv.need(r.Context(), s).Mode, Status: rv.status(r.Context(), s)})
	}
	rv.page(w, "index", map[string]any{"Rows": rows})
}

func (rv *review) need(ctx context.Context, sel *selection.Selection) selection.Requirement {
	if rv.d.Runtime == nil {
		return selection.Requirement{Mode: "unknown (no configuration given)"}
	}
	if a, ok := rv.d.Runtime.Actions[sel.Action.Type]; ok {
		return rv.d.Engine.ApprovalRequirement(ctx, sel, a)
	}
	return selection.Requirement{Mode: "unknown (the action is no longer configured)"}
}

// status says in a few words where a selection stands.
func (rv *review) status(ctx context.Context, sel *selection.Selection) string {
	ops, _ := rv.d.Store.OperationsOf(ctx, sel.ID)
	for _, op := range ops {
		if op.Mode == selection.ModeExecute {
			return "committed: " + op.ID + " " + op.Status
		}
	}
	if !rv.d.Clock.Now().Before(sel.ExpiresAt) {
		return "expired"
	}
	aps, _ := rv.d.Store.Approvals(ctx, sel.ID)
	for i := len(aps) - 1; i >= 0; i-- {
		switch ap := aps[i]; ap.Decision {
		case selection.DecisionRejected:
			return "rejected by " + ap.Who
		case selection.DecisionApproved:
			if ap.UsedBy == "" && rv.d.Clock.Now().Before(ap.ExpiresAt) {
				return "approved by " + ap.Who + ", usable until " + ap.ExpiresAt.UTC().Format("15:04:05 UTC")
			}
		}
	}
	if !sel.Committable {
		return "not committable"
	}
	return "awaiting a decision"
}

func (rv *review) load(w http.ResponseWriter, r *http.Request) *selection.Selection {
	sel, err := rv.d.Store.Selection(r.Context(), r.PathValue("id"))
	if err != nil || sel.State != selection.StateReady {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemSelectionNotFound, "No selection with this id is ready."))
		return nil
	}
	return sel
}

// session returns the browser's review session id, starting one.
func (rv *review) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil && len(c.Value) >= 32 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: v, Path: reviewPrefix, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	return v
}

// csrf is the form token of one session and selection: an HMAC with a key
// derived from the shared secret or kept in the store.
func (rv *review) csrf(ctx context.Context, session, selID string) (string, error) {
	key, err := rv.d.key(ctx, "review_csrf_key")
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("review|" + session + "|" + selID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}

type reviewGroup struct {
	Dim    string
	Values []groupValue
}

type groupValue struct {
	Value string
	Count int
}

func (rv *review) selection(w http.ResponseWriter, r *http.Request) {
	sel := rv.load(w, r)
	if sel == nil {
		return
	}
	ctx := r.Context()
	after := r.URL.Query().Get("after")
	recs, err := rv.d.Store.Records(ctx, sel.ID, selection.RecordQuery{Disposition: selection.Member, After: after, Limit: manifestPage + 1})
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	next := ""
	if len(recs) > manifestPage {
		recs = recs[:manifestPage]
		next = recs[len(recs)-1].ID
	}
	cols := map[string]bool{}
	for _, rec := range recs {
		for k := range rec.Review {
			cols[k] = true
		}
	}
	delete(cols, "id")
	token, err := rv.csrf(ctx, rv.session(w, r), sel.ID)
	if err != nil {
		rv.fail(w, r, envelope.NewProblem(envelope.ProblemInternal, ""))
		return
	}
	var groups []reviewGroup
	dims := make([]string, 0, len(sel.Summary.Groups))
	for k := range sel.Summary.Groups {
		dims = append(dims, k)
	}
	sort.Strings(dims)
	for _, dim := range dims {
		g := reviewGroup{Dim: dim}
		for _, v := range sel.Summary.Groups[dim] {
			b, _ := selection.Canonical(v.Value)
			g.Values = append(g.Values, groupValue{Value: string(b), Count: v.Count})
		}
		groups = append(groups, g)
	}
	aps, _ := rv.d.Store.Approvals(ctx, sel.ID)
	ops, _ := rv.d.Store.OperationsOf(ctx, sel.ID)
	need := rv.need(ctx, sel)
	status := rv.status(ctx, sel)
	rv.page(w, "selection", map[string]any{
		"Sel": sel, "Need": need, "Acks": selection.Acknowledgements(sel), "Groups": groups,
		"Records": recs, "Columns": sortedSet(cols), "After": after, "Next": next,
		"Approvals": aps, "Operations": ops, "Status": status, "CSRF": token,
		"Decidable": status == "awaiting a decision", "Expired": !rv.d.Clock.Now().Before(sel.ExpiresAt),
		"Params": jsonOf(sel.Action.Params), "Decided": r.URL.Query().Get("decided"),
	})
}

func jsonOf(v any) string {
	b, _ := selection.Canonical(v)
	return string(b)
}

func (rv *review) export(format string) http.HandlerFunc {
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
			rv.opts.Logger.Error("manifest export failed", "selection_id", sel.ID, "err", err)
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

func (rv *review) decide(w http.ResponseWriter, r *http.Request) {
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
		rv.opts.Logger.Warn("review page refused a decision without a valid form token", "selection_id", id, "remote", r.RemoteAddr)
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
	ap, p := rv.d.Engine.Decide(ctx, selection.DecisionRequest{SelectionID: sel.ID, Digest: digest, Decision: decision, Who: who,
		Channel: selection.ChannelReviewPage, Acknowledgements: acks, RequestID: newRequestID()})
	if p != nil {
		rv.fail(w, r, p)
		return
	}
	rv.opts.Logger.Info("review page decision", "selection_id", sel.ID, "decision", decision, "approval_id", ap.ID)
	http.Redirect(w, r, reviewPrefix+"selections/"+url.PathEscape(sel.ID)+"?decided="+url.QueryEscape(ap.ID), http.StatusSeeOther)
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

func (rv *review) page(w http.ResponseWriter, name string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := reviewTmpl.ExecuteTemplate(w, name, data); err != nil {
		rv.opts.Logger.Error("review page", "template", name, "err", err)
	}
}
