package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/redact"
)

// session is a login credential (config.SessionConfig): the steps are sent
// when a request first needs the session and again once the API says it
// ended; the cookies their answers set, and the values they capture, are
// what authorizes the next requests. One login is shared by every request
// waiting at the time (singleflight), as one token request is. Every
// secret, cookie value and captured token is given to the Redactor before
// it is used, so that nothing it reaches can carry it out.
type session struct {
	cfg     *config.SessionConfig
	base    *url.URL
	secrets map[string]string // "secrets.NAME" -> value
	env     func(string) string
	hc      *http.Client
	jar     *sessionJar
	red     *redact.Redactor
	maxBody int64
	host    string

	flight singleflight.Group

	mu     sync.Mutex
	gen    int64             // the current login's number; 0: none
	values map[string]string // what the login's steps captured
	csrf   string            // the write token of gen ("" until fetched)
	// logins counts the logins sent.
	logins atomic.Int64
}

// sessionJar keeps the session's cookies, telling the Redactor every value
// long enough to be a secret before it is kept (a session id, a token; not
// MediaWiki's UserID=2 or UserName cookies, which are short words).
type sessionJar struct {
	mu    sync.Mutex
	inner *cookiejar.Jar
	red   *redact.Redactor
}

// minCookieSecret is the shortest cookie value taken for a secret.
const minCookieSecret = 16

func newSessionJar(red *redact.Redactor) *sessionJar {
	j, _ := cookiejar.New(nil)
	return &sessionJar{inner: j, red: red}
}

func (j *sessionJar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	for _, c := range cookies {
		if len(c.Value) >= minCookieSecret {
			j.red.Add(c.Value, url.QueryEscape(c.Value))
		}
	}
	j.mu.Lock()
	inner := j.inner
	j.mu.Unlock()
	inner.SetCookies(u, cookies)
}

func (j *sessionJar) Cookies(u *url.URL) []*http.Cookie {
	j.mu.Lock()
	inner := j.inner
	j.mu.Unlock()
	return inner.Cookies(u)
}

// reset forgets every cookie: the next login starts afresh.
func (j *sessionJar) reset() {
	fresh, _ := cookiejar.New(nil)
	j.mu.Lock()
	j.inner = fresh
	j.mu.Unlock()
}

// loadSessionSecrets reads a session's secrets at start-up: the session
// itself is built by New, which has the transport it shares, and
// its material is fingerprinted here.
func loadSessionSecrets(_ *credential, cr *config.CredentialConfig, opts Options, _ time.Duration) ([]string, error) {
	var material []string
	for _, name := range slices.Sorted(maps.Keys(cr.Session.Secrets)) {
		v, err := readSecret(cr.Session.Secrets[name], "credential: session: secrets: "+name, opts.Getenv)
		if err != nil {
			return nil, err
		}
		material = append(material, name, v)
	}
	for _, st := range cr.Session.Steps {
		material = append(material, st.Method, st.Path)
	}
	return material, nil
}

// loadSession reads the session's secrets and builds its client, which
// shares the upstream's transport and cookie jar and follows no redirect.
func loadSession(sc *config.SessionConfig, base *url.URL, opts Options, timeout time.Duration, transport http.RoundTripper, maxBody int64) (*session, []string, error) {
	s := &session{cfg: sc, base: base, secrets: map[string]string{}, env: opts.Getenv, red: opts.Redactor, maxBody: maxBody, host: base.Host}
	var secrets []string
	for _, name := range slices.Sorted(maps.Keys(sc.Secrets)) {
		v, err := readSecret(sc.Secrets[name], "credential: session: secrets: "+name, opts.Getenv)
		if err != nil {
			return nil, nil, err
		}
		s.secrets["secrets."+name] = v
		secrets = append(secrets, v, url.QueryEscape(v))
	}
	// A login's ${VAR} values are sent as the login's fields (a password
	// written there rather than under secrets): each is redacted as a
	// secret, so that no answer or log that echoes it carries it out.
	fromEnv := func(name string) string {
		v := opts.Getenv(name)
		if v != "" {
			secrets = append(secrets, v, url.QueryEscape(v))
		}
		return v
	}
	for _, st := range append(append([]config.SessionStep(nil), sc.Steps...), csrfSteps(sc)...) {
		for _, body := range []map[string]string{st.Form, st.JSON} {
			for _, v := range body {
				if _, err := config.ExpandEnv(v, fromEnv); err != nil {
					return nil, nil, fmt.Errorf("credential: session: step %q: %w", st.Name, err)
				}
			}
		}
	}
	s.jar = newSessionJar(opts.Redactor)
	s.hc = &http.Client{Timeout: timeout, Transport: transport, Jar: s.jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return s, secrets, nil
}

func csrfSteps(sc *config.SessionConfig) []config.SessionStep {
	if sc.CSRF == nil {
		return nil
	}
	return []config.SessionStep{*sc.CSRF}
}

// ensure returns the current login's number, logging in first when there
// is none. Callers waiting at the same time share one login; one whose
// context ends returns without waiting further.
func (s *session) ensure(ctx context.Context) (int64, error) {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	if gen != 0 {
		return gen, nil
	}
	loginCtx := context.WithoutCancel(ctx) // others may wait for it
	ch := s.flight.DoChan("login", func() (any, error) {
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		if gen != 0 {
			return gen, nil
		}
		return s.login(loginCtx)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return 0, r.Err
		}
		return r.Val.(int64), nil
	case <-ctx.Done():
		return 0, &TokenError{Kind: TokenTimeout, Host: s.host, Login: true, canceled: true}
	}
}

// login sends the steps in order with fresh cookies and keeps what they
// captured.
func (s *session) login(ctx context.Context) (int64, error) {
	s.logins.Add(1)
	s.jar.reset()
	values := maps.Clone(s.secrets)
	for _, st := range s.cfg.Steps {
		if err := s.step(ctx, st, values); err != nil {
			return 0, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.values, s.csrf = values, ""
	return s.gen, nil
}

// step sends one step and captures its values into values (as
// "STEP.NAME"). A refusal is a *TokenError: no request it was for is sent.
func (s *session) step(ctx context.Context, st config.SessionStep, values map[string]string) error {
	fail := func(kind TokenKind, status int, body []byte, header http.Header, detail string) error {
		// Redacted before it is quoted, cut short: see tokenSource.red.
		return &TokenError{Kind: kind, Host: s.host, Status: status, Body: s.red.Bytes(body), Header: header, Detail: detail, Login: true}
	}
	path, err := config.RenderSession(st.Path, values)
	if err != nil {
		return fail(TokenInvalidResponse, 0, nil, nil, err.Error())
	}
	p, q, err := template.Vars{}.RenderURL(path)
	if err != nil {
		return fail(TokenInvalidResponse, 0, nil, nil, "the step's path does not parse")
	}
	u := *s.base
	u.Path = strings.TrimRight(s.base.Path, "/") + p
	u.RawPath = ""
	u.RawQuery = q.Encode()
	var body io.Reader
	ctype := ""
	switch {
	case len(st.Form) > 0:
		form := url.Values{}
		for k, t := range st.Form {
			v, err := s.render(t, values)
			if err != nil {
				return fail(TokenInvalidResponse, 0, nil, nil, err.Error())
			}
			form.Set(k, v)
		}
		body, ctype = strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"
	case len(st.JSON) > 0:
		m := map[string]any{}
		for k, t := range st.JSON {
			v, err := s.render(t, values)
			if err != nil {
				return fail(TokenInvalidResponse, 0, nil, nil, err.Error())
			}
			m[k] = v
		}
		b, _ := json.Marshal(m)
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, strings.ToUpper(st.Method), u.String(), body)
	if err != nil {
		return fail(TokenInvalidResponse, 0, nil, nil, "the step's request cannot be built")
	}
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && ue.Timeout() {
			return fail(TokenTimeout, 0, nil, nil, "")
		}
		return fail(TokenUnreachable, 0, nil, nil, "")
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, s.maxBody))
	if err != nil {
		return fail(TokenUnreachable, resp.StatusCode, nil, nil, "")
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fail(TokenClientRejected, resp.StatusCode, b, resp.Header, "")
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fail(TokenServerError, resp.StatusCode, b, resp.Header, "")
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fail(TokenRequestRejected, resp.StatusCode, b, resp.Header, "")
	}
	var doc any
	if len(st.Capture) > 0 || st.Success != nil {
		var err error
		if doc, err = jsonvalue.Decode(b); err != nil {
			return fail(TokenInvalidResponse, resp.StatusCode, nil, nil, fmt.Sprintf("the answer to login step %q is not JSON", st.Name))
		}
	}
	if ok := st.Success; ok != nil {
		if v, _ := jsonvalue.Get(doc, ok.Path); jsonvalue.String(v) != ok.Equals {
			// MediaWiki refuses a wrong bot password with 200 and
			// login.result: Failed; its reason is quoted.
			return fail(TokenClientRejected, resp.StatusCode, b, resp.Header, "")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(st.Capture)) {
		v, _ := jsonvalue.Get(doc, st.Capture[name])
		str, isStr := v.(string)
		if !isStr || str == "" {
			return fail(TokenInvalidResponse, resp.StatusCode, nil, nil, fmt.Sprintf("the answer to login step %q holds no %s at %q", st.Name, name, st.Capture[name]))
		}
		// A captured value is a token: known to the Redactor before use.
		s.red.Add(str, url.QueryEscape(str))
		values[st.Name+"."+name] = str
	}
	return nil
}

// render fills a step's value: session references, then ${VAR}.
func (s *session) render(t string, values map[string]string) (string, error) {
	v, err := config.RenderSession(t, values)
	if err != nil {
		return "", err
	}
	return config.ExpandEnv(v, s.env)
}

// header is the header a request carries for the login gen ("" when the
// session sends none: its cookies authorize).
func (s *session) header(gen int64) (name, value string, err error) {
	h := s.cfg.Header
	if h == nil {
		return "", "", nil
	}
	s.mu.Lock()
	values := s.values
	s.mu.Unlock()
	v, err := config.RenderSession(h.Value, values)
	return h.Name, v, err
}

// csrfToken is the write token of the login gen, fetched once per login.
func (s *session) csrfToken(ctx context.Context, gen int64) (string, error) {
	s.mu.Lock()
	tok, cur := s.csrf, s.gen
	s.mu.Unlock()
	if tok != "" && cur == gen {
		return tok, nil
	}
	ch := s.flight.DoChan("csrf/"+strconv.FormatInt(gen, 10), func() (any, error) {
		s.mu.Lock()
		values := maps.Clone(s.values)
		s.mu.Unlock()
		st := *s.cfg.CSRF
		st.Name = s.csrfName()
		if err := s.step(context.WithoutCancel(ctx), st, values); err != nil {
			return "", err
		}
		tok := values[s.csrfName()+".token"]
		s.mu.Lock()
		if s.gen == gen {
			s.csrf = tok
		}
		s.mu.Unlock()
		return tok, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return "", r.Err
		}
		return r.Val.(string), nil
	case <-ctx.Done():
		return "", &TokenError{Kind: TokenTimeout, Host: s.host, Login: true, canceled: true}
	}
}

func (s *session) csrfName() string {
	if s.cfg.CSRF.Name != "" {
		return s.cfg.CSRF.Name
	}
	return "csrf"
}

// refused drops the login gen when it is the current one: the next request
// logs in again. Many requests refused under one login drop it once, and
// then share the next login.
func (s *session) refused(gen int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen == gen {
		s.gen, s.values, s.csrf = 0, nil, ""
	}
}

// ended reports whether a 2xx answer says the session ended (Expired's
// path holds one of its values: MediaWiki's assertuserfailed, badtoken).
func (s *session) ended(resp *Response) bool {
	e := s.cfg.Expired
	if e == nil || e.Path == "" || resp == nil {
		return false
	}
	doc, err := jsonvalue.Decode(resp.Body)
	if err != nil {
		return false
	}
	v, ok := jsonvalue.Get(doc, e.Path)
	return ok && slices.Contains(e.Values, jsonvalue.String(v))
}

// endedStatus reports whether a status says the session ended: 401, or
// one Expired lists.
func (s *session) endedStatus(status int) bool {
	if status == http.StatusUnauthorized {
		return true
	}
	return s.cfg.Expired != nil && slices.Contains(s.cfg.Expired.Status, status)
}

// prepare makes r ready to be sent under the session: logged in, and a
// write given the login's CSRF token (appended to its form body, or in
// its header). It returns the login's number, for refused.
func (s *session) prepare(ctx context.Context, r Request) (Request, int64, error) {
	gen, err := s.ensure(ctx)
	if err != nil {
		return r, 0, err
	}
	if s.cfg.CSRF == nil || r.Idempotent {
		return r, gen, nil
	}
	tok, err := s.csrfToken(ctx, gen)
	if err != nil {
		return r, 0, err
	}
	if s.cfg.CSRFHeader != "" {
		r.Header = r.Header.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		r.Header.Set(s.cfg.CSRFHeader, tok)
		return r, gen, nil
	}
	// Last in the form: MediaWiki asks for the token after the text, so
	// that a truncated body is refused rather than saved.
	body := append([]byte(nil), r.Body...)
	if len(body) > 0 {
		body = append(body, '&')
	}
	r.Body = append(body, url.QueryEscape(s.cfg.CSRFField)+"="+url.QueryEscape(tok)...)
	return r, gen, nil
}

// Logins is how many logins the upstream's session credential sent (0 for
// another credential).
func (c *Client) Logins() int64 {
	if c.cred == nil || c.cred.session == nil {
		return 0
	}
	return c.cred.session.logins.Load()
}

// authRefused reports whether an answer refuses the credential: what
// HTTPError.CredentialRefused says (a 401 or a declared unauthorized
// answer), and for a session the statuses its expiry declares.
func (c *Client) authRefused(he *HTTPError) bool {
	if he.CredentialRefused() {
		return true
	}
	return he.Kind == FailStatus && c.cred != nil && c.cred.session != nil && c.cred.session.endedStatus(he.Status)
}

// sessionEnded turns a 2xx answer that says the session ended (MediaWiki's
// {"error": {"code": "assertuserfailed"}}) into the 401 it means, so that
// Do renews the login as it renews a refused token; anything else is
// returned as it was.
func (c *Client) sessionEnded(used string, resp *Response, err error) error {
	if err != nil || resp == nil || !strings.HasPrefix(used, sessionMark) || !c.cred.session.ended(resp) {
		return err
	}
	return &HTTPError{Kind: FailStatus, Status: http.StatusUnauthorized, Header: resp.Header, Body: resp.Body, Attempts: resp.Attempts, Sent: true}
}

// loginProblem is the problem of a failed login (or CSRF token step): the
// API refused the configured secrets, or could not be asked. No request
// it was for was sent.
func loginProblem(te *TokenError) *envelope.Problem {
	host := safeHost(te.Host)
	var p *envelope.Problem
	switch te.Kind {
	case TokenClientRejected, TokenRequestRejected:
		p = envelope.NewProblem(envelope.ProblemTokenClientRejected, fmt.Sprintf("The login at %s refused the session credential in airlock's configuration (status %d): its user, password or bot password is wrong, expired or revoked. No request reached the API.", host, te.Status))
	case TokenServerError:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointFailed, fmt.Sprintf("The login at %s failed (status %d). No request reached the API.", host, te.Status))
	case TokenTimeout:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointTimeout, fmt.Sprintf("The login at %s did not answer in time. No request reached the API.", host))
	case TokenUnreachable:
		p = envelope.NewProblem(envelope.ProblemTokenEndpointUnreachable, fmt.Sprintf("The login at %s could not be reached. No request reached the API.", host))
	default:
		p = envelope.NewProblem(envelope.ProblemTokenResponseInvalid, fmt.Sprintf("The login at %s answered with something airlock cannot use: %s. No request reached the API.", host, te.Detail))
	}
	p.StateChanged = ""
	if len(te.Body) > 0 {
		p.UpstreamMessage = UpstreamMessage(te.Header, te.Body)
	}
	return p
}
