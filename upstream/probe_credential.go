package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// tokenChecks obtains an access token as the runtime would (an OAuth 2.0
// credential only) and compares the scopes granted with those asked for.
func (p *prober) tokenChecks(ctx context.Context) {
	c := p.r.Upstream.cred
	if c == nil || c.tokens == nil {
		return
	}
	ts := c.tokens
	tok, err := ts.token(ctx)
	if err != nil {
		var te *TokenError
		if !errors.As(err, &te) {
			p.add("credential.token", ProbeWrong, "no access token: "+err.Error(), "")
			return
		}
		pr := tokenProblem(te)
		evidence := string(pr.Code) + ": " + pr.Detail
		if pr.UpstreamMessage != "" {
			evidence += " The authorization server said: " + pr.UpstreamMessage
		}
		p.add("credential.token", ProbeWrong, evidence, tokenHint(te.Kind))
		return
	}
	life := lifetime(tok)
	valid := "with no expiry named (renewed only when the API refuses it)"
	if life > 0 {
		valid = fmt.Sprintf("valid %ds, renewed %ds before it expires", int(life.Seconds()), int(renewMargin(life).Seconds()))
	}
	p.add("credential.token", ProbeOK, fmt.Sprintf("a bearer token from %s, %s", ts.host, valid), "")
	want := ts.cfg.Scopes
	granted := strings.Fields(grantedScope(tok))
	switch {
	case len(want) == 0 && len(granted) == 0:
	case len(granted) == 0:
		p.add("credential.scopes", ProbeUnverifiable, "the token response names no scope; by RFC 6749 §5.1 that means the scopes asked for ("+strings.Join(want, " ")+"), which the probe cannot confirm", "")
	default:
		var missing []string
		for _, s := range want {
			if !slices.Contains(granted, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			p.add("credential.scopes", ProbeWrong, fmt.Sprintf("granted %q; not granted: %s", strings.Join(granted, " "), strings.Join(missing, " ")),
				"grant the scopes to the client at the authorization server, or take them out of credential.oauth2.scopes")
		} else {
			p.add("credential.scopes", ProbeOK, "granted "+strings.Join(granted, " "), "")
		}
	}
	p.add("credential.renewal", ProbeUnverifiable, "renewal is not exercised: a probe ends long before the token does", "")
}

// acceptedCheck says whether the API accepted the credential on the first
// page, and what a read-only probe cannot tell about it.
func (p *prober) acceptedCheck() {
	if p.r.Upstream.cred == nil {
		return
	}
	var he *HTTPError
	switch {
	case p.first != nil:
		p.add("credential.accepted", ProbeOK, "the API answered the first page to the "+p.r.Upstream.credConfig.Form()+" credential", "")
	case errors.As(p.firstErr, &he) && he.Kind == FailStatus && he.Status == http.StatusUnauthorized:
		p.add("credential.accepted", ProbeWrong, "the API refused the credential (401)"+refusedWhy(he), "check the secret, and for OAuth the audience, resource and scopes the API expects")
	case errors.As(p.firstErr, &he) && he.Kind == FailStatus && he.Status == http.StatusForbidden:
		p.add("credential.accepted", ProbeWrong, "the API accepted the credential but refused access to the list (403)", "grant the credential read access to the resource")
	default:
		return // the token, or the list itself, failed: said above
	}
	p.add("credential.writes", ProbeUnverifiable, "probe sends only GET requests: whether the credential may write is not checked", "")
}

func refusedWhy(he *HTTPError) string {
	if he.Renewed {
		return ", a token obtained just then included"
	}
	return ""
}

func tokenHint(k TokenKind) string {
	switch k {
	case TokenClientRejected:
		return "check credential.oauth2.client_id and the client secret, and that the client may use the client credentials grant"
	case TokenRequestRejected:
		return "check credential.oauth2.scopes, audience and resource against what the client is granted"
	case TokenServerError, TokenTimeout, TokenUnreachable:
		return "check credential.oauth2.token_url and the authorization server; try again later"
	}
	return "check that credential.oauth2.token_url is the authorization server's token endpoint"
}
