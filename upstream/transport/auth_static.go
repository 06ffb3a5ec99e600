package transport

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
)

// loadStatic reads a static secret sent in a header (Authorization:
// Bearer, unless header and scheme say otherwise).
func loadStatic(c *credential, cr *config.CredentialConfig, opts Options, _ time.Duration) ([]string, error) {
	secret, err := readSecret(config.SecretSource{Env: cr.Env, File: cr.File}, "credential", opts.Getenv)
	if err != nil {
		return nil, err
	}
	c.header = cr.Header
	if c.header == "" {
		c.header = "Authorization"
	}
	scheme := "Bearer"
	if cr.Scheme != nil {
		scheme = *cr.Scheme
	}
	c.value = strings.TrimSpace(scheme + " " + secret)
	c.secrets = append(credentialSecrets(c.value), secret)
	return []string{c.header, c.value}, nil
}

// loadQuery reads a static secret sent as a query parameter.
func loadQuery(c *credential, cr *config.CredentialConfig, opts Options, _ time.Duration) ([]string, error) {
	secret, err := readSecret(config.SecretSource{Env: cr.Env, File: cr.File}, "credential", opts.Getenv)
	if err != nil {
		return nil, err
	}
	c.query, c.key = cr.Query, secret
	c.secrets = []string{secret}
	return []string{c.query, c.key}, nil
}

// loadBasic reads HTTP Basic's user and password.
func loadBasic(c *credential, cr *config.CredentialConfig, opts Options, _ time.Duration) ([]string, error) {
	user, err := readSecret(cr.Basic.User, "credential: basic user", opts.Getenv)
	if err != nil {
		return nil, err
	}
	pass, err := readSecret(cr.Basic.Password, "credential: basic password", opts.Getenv)
	if err != nil {
		return nil, err
	}
	c.header = "Authorization"
	c.value = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	// The pair, the password and the base64 forms; never the user alone,
	// which may be an ordinary word.
	c.secrets = credentialSecrets(c.value)
	return []string{user, pass}, nil
}
