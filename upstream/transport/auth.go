package transport

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
)

// credential is an upstream's loaded credential: what Do adds to every
// request, the TLS identity, and what must be redacted wherever it shows.
type credential struct {
	// header and value: a static secret or Basic, sent as is.
	header, value string
	// query and key: a static secret sent as a query parameter.
	query, key string
	// tokens: an OAuth 2.0 access token, obtained and renewed.
	tokens *tokenSource
	// session: a login whose cookies or captured token authorize, with
	// the CSRF token of writes (see session.go).
	session *session
	// sigv4: AWS Signature Version 4, each attempt signed.
	sigv4 *sigV4
	// tls: a client certificate (and the authorities trusted), for mTLS.
	tls *tls.Config
	// secrets are every form of the credential's secrets to redact.
	secrets []string
	// print identifies the credential's material (a hash), for
	// CredentialFingerprint.
	print []byte
}

// readSecret reads one secret from its environment variable or file,
// trimmed; an empty one is an error naming where it was looked for.
func readSecret(src config.SecretSource, what string, getenv func(string) string) (string, error) {
	if src.Env != "" {
		v := strings.TrimSpace(getenv(src.Env))
		if v == "" {
			return "", fmt.Errorf("%s: environment variable %q is empty or unset", what, src.Env)
		}
		return v, nil
	}
	b, err := os.ReadFile(src.File)
	if err != nil {
		return "", fmt.Errorf("%s: read file %q: %w", what, src.File, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s: file %q is empty", what, src.File)
	}
	return v, nil
}

// loadForm reads one credential form's secrets into c (what Do sends and
// what to redact) and returns the material its fingerprint mixes.
type loadForm func(c *credential, cr *config.CredentialConfig, opts Options, timeout time.Duration) (material []string, err error)

// credentialLoaders is every credential form's loader, keyed by the form
// config's table of credential kinds names (a test holds the two to the
// same forms). client_certificate, which goes with any form, is loaded
// by loadCredential itself.
var credentialLoaders = map[string]loadForm{
	config.FormStatic:  loadStatic,
	config.FormQuery:   loadQuery,
	config.FormBasic:   loadBasic,
	config.FormSession: loadSessionSecrets,
	config.FormOAuth2:  loadOAuth2Form,
	config.FormSigV4:   loadSigV4Form,
}

// loadCredential reads every secret a credential names and builds what
// Do needs: failing at start-up, not at the first call.
func loadCredential(cr *config.CredentialConfig, opts Options, timeout time.Duration) (*credential, error) {
	c := &credential{}
	h := sha256.New()
	mix := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	mix(cr.Form())
	if load := credentialLoaders[cr.Form()]; load != nil {
		material, err := load(c, cr, opts, timeout)
		if err != nil {
			return nil, err
		}
		mix(material...)
	}
	if cc := cr.ClientCertificate; cc != nil {
		cfg, material, err := loadClientCert(cc)
		if err != nil {
			return nil, err
		}
		c.tls = cfg
		mix(material...)
	}
	c.print = h.Sum(nil)
	return c, nil
}

// loadClientCert reads a client certificate and its key (and the trusted
// authorities, when named) into a TLS configuration. It returns the files'
// bytes for the fingerprint.
func loadClientCert(cc *config.ClientCertConfig) (*tls.Config, []string, error) {
	certPEM, err := os.ReadFile(cc.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("credential: client_certificate: read cert %q: %w", cc.Cert, err)
	}
	keyPEM, err := os.ReadFile(cc.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("credential: client_certificate: read key %q: %w", cc.Key, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The parser's message never holds key material.
		return nil, nil, fmt.Errorf("credential: client_certificate: %q and %q are not a PEM certificate and its key: %w", cc.Cert, cc.Key, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	material := []string{string(certPEM), string(keyPEM)}
	if cc.CA != "" {
		caPEM, err := os.ReadFile(cc.CA)
		if err != nil {
			return nil, nil, fmt.Errorf("credential: client_certificate: read ca %q: %w", cc.CA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, nil, fmt.Errorf("credential: client_certificate: ca %q holds no PEM certificate", cc.CA)
		}
		cfg.RootCAs = pool
		material = append(material, string(caPEM))
	}
	return cfg, material, nil
}

// apply adds the credential to an outbound request: a header, a query
// parameter, or an access token (obtained or renewed when due). It
// returns the access token sent ("" for the other forms).
func (c *credential) apply(ctx context.Context, req *http.Request) (string, error) {
	switch {
	case c.session != nil:
		gen, err := c.session.ensure(ctx)
		if err != nil {
			return "", err
		}
		name, value, err := c.session.header(gen)
		if err != nil {
			return "", err
		}
		if name != "" {
			req.Header.Set(name, value)
		}
		return sessionMark + strconv.FormatInt(gen, 10), nil
	case c.tokens != nil:
		tok, err := c.tokens.token(ctx)
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return tok.AccessToken, nil
	case c.sigv4 != nil:
		var hash []byte
		if info, ok := ctx.Value(reqInfoKey).(*reqInfo); ok {
			hash = info.payloadHash
		}
		if hash == nil {
			hash = payloadHash(nil)
		}
		return "", c.sigv4.sign(req, hash)
	case c.query != "":
		// The rest of the query is kept as it was written (a next link
		// is the upstream's own encoding).
		req.URL.RawQuery = setQueryParam(req.URL.RawQuery, c.query, c.key, false)
	case c.value != "":
		req.Header.Set(c.header, c.value)
	}
	return "", nil
}

// stripCredential removes the query credential from a URL an upstream
// handed back (a next link built from the request's own URL), so that
// airlock never keeps, stores or returns it; Do adds it again.
func (c *credential) stripCredential(u *url.URL) *url.URL {
	if c == nil || c.query == "" || u == nil {
		return u
	}
	if !u.Query().Has(c.query) {
		return u
	}
	out := *u
	out.RawQuery = dropQueryParam(u.RawQuery, c.query)
	return &out
}

// sessionMark prefixes what apply returns for a session: the login's
// number, which a refusal names to drop it.
const sessionMark = "session:"

// refused drops what a refused request was sent with: the access token,
// or the session's login.
func (c *credential) refused(used string) {
	if gen, ok := strings.CutPrefix(used, sessionMark); ok && c.session != nil {
		n, _ := strconv.ParseInt(gen, 10, 64)
		c.session.refused(n)
		return
	}
	if c.tokens != nil {
		c.tokens.refused(used)
	}
}
