package mcpserver

import (
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/oauth"
	"github.com/airlock-mcp/airlock/tools"

	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkAuthOverhead measures what validating an OAuth access token adds
// to a tool call, against the static token in the same run: each b.N
// iteration sends the same call through the streamable HTTP transport three
// times on one session, in rotating order: with the static token, with one
// JWT (RS256, 2048-bit key, testIssuer) that every iteration reuses, as a
// client does until its token expires (verified once, then remembered),
// and with a JWT used for the first time (minted before the timer runs).
// Two calls: a cheap one (get_operation of an unknown id, a small problem)
// and describe_resources (the demo's whole description, about 20 KB).
// Metrics: the mean wall time of each (`static-µs`, `reused-µs`,
// `fresh-µs`), their ratios to the static token's (`ratio-reused`,
// `ratio-fresh`), the time added per call (`added-reused-µs`,
// `added-fresh-µs`), and the mean time of one full validation alone
// (`verify-µs`, OAuth.verify on the reused token).
func BenchmarkAuthOverhead(b *testing.B) {
	for _, c := range []struct{ name, body string }{
		{"call=get_operation", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_operation","arguments":{"operation_id":"op_unknown"}}}`},
		{"call=describe_resources", callBody("describe_resources")},
	} {
		b.Run(c.name, func(b *testing.B) { benchAuth(b, c.body) })
	}
}

func benchAuth(b *testing.B, call string) {
	key := newIssuerKey(b, "k1")
	iss := newTestIssuer(b, key)
	h := newHarness(b)
	srv, err := NewServer(h.deps, Options{})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	resource := "http://" + hs.Listener.Addr().String() + "/mcp"
	rs, err := oauth.New(context.Background(), oauth.Options{Issuer: iss.URL, Resource: resource})
	if err != nil {
		b.Fatal(err)
	}
	hs.Config.Handler = NewHTTPHandler(srv, HTTPOptions{Options: httpserve.Options{OAuth: rs, Token: "static-s3cret"}})
	hs.Start()
	b.Cleanup(hs.Close)
	now := time.Now()
	reused := sign(b, key, iss.claims(resource, "bench", tools.ScopeWrite, now, time.Hour))
	fresh, unseen := make([]string, b.N), make([]string, b.N)
	for i := range fresh {
		c := iss.claims(resource, "bench", tools.ScopeWrite, now, time.Hour)
		c["jti"] = fmt.Sprintf("bench-%d", i)
		fresh[i] = sign(b, key, c)
		c["jti"] = fmt.Sprintf("bench-unseen-%d", i)
		unseen[i] = sign(b, key, c)
	}

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func(token, session, body string) (string, time.Duration) {
		req, _ := http.NewRequest(http.MethodPost, resource, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(start)
		if resp.StatusCode/100 != 2 || (strings.Contains(body, `"id"`) && n == 0) {
			b.Fatalf("status %d (%d bytes)", resp.StatusCode, n)
		}
		return resp.Header.Get("Mcp-Session-Id"), took
	}
	session, _ := post("static-s3cret", "", initialize)
	post("static-s3cret", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Warm every path (the JWKS is fetched on the first token).
	post("static-s3cret", session, call)
	post(reused, session, call)

	var static, withReused, withFresh, verify time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 3 {
			switch (i + k) % 3 {
			case 0:
				_, d := post("static-s3cret", session, call)
				static += d
			case 1:
				_, d := post(reused, session, call)
				withReused += d
			case 2:
				_, d := post(fresh[i], session, call)
				withFresh += d
			}
		}
		// A token never seen: every check, the signature's included.
		start := time.Now()
		if _, err := rs.Verify(context.Background(), unseen[i]); err != nil {
			b.Fatal(err)
		}
		verify += time.Since(start)
	}
	n := float64(b.N)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / n }
	b.ReportMetric(us(static), "static-µs")
	b.ReportMetric(us(withReused), "reused-µs")
	b.ReportMetric(us(withFresh), "fresh-µs")
	b.ReportMetric(float64(withReused)/float64(static), "ratio-reused")
	b.ReportMetric(float64(withFresh)/float64(static), "ratio-fresh")
	b.ReportMetric(us(withReused-static), "added-reused-µs")
	b.ReportMetric(us(withFresh-static), "added-fresh-µs")
	b.ReportMetric(us(verify), "verify-µs")
}
