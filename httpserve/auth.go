package httpserve

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
)

// ResourceServer is an OAuth 2.0 resource server (package oauth) as the
// guard uses it: a token verifier, the binding of sessions to the
// principals that use them, and the metadata that challenges name.
type ResourceServer interface {
	// Verify returns the principal a bearer token names, or why it is
	// refused: a refusal with a Description method says which check
	// failed, in words fixed by the verifier.
	Verify(ctx context.Context, token string) (selection.Principal, error)
	// ClaimSession reports whether subject may use the session r names
	// (none: yes), binding the session to subject on first use.
	ClaimSession(r *http.Request, subject string) bool
	// MetadataURL is the protected-resource metadata's absolute URL, as
	// WWW-Authenticate names it.
	MetadataURL() string
	// ScopesSupported are the scopes a 401 challenge names.
	ScopesSupported() []string
	// RequiredScopes must all be in every token, besides tools.ScopeRead
	// or tools.ScopeWrite.
	RequiredScopes() []string
	// Metadata are the handlers of the protected-resource metadata, by
	// path; they need no token.
	Metadata() map[string]http.Handler
}

// principalKey keys the request's principal in a context.
type principalKey struct{}

// WithPrincipal returns ctx carrying who the request comes from.
func WithPrincipal(ctx context.Context, p selection.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries: the one the HTTP
// transport authenticated, or, without one (stdio), local.
func PrincipalFrom(ctx context.Context) selection.Principal {
	if p, ok := ctx.Value(principalKey{}).(selection.Principal); ok {
		return p
	}
	return selection.Principal{Subject: selection.SubjectLocal, ClientID: "stdio"}
}

// wellKnownMetadata is where every protected-resource metadata path starts
// (RFC 9728).
const wellKnownMetadata = "/.well-known/oauth-protected-resource"

// authenticate decides who a request comes from, before anything reads its
// body: with a static token or an OAuth resource server configured, a
// request without a valid bearer token is answered 401 (ok false), one
// whose token lacks a required scope 403; otherwise the request carries
// its principal. The protected-resource metadata needs no token.
func authenticate(w http.ResponseWriter, r *http.Request, opts Options) (*http.Request, bool) {
	if opts.OAuth == nil && opts.Token == "" {
		return r.WithContext(WithPrincipal(r.Context(), selection.Principal{Subject: selection.SubjectLocal, ClientID: "http"})), true
	}
	if opts.OAuth != nil && strings.HasPrefix(r.URL.Path, wellKnownMetadata) {
		return r, true
	}
	scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	raw = strings.TrimSpace(raw)
	if !strings.EqualFold(scheme, "Bearer") || raw == "" {
		challenge(w, opts, http.StatusUnauthorized, "", "", "missing bearer token")
		return nil, false
	}
	if opts.Token != "" && subtle.ConstantTimeCompare([]byte(raw), []byte(opts.Token)) == 1 {
		return r.WithContext(WithPrincipal(r.Context(), selection.Principal{Subject: selection.SubjectStaticToken, ClientID: "static-token"})), true
	}
	if opts.OAuth == nil {
		challenge(w, opts, http.StatusUnauthorized, "invalid_token", "", "wrong bearer token")
		return nil, false
	}
	p, err := opts.OAuth.Verify(r.Context(), raw)
	if err != nil {
		reason := "the token was refused"
		var described interface{ Description() string }
		if errors.As(err, &described) {
			reason = described.Description()
		}
		opts.Logger.Warn("refused an access token", "path", r.URL.Path, "reason", reason, "err", err)
		challenge(w, opts, http.StatusUnauthorized, "invalid_token", "", reason)
		return nil, false
	}
	// The scopes every token needs: the required ones and airlock:read
	// (unless it has airlock:write, which covers it).
	need := slices.Clone(opts.OAuth.RequiredScopes())
	if !slices.Contains(p.Scopes, tools.ScopeWrite) {
		need = append(need, tools.ScopeRead)
	}
	if slices.ContainsFunc(need, func(s string) bool { return !slices.Contains(p.Scopes, s) }) {
		opts.Logger.Warn("refused an access token without a required scope", "path", r.URL.Path, "subject", p.Recorded().Subject, "needs", need)
		challenge(w, opts, http.StatusForbidden, "insufficient_scope", strings.Join(need, " "), "the token lacks a scope this server requires")
		return nil, false
	}
	if !opts.OAuth.ClaimSession(r, p.Recorded().Subject) {
		opts.Logger.Warn("refused a request on another principal's session", "path", r.URL.Path, "subject", p.Recorded().Subject)
		http.Error(w, "no such session", http.StatusNotFound)
		return nil, false
	}
	return r.WithContext(WithPrincipal(r.Context(), p)), true
}

// challenge answers 401 or 403 with the WWW-Authenticate header the MCP
// authorization spec asks for (RFC 6750, RFC 9728: resource_metadata,
// error, scope) and a problem as the body.
func challenge(w http.ResponseWriter, opts Options, status int, errCode, scope, description string) {
	params := []string{}
	if opts.OAuth != nil {
		params = append(params, `resource_metadata="`+opts.OAuth.MetadataURL()+`"`)
	} else {
		params = append(params, `realm="airlock"`)
	}
	if errCode != "" {
		params = append(params, `error="`+errCode+`"`, `error_description="`+description+`"`)
	}
	if scope == "" && opts.OAuth != nil && status == http.StatusUnauthorized {
		scope = strings.Join(opts.OAuth.ScopesSupported(), " ")
	}
	if scope != "" {
		params = append(params, `scope="`+scope+`"`)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	code := envelope.ProblemInvalidToken
	if status == http.StatusForbidden {
		code = envelope.ProblemInsufficientScope
	}
	p := envelope.NewProblem(code, upperFirst(description)+".")
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(p.Marshal())
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// scopeGate answers 403 insufficient_scope, before the MCP server reads it,
// to a tools/call (alone or in a batch) of a tool the request's OAuth
// principal may not call, so that the client can ask for the scope it
// needs (the MCP authorization spec's step-up). The MCP server's tool
// filter refuses the same calls on any path this one does not see.
func scopeGate(next http.Handler, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := PrincipalFrom(r.Context())
		if !p.OAuth {
			next.ServeHTTP(w, r)
			return
		}
		for _, m := range Messages(r.Context()) {
			if m.Method != "tools/call" || tools.MayCall(p, m.Params.Name) {
				continue
			}
			tool := m.Params.Name
			opts.Logger.Warn("refused a tool call outside the token's scopes", "tool", tool, "subject", p.Recorded().Subject)
			challenge(w, opts, http.StatusForbidden, "insufficient_scope", strings.Join(append([]string{tools.ToolScope(tool)}, opts.OAuth.RequiredScopes()...), " "),
				"the token's scopes do not include the tool "+envelope.SafeName(tool))
			return
		}
		next.ServeHTTP(w, r)
	})
}
