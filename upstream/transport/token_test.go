package transport

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/memnet"
	"github.com/airlock-mcp/airlock/internal/oauthtest"
	"github.com/airlock-mcp/airlock/internal/refused"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/redact/leaktest"
)

// oauthClient is a client of api whose tokens come from te.
func oauthClient(t *testing.T, te *oauthtest.TokenEndpoint, api http.Handler, extra, more string, opts Options) (*Client, *httptest.Server) {
	t.Helper()
	tsrv := httptest.NewServer(te)
	t.Cleanup(tsrv.Close)
	asrv := httptest.NewServer(api)
	t.Cleanup(asrv.Close)
	opts.Getenv = oauthtest.Getenv
	return newTestClient(t, asrv.URL, extra+"\n"+oauthtest.Credential(tsrv.URL+"/token", more), opts), asrv
}

// memOAuthClient is oauthClient with the token endpoint and the API served
// on n (for a test in a synctest bubble); it returns the API's base URL.
func memOAuthClient(t *testing.T, n *memnet.Network, te *oauthtest.TokenEndpoint, api http.Handler, extra, more string, opts Options) (*Client, string) {
	t.Helper()
	tokens := n.Serve(t, te)
	opts.Getenv = oauthtest.Getenv
	return memClient(t, n, api, extra+"\n"+oauthtest.Credential(tokens+"/token", more), opts)
}

func get(t *testing.T, c *Client, base string) (*Response, error) {
	t.Helper()
	return c.Do(context.Background(), Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
}

func TestOAuth2_TokenIsCachedAndRenewedBeforeItExpires(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	te := &oauthtest.TokenEndpoint{Lifetime: 100 * time.Second}
	api := &oauthtest.API{}
	c, base := oauthClient(t, te, api, "", "", Options{Clock: clock})
	for range 5 {
		if _, err := get(t, c, base.URL); err != nil {
			t.Fatal(err)
		}
	}
	if n := te.Requests.Load(); n != 1 {
		t.Fatalf("five reads within the token's lifetime made %d token requests, want 1", n)
	}
	// A fifth of the lifetime before expiry, the token is renewed: it
	// never reaches the API expired.
	clock.Advance(79 * time.Second)
	if _, err := get(t, c, base.URL); err != nil || te.Requests.Load() != 1 {
		t.Fatalf("at 79 s of 100 the token is still used: %v, %d token requests", err, te.Requests.Load())
	}
	clock.Advance(2 * time.Second)
	if _, err := get(t, c, base.URL); err != nil || te.Requests.Load() != 2 {
		t.Fatalf("at 81 s of 100 the token is renewed: %v, %d token requests", err, te.Requests.Load())
	}
	seen := api.Seen()
	if !strings.HasPrefix(seen[5], "tok-1-") || !strings.HasPrefix(seen[6], "tok-2-") {
		t.Fatalf("the API saw %v", seen)
	}
}

func TestOAuth2_ConcurrentRequestsShareOneRenewal(t *testing.T) {
	bubble(t, testConcurrentRequestsShareOneRenewal)
}

func testConcurrentRequestsShareOneRenewal(t *testing.T, n *memnet.Network) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	te := &oauthtest.TokenEndpoint{Lifetime: 60 * time.Second, Gate: make(chan struct{})}
	api := &oauthtest.API{}
	c, base := memOAuthClient(t, n, te, api, "concurrency: 20", "", Options{Clock: clock})
	round := func() {
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := get(t, c, base)
				errs <- err
			}()
		}
		// The token request is held until every caller is waiting for it.
		synctest.Wait()
		if te.Requests.Load() == 0 {
			t.Fatal("every caller waits, and no token request was made")
		}
		close(te.Gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		te.Gate = make(chan struct{})
	}
	round()
	if n := te.Requests.Load(); n != 1 {
		t.Fatalf("20 concurrent first requests made %d token requests, want 1", n)
	}
	clock.Advance(55 * time.Second)
	round()
	if n := te.Requests.Load(); n != 2 {
		t.Fatalf("20 concurrent requests at renewal time made %d token requests in all, want 2", n)
	}
	if n := api.Hits.Load(); n != 40 {
		t.Fatalf("the API saw %d requests, want 40", n)
	}
}

func TestOAuth2_RefusedTokenIsRenewedOnceAndTheReadRepeated(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	api := &oauthtest.API{Accept: func(tok string) bool { return !strings.HasPrefix(tok, "tok-1-") }}
	c, base := oauthClient(t, te, api, "", "", Options{})
	resp, err := get(t, c, base.URL)
	if err != nil {
		t.Fatalf("a read refused with a revoked token is repeated with a new one: %v", err)
	}
	if resp.Status != 200 || te.Requests.Load() != 2 || api.Hits.Load() != 2 {
		t.Fatalf("status %d, %d token requests, %d API requests; want 200, 2, 2", resp.Status, te.Requests.Load(), api.Hits.Load())
	}
}

func TestOAuth2_ConcurrentRefusalsShareOneRenewal(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	api := &oauthtest.API{Accept: func(tok string) bool { return !strings.HasPrefix(tok, "tok-1-") }}
	c, base := oauthClient(t, te, api, "concurrency: 20", "", Options{})
	if _, err := get(t, c, base.URL); err != nil {
		t.Fatal(err)
	}
	// tok-1 was refused and tok-2 is in use; now tok-2 is revoked while
	// 20 requests carry it.
	var revoked atomic.Bool
	api.Accept = func(tok string) bool {
		return !strings.HasPrefix(tok, "tok-1-") && !(revoked.Load() && strings.HasPrefix(tok, "tok-2-"))
	}
	revoked.Store(true)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := get(t, c, base.URL); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := te.Requests.Load(); n != 3 {
		t.Fatalf("20 requests refused with the same token made %d token requests in all, want 3 (one renewal for them all)", n)
	}
}

func TestOAuth2_ATokenRefusedRightAfterRenewalIsAClearProblem(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	api := &oauthtest.API{Accept: func(string) bool { return false }}
	c, base := oauthClient(t, te, api, "", "", Options{})
	_, err := get(t, c, base.URL)
	he := asHTTPError(t, err)
	if !he.Renewed || te.Requests.Load() != 2 || api.Hits.Load() != 2 {
		t.Fatalf("renewed %v, %d token requests, %d API requests; want one renewal and no more", he.Renewed, te.Requests.Load(), api.Hits.Load())
	}
	p := ProblemFor(err, nil)
	if p.Code != envelope.ProblemUpstreamAuth || !strings.Contains(p.Detail, "just obtained") {
		t.Fatalf("problem %s %q", p.Code, p.Detail)
	}
}

func TestOAuth2_AWriteRefusedWithAStaleTokenIsNotSentAgainWithoutAKey(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	api := &oauthtest.API{Accept: func(tok string) bool { return !strings.HasPrefix(tok, "tok-1-") }}
	c, base := oauthClient(t, te, api, "", "", Options{})
	_, err := c.Do(context.Background(), Request{Method: http.MethodPost, URL: mustURL(t, base.URL+"/items/a/archive"), Body: []byte(`{}`)})
	he := asHTTPError(t, err)
	if he.Status != 401 || !he.NotRepeated || api.Hits.Load() != 1 {
		t.Fatalf("status %d, not repeated %v, %d API requests; want the 401 as the answer, sent once", he.Status, he.NotRepeated, api.Hits.Load())
	}
	if p := ProblemFor(err, nil); !strings.Contains(p.Detail, "not sent again") {
		t.Fatalf("the problem does not say the write was not sent again: %q", p.Detail)
	}
	// The next request carries a new token.
	if _, err := get(t, c, base.URL); err != nil {
		t.Fatal(err)
	}
	if seen := api.Seen(); !strings.HasPrefix(seen[1], "tok-2-") {
		t.Fatalf("the next request carried %q", seen[1])
	}
}

func TestOAuth2_AWriteWithAKeyIsSentOnceMoreWithTheSameKey(t *testing.T) {
	te := &oauthtest.TokenEndpoint{}
	api := &oauthtest.API{Accept: func(tok string) bool { return !strings.HasPrefix(tok, "tok-1-") }}
	c, base := oauthClient(t, te, api, "", "", Options{})
	req := Request{Method: http.MethodPost, URL: mustURL(t, base.URL+"/items/a/archive"), Body: []byte(`{}`),
		Header: http.Header{"Idempotency-Key": {"op-1:a"}}, Repeatable: true}
	resp, err := c.Do(context.Background(), req)
	if err != nil || resp.Status != 200 {
		t.Fatalf("a repeatable write is sent again with the new token: %v", err)
	}
	seen := api.Seen()
	if len(seen) != 2 || seen[0][strings.Index(seen[0], " "):] != seen[1][strings.Index(seen[1], " "):] || !strings.HasSuffix(seen[1], "op-1:a") {
		t.Fatalf("the API saw %v; want the same write twice with the same key", seen)
	}
}

// TestOAuth2_TokenEndpointFailuresHaveTheirOwnProblems: each way the
// authorization server can fail has its code, says whose fault it is and
// whether to retry, and never reaches the API nor blames it.
func TestOAuth2_TokenEndpointFailuresHaveTheirOwnProblems(t *testing.T) {
	jsonAnswer := func(status int, body string, hdr ...string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			if w.Header().Get("Content-Type") == "" {
				w.Header().Set("Content-Type", "application/json")
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
	}
	for _, tc := range []struct {
		name      string
		answer    func(http.ResponseWriter, *http.Request)
		secret    string // "" = the right one
		code      envelope.ProblemCode
		retryable bool
		quote     string
	}{
		{name: "wrong secret", secret: "wrong-secret-value", code: envelope.ProblemTokenClientRejected, quote: "client authentication failed"},
		{name: "invalid_client as 400", answer: jsonAnswer(400, `{"error":"invalid_client"}`), code: envelope.ProblemTokenClientRejected},
		{name: "unauthorized_client", answer: jsonAnswer(400, `{"error":"unauthorized_client","error_description":"grant not allowed"}`), code: envelope.ProblemTokenClientRejected, quote: "grant not allowed"},
		{name: "invalid_scope", answer: jsonAnswer(400, `{"error":"invalid_scope","error_description":"scope billing.write is not allowed"}`), code: envelope.ProblemTokenRequestRejected, quote: "billing.write"},
		{name: "invalid_target", answer: jsonAnswer(400, `{"error":"invalid_target"}`), code: envelope.ProblemTokenRequestRejected},
		{name: "500", answer: jsonAnswer(500, `{"error":"server_error"}`), code: envelope.ProblemTokenEndpointFailed, retryable: true},
		{name: "503 with retry-after", answer: jsonAnswer(503, `maintenance`, "Retry-After", "30", "Content-Type", "text/plain"), code: envelope.ProblemTokenEndpointFailed, retryable: true, quote: "maintenance"},
		{name: "html login page", answer: jsonAnswer(200, `<html>sign in</html>`, "Content-Type", "text/html"), code: envelope.ProblemTokenResponseInvalid},
		{name: "json without a token", answer: jsonAnswer(200, `{"status":"ok"}`), code: envelope.ProblemTokenResponseInvalid},
		{name: "a DPoP token", answer: jsonAnswer(200, `{"access_token":"dpop-bound-1234","token_type":"DPoP","expires_in":60}`), code: envelope.ProblemTokenResponseInvalid},
		{name: "timeout", answer: func(http.ResponseWriter, *http.Request) { time.Sleep(500 * time.Millisecond) }, code: envelope.ProblemTokenEndpointTimeout, retryable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T, n *memnet.Network) {
				te := &oauthtest.TokenEndpoint{Answer: tc.answer}
				api := &oauthtest.API{}
				tokens := n.Serve(t, te)
				secret := oauthtest.ClientSecret
				if tc.secret != "" {
					secret = tc.secret
				}
				c, base := memClient(t, n, api, "timeout: 150ms\n"+oauthtest.Credential(tokens+"/token", ""), Options{Getenv: func(string) string { return secret }})
				_, err := get(t, c, base)
				p := ProblemFor(err, nil)
				if p.Code != tc.code || p.Retryable != tc.retryable {
					t.Fatalf("problem %s (retryable %v), want %s (%v): %v", p.Code, p.Retryable, tc.code, tc.retryable, err)
				}
				if api.Hits.Load() != 0 {
					t.Fatal("a request reached the API without a token")
				}
				if !strings.Contains(p.Detail, "No request reached the API") {
					t.Fatalf("detail %q", p.Detail)
				}
				if !strings.Contains(p.UpstreamMessage, tc.quote) {
					t.Fatalf("upstream_message %q, want it to quote %q", p.UpstreamMessage, tc.quote)
				}
				if strings.Contains(err.Error(), oauthtest.ClientSecret) || strings.Contains(err.Error(), "<html>") {
					t.Fatalf("the error's text carries the body: %q", err)
				}
			})
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		addr := refused.Addr(t)
		api := &oauthtest.API{}
		asrv := httptest.NewServer(api)
		t.Cleanup(asrv.Close)
		c := newTestClient(t, asrv.URL, oauthtest.Credential("http://"+addr+"/token", ""), Options{Getenv: oauthtest.Getenv})
		_, err := get(t, c, asrv.URL)
		if p := ProblemFor(err, nil); p.Code != envelope.ProblemTokenEndpointUnreachable || !p.Retryable || api.Hits.Load() != 0 {
			t.Fatalf("problem %s retryable %v, %d API requests", p.Code, p.Retryable, api.Hits.Load())
		}
	})
}

func TestOAuth2_TheGrantCarriesScopesAudienceResourceAndTheAuthMethod(t *testing.T) {
	for _, post := range []bool{false, true} {
		te := &oauthtest.TokenEndpoint{Post: post}
		more := "    scopes: [billing.read, billing.write]\n    audience: https://billing.example.com\n    resource: https://billing.example.com/v1\n"
		if post {
			more += "    auth_method: client_secret_post\n"
		}
		c, base := oauthClient(t, te, &oauthtest.API{}, "", more, Options{})
		if _, err := get(t, c, base.URL); err != nil {
			t.Fatalf("post %v: %v", post, err)
		}
		f := te.Form(0)
		if f["scope"][0] != "billing.read billing.write" || f["audience"][0] != "https://billing.example.com" || f["resource"][0] != "https://billing.example.com/v1" {
			t.Fatalf("the token request's form: %v", f)
		}
		if _, inForm := f["client_secret"]; inForm != post {
			t.Fatalf("auth_method post %v sent the secret in the form: %v", post, inForm)
		}
	}
}

// TestOAuth2_EverySecretIsRedacted: the client secret (raw, URL-encoded,
// in the Basic header client_secret_basic builds) and every access token
// obtained, the renewed ones too, are known to the runtime's redactor
// before they are used.
func TestOAuth2_EverySecretIsRedacted(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	te := &oauthtest.TokenEndpoint{Lifetime: 10 * time.Second}
	red := redact.New()
	c, base := oauthClient(t, te, &oauthtest.API{}, "", "", Options{Clock: clock, Redactor: red})
	for range 3 {
		if _, err := get(t, c, base.URL); err != nil {
			t.Fatal(err)
		}
		clock.Advance(20 * time.Second)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("airlock:" + oauthtest.ClientSecret))
	text := fmt.Sprintf("secret %s header Basic %s tokens tok-1-a8f3c9e1 tok-2-a8f3c9e1 Bearer tok-3-a8f3c9e1", oauthtest.ClientSecret, basic)
	out := red.String(text)
	for _, s := range []string{oauthtest.ClientSecret, "tok-1-a8f3c9e1", "tok-2-a8f3c9e1", "tok-3-a8f3c9e1"} {
		if hits := leaktest.Hits([]byte(out), s); len(hits) > 0 {
			t.Fatalf("%s survived redaction (%v): %s", s, hits, out)
		}
	}
}

func TestOAuth2_ACanceledCallerDoesNotWaitForAnotherCallersTokenRequest(t *testing.T) {
	bubble(t, testACanceledCallerDoesNotWait)
}

func testACanceledCallerDoesNotWait(t *testing.T, n *memnet.Network) {
	te := &oauthtest.TokenEndpoint{Gate: make(chan struct{})}
	c, base := memOAuthClient(t, n, te, &oauthtest.API{}, "", "", Options{})
	first := make(chan struct{})
	go func() {
		defer close(first)
		_, _ = get(t, c, base)
	}()
	defer func() {
		close(te.Gate)
		<-first
	}()
	synctest.Wait()
	if te.Requests.Load() == 0 {
		t.Fatal("no token request")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, Request{Method: http.MethodGet, URL: mustURL(t, base+"/items"), Idempotent: true})
	if he := asHTTPError(t, err); he.Kind != FailCanceled {
		t.Fatalf("kind %d, want canceled", he.Kind)
	}
}

// failingEndpoint answers every token request 500 until fixed is set.
func failingEndpoint(fixed *atomic.Bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if fixed != nil && fixed.Load() {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"tok-fixed-a8f3c9e1","token_type":"Bearer","expires_in":3600}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":"server_error"}`)
	}
}

// TestOAuth2_AFailedTokenRequestIsRememberedWithBackoff: after the token
// endpoint failed, the calls that follow within the backoff are answered
// from memory (saying so, and until when) without a token request; once
// the backoff is over, one request asks again, and a failure again doubles
// the wait. A success ends the memory.
func TestOAuth2_AFailedTokenRequestIsRememberedWithBackoff(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	var fixed atomic.Bool
	te := &oauthtest.TokenEndpoint{Answer: failingEndpoint(&fixed)}
	api := &oauthtest.API{}
	c, base := oauthClient(t, te, api, "", "", Options{Clock: clock})
	var problems []*envelope.Problem
	for range 5 {
		_, err := get(t, c, base.URL)
		problems = append(problems, ProblemFor(err, nil))
	}
	if n := te.Requests.Load(); n != 1 {
		t.Fatalf("5 calls in a row after a failure made %d token requests, want 1", n)
	}
	for i, p := range problems {
		if p.Code != envelope.ProblemTokenEndpointFailed || !p.Retryable {
			t.Fatalf("call %d: problem %s (retryable %v)", i+1, p.Code, p.Retryable)
		}
		if i > 0 && (p.RememberedUntil == "" || !strings.Contains(p.Detail, "from memory") || p.RetryAfterSeconds == nil || *p.RetryAfterSeconds > int(tokenBackoffBase/time.Second)) {
			t.Fatalf("call %d, answered without a request, does not say so and until when: %+v", i+1, p)
		}
	}
	clock.Advance(tokenBackoffBase)
	for range 3 {
		_, _ = get(t, c, base.URL)
	}
	if n := te.Requests.Load(); n != 2 {
		t.Fatalf("after the backoff, 3 calls made %d token requests in all, want 2 (one asks again)", n)
	}
	// The second failure doubled the wait.
	clock.Advance(tokenBackoffBase)
	if _, err := get(t, c, base.URL); err == nil || te.Requests.Load() != 2 {
		t.Fatalf("within the doubled backoff: %v, %d token requests", err, te.Requests.Load())
	}
	fixed.Store(true)
	clock.Advance(tokenBackoffBase)
	for range 3 {
		if _, err := get(t, c, base.URL); err != nil {
			t.Fatalf("the endpoint recovered, the backoff is over: %v", err)
		}
	}
	if n := te.Requests.Load(); n != 3 || api.Hits.Load() != 3 {
		t.Fatalf("%d token requests, %d API requests; want 3 and 3", n, api.Hits.Load())
	}
}

// TestOAuth2_ConcurrentCallsShareOneFailedTokenRequest: 5 calls waiting at
// once for a token that the endpoint then refuses to issue share the one
// request and its failure.
func TestOAuth2_ConcurrentCallsShareOneFailedTokenRequest(t *testing.T) {
	bubble(t, testConcurrentCallsShareOneFailedTokenRequest)
}

func testConcurrentCallsShareOneFailedTokenRequest(t *testing.T, n *memnet.Network) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	te := &oauthtest.TokenEndpoint{Answer: failingEndpoint(nil), Gate: make(chan struct{})}
	c, base := memOAuthClient(t, n, te, &oauthtest.API{}, "concurrency: 5", "", Options{Clock: clock})
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := get(t, c, base)
			errs <- err
		}()
	}
	synctest.Wait()
	if te.Requests.Load() == 0 {
		t.Fatal("every caller waits, and no token request was made")
	}
	close(te.Gate)
	for range 5 {
		if p := ProblemFor(<-errs, nil); p.Code != envelope.ProblemTokenEndpointFailed {
			t.Fatalf("problem %s", p.Code)
		}
	}
	if n := te.Requests.Load(); n != 1 {
		t.Fatalf("5 concurrent calls made %d token requests, want 1", n)
	}
}

// TestOAuth2_ASlowTokenEndpointCostsEachCallerOneTimeout: N callers
// waiting at once on a token endpoint that never answers share one
// request, so each waits for one timeout, not for N in a row.
func TestOAuth2_ASlowTokenEndpointCostsEachCallerOneTimeout(t *testing.T) {
	bubble(t, testASlowTokenEndpointCostsEachCallerOneTimeout)
}

func testASlowTokenEndpointCostsEachCallerOneTimeout(t *testing.T, nw *memnet.Network) {
	clock := clocktest.New(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	te := &oauthtest.TokenEndpoint{Answer: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }}
	const n = 6
	c, base := memOAuthClient(t, nw, te, &oauthtest.API{}, fmt.Sprintf("timeout: 100ms\nconcurrency: %d", n), "", Options{Clock: clock})
	start := time.Now()
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := get(t, c, base)
			errs <- err
		}()
	}
	for range n {
		if p := ProblemFor(<-errs, nil); p.Code != envelope.ProblemTokenEndpointTimeout {
			t.Fatalf("problem %s", p.Code)
		}
	}
	if got := te.Requests.Load(); got != 1 {
		t.Fatalf("%d concurrent callers made %d token requests, each a timeout waited for in turn; want 1", n, got)
	}
	if took := time.Since(start); took != 100*time.Millisecond {
		t.Fatalf("the callers waited %v in all, want one timeout (100ms)", took)
	}
}

// TestOAuth2_ASecretTheRefusalEchoesAcrossTheQuotesCutIsRedactedWhole: a
// token endpoint's refusal quotes the client secret where upstream_message
// is cut (300 characters): redacted before the cut, none of it is quoted,
// where redacting the quote after would have left its first half.
func TestOAuth2_ASecretTheRefusalEchoesAcrossTheQuotesCutIsRedactedWhole(t *testing.T) {
	pad := strings.Repeat("x", envelope.MaxUpstreamMessage-len("invalid_client: ")-len(oauthtest.ClientSecret)/2)
	te := &oauthtest.TokenEndpoint{Answer: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"%s%s was refused"}`, pad, oauthtest.ClientSecret)
	}}
	c, base := oauthClient(t, te, &oauthtest.API{}, "", "", Options{Redactor: redact.New()})
	_, err := get(t, c, base.URL)
	p := ProblemFor(err, nil)
	if p.Code != envelope.ProblemTokenClientRejected || !strings.HasPrefix(p.UpstreamMessage, "invalid_client: xxx") {
		t.Fatalf("problem %s, upstream_message %q", p.Code, p.UpstreamMessage)
	}
	if half := oauthtest.ClientSecret[:len(oauthtest.ClientSecret)/2]; strings.Contains(p.UpstreamMessage, half) {
		t.Fatalf("upstream_message quotes the secret's first half %q: %q", half, p.UpstreamMessage)
	}
}
