package transport

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// loadOAuth2Form builds an OAuth 2.0 client's token source.
func loadOAuth2Form(c *credential, cr *config.CredentialConfig, opts Options, timeout time.Duration) ([]string, error) {
	ts, secrets, err := loadOAuth2(cr.OAuth2, opts, timeout)
	if err != nil {
		return nil, err
	}
	c.tokens = ts
	c.secrets = secrets
	return []string{ts.cfg.TokenURL, ts.cfg.ClientID, ts.cfg.ClientSecret, strings.Join(ts.cfg.Scopes, " "), ts.cfg.EndpointParams.Encode(), fmt.Sprint(ts.cfg.AuthStyle)}, nil
}

// loadOAuth2 builds the token source of an OAuth 2.0 client: the client
// secret read, the token endpoint's own HTTP client (the upstream's
// timeout, the proxy from the environment), the parameters of the grant.
func loadOAuth2(o *config.OAuth2Config, opts Options, timeout time.Duration) (*tokenSource, []string, error) {
	tokenURL, err := config.ExpandEnv(o.TokenURL, opts.Getenv)
	if err == nil {
		err = config.CheckTokenURL(tokenURL)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("credential: oauth2: token_url: %w", err)
	}
	clientID, err := config.ExpandEnv(o.ClientID, opts.Getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("credential: oauth2: client_id: %w", err)
	}
	secret, err := readSecret(o.ClientSecret, "credential: oauth2: client_secret", opts.Getenv)
	if err != nil {
		return nil, nil, err
	}
	params := url.Values{}
	if o.Audience != "" {
		params.Set("audience", o.Audience)
	}
	if o.Resource != "" {
		params.Set("resource", o.Resource)
	}
	style := oauth2.AuthStyleInHeader
	if o.AuthMethod == config.AuthClientSecretPost {
		style = oauth2.AuthStyleInParams
	}
	cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: tokenURL, Scopes: o.Scopes, EndpointParams: params, AuthStyle: style}
	hc := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: opts.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second},
		// The client secret goes to the token endpoint only.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	// The secret as sent: raw in a form body, URL-encoded, and in the
	// Basic header client_secret_basic builds (id and secret URL-encoded).
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(clientID)+":"+url.QueryEscape(secret)))
	secrets := append([]string{secret, url.QueryEscape(secret)}, credentialSecrets(basic)...)
	red := opts.Redactor
	ts := newTokenSource(cfg, hc, opts.Clock, opts.Logger, red, func(tok *oauth2.Token) {
		// Learned before the token is used, so that nothing it reaches
		// can carry it out.
		red.Add(tok.AccessToken, "Bearer "+tok.AccessToken, tok.RefreshToken)
		if id, ok := tok.Extra("id_token").(string); ok {
			red.Add(id)
		}
	})
	return ts, secrets, nil
}
