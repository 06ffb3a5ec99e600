package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/airlock-mcp/airlock/oauth"
)

// oauthOptions are serve's OAuth resource-server flags; each defaults to
// its environment variable.
type oauthOptions struct {
	issuer, resource, audiences, scopes, jwks, groups, skew string
}

func (o *oauthOptions) register(f *flags) {
	f.StringVar(&o.issuer, "oauth-issuer", os.Getenv("AIRLOCK_OAUTH_ISSUER"),
		"with --http: accept OAuth access tokens (JWT) of the authorization server whose issuer is `URL` (default $AIRLOCK_OAUTH_ISSUER)")
	f.StringVar(&o.resource, "oauth-resource", os.Getenv("AIRLOCK_OAUTH_RESOURCE"),
		"with --oauth-issuer: this server's resource identifier, the `URL` of /mcp as clients reach it; tokens must be for it (default $AIRLOCK_OAUTH_RESOURCE)")
	f.StringVar(&o.audiences, "oauth-audience", os.Getenv("AIRLOCK_OAUTH_AUDIENCE"),
		"with --oauth-issuer: other audiences accepted besides the resource, a comma-separated `LIST` (default $AIRLOCK_OAUTH_AUDIENCE)")
	f.StringVar(&o.scopes, "oauth-required-scopes", os.Getenv("AIRLOCK_OAUTH_REQUIRED_SCOPES"),
		"with --oauth-issuer: scopes every token must carry besides airlock:read or airlock:write, a comma-separated `LIST` (default $AIRLOCK_OAUTH_REQUIRED_SCOPES)")
	f.StringVar(&o.jwks, "oauth-jwks", os.Getenv("AIRLOCK_OAUTH_JWKS_URL"),
		"with --oauth-issuer: the issuer's signing keys at `URL`, instead of its discovery document's jwks_uri (default $AIRLOCK_OAUTH_JWKS_URL)")
	f.StringVar(&o.groups, "oauth-groups-claim", os.Getenv("AIRLOCK_OAUTH_GROUPS_CLAIM"),
		"with --oauth-issuer: the `CLAIM` holding a principal's groups (default $AIRLOCK_OAUTH_GROUPS_CLAIM, else groups)")
	f.StringVar(&o.skew, "oauth-skew", os.Getenv("AIRLOCK_OAUTH_SKEW"),
		"with --oauth-issuer: the clock skew tolerated on a token's expiry, a `DURATION` (default $AIRLOCK_OAUTH_SKEW, else 30s)")
}

// set reports whether any OAuth flag was given.
func (o *oauthOptions) set() bool {
	return o.issuer != "" || o.resource != "" || o.audiences != "" || o.scopes != "" || o.jwks != "" || o.groups != "" || o.skew != ""
}

// check reports a wrong combination as a usage error, before anything
// starts.
func (o *oauthOptions) check(http bool) error {
	switch {
	case !o.set():
		return nil
	case !http:
		return usagef("the --oauth flags need --http: stdio needs no token")
	case o.issuer == "" || o.resource == "":
		return usagef("OAuth needs both --oauth-issuer and --oauth-resource")
	}
	if o.skew != "" {
		if d, err := time.ParseDuration(o.skew); err != nil || d < 0 {
			return usagef("--oauth-skew %q: want a duration such as 30s", o.skew)
		}
	}
	return nil
}

// build is the resource server, or nil when OAuth is off. It reads the
// issuer's discovery document unless --oauth-jwks is set.
func (o *oauthOptions) build(ctx context.Context) (*oauth.ResourceServer, error) {
	if !o.set() {
		return nil, nil
	}
	opts := oauth.Options{Issuer: o.issuer, Resource: o.resource, Audiences: splitList(o.audiences),
		RequiredScopes: splitList(o.scopes), JWKSURL: o.jwks, GroupsClaim: o.groups}
	if o.skew != "" {
		d, _ := time.ParseDuration(o.skew)
		opts.Skew = d
		if d == 0 {
			opts.Skew = -1 // none
		}
	}
	rs, err := oauth.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("--oauth-issuer %q: %w", o.issuer, err)
	}
	return rs, nil
}
