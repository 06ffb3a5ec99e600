package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/upstream/transport"
)

// tokenChecks obtains an access token as the runtime would (an OAuth 2.0
// credential only) and compares the scopes granted with those asked for.
func (p *prober) tokenChecks(ctx context.Context) {
	tok, err := p.r.Upstream.Token(ctx)
	if err == nil && tok == nil {
		return
	}
	if err != nil {
		var te *transport.TokenError
		if !errors.As(err, &te) {
			p.add("credential.token", Wrong, "no access token: "+err.Error(), "")
			return
		}
		pr := transport.ProblemFor(te, nil)
		evidence := string(pr.Code) + ": " + pr.Detail
		if pr.UpstreamMessage != "" {
			evidence += " The authorization server said: " + pr.UpstreamMessage
		}
		p.add("credential.token", Wrong, evidence, tokenHint(te.Kind))
		return
	}
	valid := "with no expiry named (renewed only when the API refuses it)"
	if tok.Lifetime > 0 {
		valid = fmt.Sprintf("valid %ds, renewed %ds before it expires", int(tok.Lifetime.Seconds()), int(tok.RenewMargin.Seconds()))
	}
	p.add("credential.token", OK, fmt.Sprintf("a bearer token from %s, %s", tok.Host, valid), "")
	want := tok.Asked
	granted := tok.Granted
	switch {
	case len(want) == 0 && len(granted) == 0:
	case len(granted) == 0:
		p.add("credential.scopes", Unverifiable, "the token response names no scope; by RFC 6749 §5.1 that means the scopes asked for ("+strings.Join(want, " ")+"), which the probe cannot confirm", "")
	default:
		var missing []string
		for _, s := range want {
			if !slices.Contains(granted, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			p.add("credential.scopes", Wrong, fmt.Sprintf("granted %q; not granted: %s", strings.Join(granted, " "), strings.Join(missing, " ")),
				"grant the scopes to the client at the authorization server, or take them out of credential.oauth2.scopes")
		} else {
			p.add("credential.scopes", OK, "granted "+strings.Join(granted, " "), "")
		}
	}
	p.add("credential.renewal", Unverifiable, "renewal is not exercised: a probe ends long before the token does", "")
}

// acceptedCheck says whether the API accepted the credential on the first
// page, and what a read-only probe cannot tell about it.
func (p *prober) acceptedCheck() {
	if !p.r.Upstream.Authenticated() {
		return
	}
	var he *transport.HTTPError
	switch {
	case p.first != nil:
		p.add("credential.accepted", OK, "the API answered the first page to the "+p.r.Upstream.Credential().Form+" credential", "")
	case errors.As(p.firstErr, &he) && he.CredentialRefused():
		p.add("credential.accepted", Wrong, refusedStatus(he)+refusedWhy(he), "check the secret, and for OAuth the audience, resource and scopes the API expects")
	case errors.As(p.firstErr, &he) && he.Kind == transport.FailStatus && he.Status == http.StatusForbidden:
		p.add("credential.accepted", Wrong, "the API accepted the credential but refused access to the list (403)", "grant the credential read access to the resource")
	default:
		return // the token, or the list itself, failed: said above
	}
	p.add("credential.writes", Unverifiable, "probe only reads (GET, and POST where a list or a read is asked by POST): whether the credential may write is not checked", "")
}

// refusedStatus names the answer that refused the credential: a 401, or
// another status the upstream's unauthorized declarations match.
func refusedStatus(he *transport.HTTPError) string {
	if he.Status == http.StatusUnauthorized {
		return "the API refused the credential (401)"
	}
	return fmt.Sprintf("the API refused the credential (%d, declared under unauthorized)", he.Status)
}

func refusedWhy(he *transport.HTTPError) string {
	if he.Renewed {
		return ", a token obtained just then included"
	}
	return ""
}

func tokenHint(k transport.TokenKind) string {
	switch k {
	case transport.TokenClientRejected:
		return "check credential.oauth2.client_id and the client secret, and that the client may use the client credentials grant"
	case transport.TokenRequestRejected:
		return "check credential.oauth2.scopes, audience and resource against what the client is granted"
	case transport.TokenServerError, transport.TokenTimeout, transport.TokenUnreachable:
		return "check credential.oauth2.token_url and the authorization server; try again later"
	}
	return "check that credential.oauth2.token_url is the authorization server's token endpoint"
}
