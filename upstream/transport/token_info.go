package transport

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/internal/clock"
)

// What the client holds about its credential and rate limit, for checks
// of a configuration against the live API (package probe).

// RateLimited reports whether a client-side rate limit is configured.
func (c *Client) RateLimited() bool { return c.limiter != nil }

// TokenInfo is what an access token, obtained as the runtime would, says.
type TokenInfo struct {
	// Host is the authorization server's.
	Host string
	// Lifetime is 0 when the token names no expiry; it is renewed
	// RenewMargin before it ends.
	Lifetime, RenewMargin time.Duration
	// Asked are the scopes asked for; Granted those the token response
	// names (none: by RFC 6749 §5.1, the scopes asked for).
	Asked, Granted []string
}

// Token obtains an access token as the runtime would, for an OAuth 2.0
// credential; nil and no error for any other. A refusal is a *TokenError.
func (c *Client) Token(ctx context.Context) (*TokenInfo, error) {
	if c.cred == nil || c.cred.tokens == nil {
		return nil, nil
	}
	ts := c.cred.tokens
	tok, err := ts.token(ctx)
	if err != nil {
		return nil, err
	}
	info := &TokenInfo{Host: ts.host, Lifetime: lifetime(tok), Asked: ts.cfg.Scopes, Granted: strings.Fields(grantedScope(tok))}
	if info.Lifetime > 0 {
		info.RenewMargin = renewMargin(info.Lifetime)
	}
	return info, nil
}

// Authenticated reports whether the client sends a credential: one is
// configured and was loaded.
func (c *Client) Authenticated() bool { return c.cred != nil }

// CredentialPrint identifies the credential's material (a hash, never the
// material itself), for a fingerprint of the credentials a runtime sends;
// nil when the client sends none.
func (c *Client) CredentialPrint() []byte {
	if c.cred == nil {
		return nil
	}
	return c.cred.print
}

// QueryCredential is the query parameter a query credential is sent in;
// "" for any other credential, or none.
func (c *Client) QueryCredential() string {
	if c.cred == nil {
		return ""
	}
	return c.cred.query
}

// Base is the upstream's base URL.
func (c *Client) Base() *url.URL { return c.base }

// Clock is the client's clock.
func (c *Client) Clock() clock.Clock { return c.clock }
