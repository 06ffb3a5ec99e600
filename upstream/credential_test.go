package upstream

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/internal/configtest"
	"github.com/airlock-mcp/airlock/internal/oauthtest"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/redact/leaktest"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// TestQueryKey_SentOnEveryPageAndKeptOutOfNextLinks: the key goes in the
// query of every request, the next links the upstream builds from it are
// followed, and the scan keeps (and would store) them without it.
func TestQueryKey_SentOnEveryPageAndKeptOutOfNextLinks(t *testing.T) {
	const key = "qk-51d0e2b7c9a4-api-key"
	var pages []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages = append(pages, r.URL.RawQuery)
		if r.URL.Query().Get("api_key") != key {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		page := r.URL.Query().Get("page")
		w.Header().Set("Content-Type", "application/json")
		if page == "" || page == "1" {
			// Built from the request's own URL, as json-server does.
			next := *r.URL
			q := next.Query()
			q.Set("page", "2")
			next.RawQuery = q.Encode()
			w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.String()))
			fmt.Fprint(w, `[{"id":"a"},{"id":"b"}]`)
			return
		}
		fmt.Fprint(w, `[{"id":"c"}]`)
	}))
	t.Cleanup(srv.Close)
	cfg, err := config.Parse(configtest.WithCredential("    credential: {env: KEY, query: api_key}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Upstreams["api"].BaseURL = srv.URL
	rt, err := Initialize(context.Background(), cfg, Options{Getenv: func(string) string { return key }})
	if err != nil {
		t.Fatal(err)
	}
	sink, out, err := scanAll(t, rt.Resources["items"], nil, Budget{MaxPages: 10})
	if err != nil || !out.ScanComplete || strings.Join(sink.ids, ",") != "a,b,c" {
		t.Fatalf("scan: %v complete %v ids %v (pages %v)", err, out.ScanComplete, sink.ids, pages)
	}
	for _, q := range pages {
		if !strings.Contains(q, "api_key="+key) {
			t.Fatalf("a request went without the key: %q", q)
		}
	}
	u := rt.Upstreams["api"].WithoutCredential(mustURL(t, srv.URL+"/items?page=2&api_key="+key))
	if strings.Contains(u.String(), key) || u.Query().Get("page") != "2" {
		t.Fatalf("the next link kept: %s", u)
	}
	if got := rt.Redactor.String("GET /items?api_key=" + key); strings.Contains(got, key) {
		t.Fatalf("a URL with the key is not redacted: %s", got)
	}
}

func TestBasic_UserAndPasswordReadSeparatelyAndRedactedInEveryForm(t *testing.T) {
	dir := t.TempDir()
	passFile := filepath.Join(dir, "pass")
	if err := os.WriteFile(passFile, []byte("pw-93kd0Qm1-basic-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		got = fmt.Sprint(u, ":", p, ok)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[]`)
	}))
	t.Cleanup(srv.Close)
	red := redact.New()
	c := newTestClient(t, srv.URL, "credential:\n  basic:\n    user: {env: SVC_USER}\n    password: {file: "+passFile+"}", Options{Redactor: red, Getenv: func(k string) string {
		if k == "SVC_USER" {
			return "svc-reader"
		}
		return ""
	}})
	if _, err := get(t, c, srv.URL); err != nil {
		t.Fatal(err)
	}
	if got != "svc-reader:pw-93kd0Qm1-basic-passwordtrue" {
		t.Fatalf("the API saw %q", got)
	}
	for _, form := range []string{"pw-93kd0Qm1-basic-password", "svc-reader:pw-93kd0Qm1-basic-password",
		base64.StdEncoding.EncodeToString([]byte("svc-reader:pw-93kd0Qm1-basic-password"))} {
		if out := red.String("x " + form + " y"); leaktest.Hits([]byte(out), "pw-93kd0Qm1-basic-password") != nil {
			t.Fatalf("%q survived redaction: %q", form, out)
		}
	}
	// The user alone is no secret: an ordinary word stays readable.
	if out := red.String("owner svc-reader"); out != "owner svc-reader" {
		t.Fatalf("the user alone was redacted: %q", out)
	}
}

// testPKI is a certificate authority with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files.
type testPKI struct {
	dir                 string
	caFile, cert, key   string
	serverTLS           *tls.Config
	otherCert, otherKey string // a client certificate of another authority
	pool                *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	mk := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		kb, _ := x509.MarshalECPrivateKey(k)
		return c, k, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "airlock test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caCert, caKey, caPEM, _ := mk(ca, nil, nil)
	_, _, srvPEM, srvKey := mk(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, caCert, caKey)
	_, _, cliPEM, cliKey := mk(&x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "airlock-client"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, caCert, caKey)
	other := &x509.Certificate{SerialNumber: big.NewInt(4), Subject: pkix.Name{CommonName: "stranger"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, BasicConstraintsValid: true}
	_, _, otherPEM, otherKey := mk(other, nil, nil)
	p := &testPKI{dir: dir}
	write := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	p.caFile, p.cert, p.key = write("ca.pem", caPEM), write("client.pem", cliPEM), write("client-key.pem", cliKey)
	p.otherCert, p.otherKey = write("other.pem", otherPEM), write("other-key.pem", otherKey)
	pair, err := tls.X509KeyPair(srvPEM, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(caCert)
	p.serverTLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: p.pool, MinVersion: tls.VersionTLS12}
	return p
}

// TestClientCertificate_MutualTLSWithTheConfiguredAuthority: a server
// that requires a client certificate of its authority answers airlock
// configured with one, and refuses the handshake of a client without it
// or with a stranger's.
func TestClientCertificate_MutualTLSWithTheConfiguredAuthority(t *testing.T) {
	pki := newTestPKI(t)
	var subjects []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		subjects = append(subjects, r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"id":"a"}]`)
	}))
	srv.TLS = pki.serverTLS
	srv.Config.ErrorLog = nil
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, fmt.Sprintf("credential:\n  client_certificate: {cert: %s, key: %s, ca: %s}", pki.cert, pki.key, pki.caFile), Options{})
	resp, err := get(t, c, srv.URL)
	if err != nil || resp.Status != 200 || len(subjects) != 1 || subjects[0] != "airlock-client" {
		t.Fatalf("with the client certificate: %v, subjects %v", err, subjects)
	}
	stranger := newTestClient(t, srv.URL, fmt.Sprintf("credential:\n  client_certificate: {cert: %s, key: %s, ca: %s}", pki.otherCert, pki.otherKey, pki.caFile), Options{})
	if _, err := get(t, stranger, srv.URL); err == nil {
		t.Fatal("a certificate of another authority was accepted")
	}
	if len(subjects) != 1 {
		t.Fatalf("the server answered a stranger: %v", subjects)
	}
	// A key that is not the certificate's fails at start-up.
	cfg, err := config.Parse(configtest.OneUpstream(srv.URL, fmt.Sprintf("credential:\n  client_certificate: {cert: %s, key: %s}", pki.cert, pki.otherKey)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Initialize(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "not a PEM certificate and its key") {
		t.Fatalf("a mismatched key: %v", err)
	}
}

// TestCredentialFingerprint_ChangesWithEveryMaterialNeverShowsIt: the
// fingerprint changes when any credential material changes and not when
// nothing does, and holds none of it.
func TestCredentialFingerprint_ChangesWithEveryMaterialNeverShowsIt(t *testing.T) {
	pki := newTestPKI(t)
	env := map[string]string{"TOKEN": "tok-value-1234", "U": "svc", "P": "pass-1234", "CS": oauthtest.ClientSecret}
	fp := func(cred string, change func(map[string]string)) string {
		t.Helper()
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		if change != nil {
			change(e)
		}
		cfg, err := config.Parse(configtest.WithCredential(cred))
		if err != nil {
			t.Fatal(err)
		}
		rt, err := Initialize(context.Background(), cfg, Options{Getenv: func(k string) string { return e[k] }})
		if err != nil {
			t.Fatal(err)
		}
		f := rt.CredentialFingerprint()
		for _, v := range e {
			if strings.Contains(f, v) {
				t.Fatalf("the fingerprint shows %q", v)
			}
		}
		return f
	}
	oauth := "    credential:\n      oauth2: {token_url: \"https://a.example/t\", client_id: airlock, client_secret: {env: CS}, scopes: [read]}"
	cert := fmt.Sprintf("    credential:\n      client_certificate: {cert: %s, key: %s}", pki.cert, pki.key)
	pairs := []struct {
		name string
		a, b string
	}{
		{"static secret", fp("    credential: {env: TOKEN}", nil), fp("    credential: {env: TOKEN}", func(e map[string]string) { e["TOKEN"] = "tok-value-5678" })},
		{"header", fp("    credential: {env: TOKEN}", nil), fp("    credential: {env: TOKEN, header: X-Key}", nil)},
		{"static to query", fp("    credential: {env: TOKEN}", nil), fp("    credential: {env: TOKEN, query: key}", nil)},
		{"basic password", fp("    credential:\n      basic: {user: {env: U}, password: {env: P}}", nil), fp("    credential:\n      basic: {user: {env: U}, password: {env: P}}", func(e map[string]string) { e["P"] = "pass-5678" })},
		{"basic user", fp("    credential:\n      basic: {user: {env: U}, password: {env: P}}", nil), fp("    credential:\n      basic: {user: {env: U}, password: {env: P}}", func(e map[string]string) { e["U"] = "svc2" })},
		{"client secret", fp(oauth, nil), fp(oauth, func(e map[string]string) { e["CS"] = "another-secret-1234" })},
		{"scopes", fp(oauth, nil), fp(strings.Replace(oauth, "[read]", "[read, write]", 1), nil)},
		{"client id", fp(oauth, nil), fp(strings.Replace(oauth, "client_id: airlock", "client_id: other", 1), nil)},
		{"certificate", fp(cert, nil), fp(fmt.Sprintf("    credential:\n      client_certificate: {cert: %s, key: %s}", pki.otherCert, pki.otherKey), nil)},
	}
	for _, p := range pairs {
		if p.a == p.b {
			t.Errorf("%s: the fingerprint did not change", p.name)
		}
	}
	// Two runtimes of the same credential (a restart) agree.
	if again := fp(oauth, nil); again != pairs[5].a {
		t.Error("the same credential gives another fingerprint")
	}
}

func TestCredentialInfo_NamesTheFormAndTheSourceNeverTheSecret(t *testing.T) {
	for _, tc := range []struct {
		cred string
		want transport.CredentialInfo
	}{
		{"credential: {env: TEST_TOKEN}", transport.CredentialInfo{Form: config.FormStatic, Sources: []string{"env TEST_TOKEN"}, Header: "Authorization"}},
		{"credential: {env: TEST_TOKEN, query: api_key}", transport.CredentialInfo{Form: config.FormQuery, Sources: []string{"env TEST_TOKEN"}, Query: "api_key"}},
		{"credential:\n  basic: {user: {env: TEST_TOKEN}, password: {env: TEST_TOKEN}}", transport.CredentialInfo{Form: config.FormBasic, Sources: []string{"env TEST_TOKEN", "env TEST_TOKEN"}, Header: "Authorization"}},
		{"credential:\n  oauth2: {token_url: \"https://login.example/t\", client_id: a, client_secret: {env: TEST_TOKEN}, scopes: [read]}", transport.CredentialInfo{Form: config.FormOAuth2, Sources: []string{"env TEST_TOKEN"}, Header: "Authorization", TokenURL: "https://login.example/t", Scopes: []string{"read"}}},
	} {
		c := newTestClient(t, "http://127.0.0.1:1", tc.cred, Options{})
		got := c.Credential()
		if fmt.Sprint(*got) != fmt.Sprint(tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.cred, *got, tc.want)
		}
		if strings.Contains(fmt.Sprint(*got), testSecret) {
			t.Errorf("the secret shows: %+v", *got)
		}
	}
}
