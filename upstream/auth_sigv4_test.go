package upstream

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/clock/clocktest"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// The credentials and the time of AWS's published Signature Version 4 test
// suite (docs.aws.amazon.com, "Signature Version 4 test suite").
const (
	vectorKeyID  = "AKIDEXAMPLE"
	vectorSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	vectorToken  = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
)

var vectorTime = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)

// sigv4Upstream is a configuration whose upstream api, at
// http://example.amazonaws.com, signs with the test suite's credentials
// for service "service" in us-east-1; every connection reaches srv.
type sigv4Upstream struct {
	rt  *Runtime
	clk *clocktest.Fake
}

func newSigV4Upstream(t *testing.T, srv *httptest.Server, extra string) *sigv4Upstream {
	return newSigV4UpstreamWith(t, srv, extra, Options{})
}

func newSigV4UpstreamWith(t *testing.T, srv *httptest.Server, extra string, opts Options) *sigv4Upstream {
	t.Helper()
	cred := "    credential:\n      aws_sigv4:\n        access_key_id: {env: AWS_ACCESS_KEY_ID}\n        secret_access_key: {env: AWS_SECRET_ACCESS_KEY}\n        region: us-east-1\n        service: service\n" + extra
	cfg, err := config.Parse(configtest.WithCredential(cred))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Upstreams["api"].BaseURL = "http://example.amazonaws.com"
	clk := clocktest.New(vectorTime)
	env := map[string]string{"AWS_ACCESS_KEY_ID": vectorKeyID, "AWS_SECRET_ACCESS_KEY": vectorSecret, "AWS_SESSION_TOKEN": vectorToken}
	addr := srv.Listener.Addr().String()
	opts.Getenv = func(k string) string { return env[k] }
	opts.Clock = clk
	opts.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	rt, err := Initialize(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &sigv4Upstream{rt: rt, clk: clk}
}

// signedSeen records what each request carried.
type signedSeen struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *signedSeen) add(r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func (s *signedSeen) last() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[len(s.reqs)-1]
}

func recordingServer(t *testing.T, s *signedSeen, answer http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r.Clone(context.Background()))
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func okJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{}`))
}

// TestSigV4_SignsAsAWSPublishes: the requests of AWS's own test suite,
// sent through an upstream with the suite's credentials and time, carry
// exactly the Authorization header AWS publishes for them.
func TestSigV4_SignsAsAWSPublishes(t *testing.T) {
	var s signedSeen
	up := newSigV4Upstream(t, recordingServer(t, &s, okJSON), "")
	const prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature="
	for _, v := range []struct{ name, method, url, sig string }{
		{"get-vanilla", "GET", "http://example.amazonaws.com/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"get-vanilla-query-order-key-case", "GET", "http://example.amazonaws.com/?Param2=value2&Param1=value1", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
		{"post-vanilla", "POST", "http://example.amazonaws.com/", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"},
		{"post-vanilla-query", "POST", "http://example.amazonaws.com/?Param1=value1", "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"},
	} {
		u, _ := url.Parse(v.url)
		if _, err := up.rt.Upstreams["api"].Do(context.Background(), transport.Request{Method: v.method, URL: u}); err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		r := s.last()
		if got := r.Header.Get("Authorization"); got != prefix+v.sig {
			t.Errorf("%s: Authorization\n got %s\nwant %s", v.name, got, prefix+v.sig)
		}
		if got := r.Header.Get("X-Amz-Date"); got != "20150830T123600Z" {
			t.Errorf("%s: X-Amz-Date %q", v.name, got)
		}
	}
}

// TestSigV4_TheSignatureCoversTheBodyAndTheOperation: two requests that
// differ by one byte of body, or by the operation X-Amz-Target names, are
// signed differently, and the same request at the same time the same; the
// session token is sent and signed; the secret itself is sent nowhere.
func TestSigV4_TheSignatureCoversTheBodyAndTheOperation(t *testing.T) {
	var s signedSeen
	up := newSigV4Upstream(t, recordingServer(t, &s, okJSON), "        session_token: {env: AWS_SESSION_TOKEN}\n")
	sig := func(body, target string) string {
		t.Helper()
		u, _ := url.Parse("http://example.amazonaws.com/")
		h := http.Header{"X-Amz-Target": {target}, "Content-Type": {"application/x-amz-json-1.0"}}
		if _, err := up.rt.Upstreams["api"].Do(context.Background(), transport.Request{Method: "POST", URL: u, Body: []byte(body), Header: h}); err != nil {
			t.Fatal(err)
		}
		r := s.last()
		if got := r.Header.Get("X-Amz-Security-Token"); got != vectorToken {
			t.Fatalf("the session token was not sent: %q", got)
		}
		auth := r.Header.Get("Authorization")
		if !strings.Contains(auth, "SignedHeaders=host;x-amz-date;x-amz-security-token;x-amz-target,") {
			t.Fatalf("the token and the operation are not signed: %s", auth)
		}
		_, sig, _ := strings.Cut(auth, "Signature=")
		return sig
	}
	scan := sig(`{"TableName":"accounts","Limit":25}`, "DynamoDB_20120810.Scan")
	if again := sig(`{"TableName":"accounts","Limit":25}`, "DynamoDB_20120810.Scan"); again != scan {
		t.Errorf("the same request at the same time signed twice differently: %s, %s", scan, again)
	}
	if other := sig(`{"TableName":"accounts","Limit":26}`, "DynamoDB_20120810.Scan"); other == scan {
		t.Errorf("a body one byte different has the same signature: the body is not covered")
	}
	if other := sig(`{"TableName":"accounts","Limit":25}`, "DynamoDB_20120810.UpdateItem"); other == scan {
		t.Errorf("another operation has the same signature: X-Amz-Target is not covered")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		var wire strings.Builder
		r.Header.Write(&wire)
		wire.WriteString(r.URL.String())
		if hits := leaktest.Hits([]byte(wire.String()), vectorSecret); hits != nil {
			t.Fatalf("the secret access key was sent (%v): %s", hits, wire.String())
		}
	}
}

// TestSigV4_EachAttemptIsSignedAtItsOwnTime: a read retried after a
// Retry-After of ten minutes (past the five minutes AWS allows a
// signature's clock to drift) is signed again at the attempt's time.
func TestSigV4_EachAttemptIsSignedAtItsOwnTime(t *testing.T) {
	var s signedSeen
	var mu sync.Mutex
	calls := 0
	srv := recordingServer(t, &s, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			w.Header().Set("Retry-After", "600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		okJSON(w, r)
	})
	up := newSigV4UpstreamWith(t, srv, "", Options{MaxRetryWait: 15 * time.Minute})
	// No deadline: the wait is on the test's clock, advanced below.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if up.clk.BlockUntil(ctx, 1) == nil {
			up.clk.Advance(10 * time.Minute)
		}
	}()
	u, _ := url.Parse("http://example.amazonaws.com/")
	if _, err := up.rt.Upstreams["api"].Do(ctx, transport.Request{Method: "GET", URL: u, Idempotent: true}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) != 2 {
		t.Fatalf("%d attempts, want 2", len(s.reqs))
	}
	first, second := s.reqs[0].Header, s.reqs[1].Header
	if first.Get("X-Amz-Date") != "20150830T123600Z" || second.Get("X-Amz-Date") != "20150830T124600Z" {
		t.Fatalf("attempts signed at %q and %q", first.Get("X-Amz-Date"), second.Get("X-Amz-Date"))
	}
	if first.Get("Authorization") == second.Get("Authorization") {
		t.Fatal("the retry carried the first attempt's signature")
	}
}

// TestSigV4_WhatAnUpstreamEchoesIsRedacted: the key id is in every
// Authorization header and the session token in X-Amz-Security-Token; an
// error answer that quotes them is redacted, and describe_resources names
// the form, the region and the service, never a value.
func TestSigV4_WhatAnUpstreamEchoesIsRedacted(t *testing.T) {
	var s signedSeen
	srv := recordingServer(t, &s, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token ` + r.Header.Get("X-Amz-Security-Token") + ` is invalid for ` + r.Header.Get("Authorization") + `"}`))
	})
	up := newSigV4Upstream(t, srv, "        session_token: {env: AWS_SESSION_TOKEN}\n")
	u, _ := url.Parse("http://example.amazonaws.com/")
	_, err := up.rt.Upstreams["api"].Do(context.Background(), transport.Request{Method: "POST", URL: u, Body: []byte(`{}`)})
	he, ok := err.(*transport.HTTPError)
	if !ok {
		t.Fatalf("want an HTTPError, got %v", err)
	}
	msg := up.rt.Redactor.String(transport.UpstreamMessage(he.Header, he.Body))
	if !strings.Contains(msg, "is invalid") {
		t.Fatalf("the message is lost: %q", msg)
	}
	for _, secret := range []string{vectorToken, vectorKeyID, vectorSecret} {
		if hits := leaktest.Hits([]byte(msg), secret); hits != nil {
			t.Errorf("%.12s… survives redaction (%v): %s", secret, hits, msg)
		}
	}
	info := up.rt.Upstreams["api"].Credential()
	if info.Form != config.FormSigV4 || info.Region != "us-east-1" || info.Service != "service" ||
		strings.Join(info.Sources, ",") != "env AWS_ACCESS_KEY_ID,env AWS_SECRET_ACCESS_KEY,env AWS_SESSION_TOKEN" {
		t.Fatalf("credential described as %+v", info)
	}
}
