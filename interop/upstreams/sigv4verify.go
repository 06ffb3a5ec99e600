package upstreams

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// SigV4Verifier is interop/sigv4verify.mjs running in front of a
// DynamoDB-compatible server: it recomputes every request's AWS Signature
// Version 4 with AWS's own JavaScript signer (@smithy/signature-v4) from
// the one key it knows, answers a mismatch as DynamoDB does (400,
// InvalidSignatureException) and forwards the rest.
type SigV4Verifier struct {
	URL string
}

// SigV4Entry is one request the verifier saw.
type SigV4Entry struct {
	Seq           int    `json:"seq"`
	Target        string `json:"target"`
	AmzDate       string `json:"amz_date"`
	Signature     string `json:"signature"`
	SignedHeaders string `json:"signed_headers"`
	BodySHA256    string `json:"body_sha256"`
	Verified      bool   `json:"verified"`
	Why           string `json:"why"`
	Throttled     bool   `json:"throttled"`
}

// StartSigV4Verifier starts the verifier on a free loopback port in front
// of target (a base URL), knowing keyID and secret for region and service,
// and stops it when the test ends. It skips when node or the signer's
// packages are missing.
func StartSigV4Verifier(t testing.TB, target, keyID, secret, region, service string) *SigV4Verifier {
	t.Helper()
	Enabled(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not on PATH")
	}
	dir := interopDir(t)
	for _, pkg := range []string{"@smithy/signature-v4", "@aws-crypto/sha256-js"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json")); err != nil {
			missing(t, "interop/node_modules/%s is missing; run `npm ci` in interop/", pkg)
		}
	}
	base, _ := startProcess(t, "sigv4verify", dir, func(port int) []string {
		return []string{node, "sigv4verify.mjs", "--port", strconv.Itoa(port), "--target", target}
	}, answersOK("/__verifier"),
		"SIGV4_ACCESS_KEY_ID="+keyID, "SIGV4_SECRET_ACCESS_KEY="+secret, "SIGV4_REGION="+region, "SIGV4_SERVICE="+service)
	return &SigV4Verifier{URL: base}
}

// Log is every request the verifier saw since it started (or was reset),
// in order.
func (v *SigV4Verifier) Log(t testing.TB) []SigV4Entry {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodGet, v.URL+"/__verifier", nil, nil, http.StatusOK)
	if err != nil {
		t.Fatalf("sigv4verify: log: %v", err)
	}
	var doc struct {
		Log []SigV4Entry `json:"log"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("sigv4verify: log %q: %v", truncate(b, 200), err)
	}
	return doc.Log
}

// SetSecret makes the verifier know another secret (the key rotated:
// what airlock signs with no longer verifies).
func (v *SigV4Verifier) SetSecret(t testing.TB, secret string) {
	v.control(t, "secret", map[string]any{"secret": secret})
}

// Throttle answers the nth verified request naming target (an
// X-Amz-Target) as DynamoDB throttles, instead of forwarding it.
func (v *SigV4Verifier) Throttle(t testing.TB, target string, nth int) {
	v.control(t, "throttle", map[string]any{"target": target, "nth": nth})
}

// Reset empties the log and drops the throttle.
func (v *SigV4Verifier) Reset(t testing.TB) { v.control(t, "reset", map[string]any{}) }

func (v *SigV4Verifier) control(t testing.TB, route string, doc map[string]any) {
	t.Helper()
	b, _ := json.Marshal(doc)
	if _, body, err := call(t.Context(), http.MethodPost, v.URL+"/__verifier/"+route, http.Header{"Content-Type": {"application/json"}}, b, http.StatusOK); err != nil {
		t.Fatalf("sigv4verify: %s: %v %s", route, err, truncate(body, 200))
	}
}
