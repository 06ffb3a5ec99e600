package draft

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/airlock-mcp/airlock/config"
)

// What an OpenAPI document says of the upstream itself: its name, base
// URL and credential.

func environment(opts Options) string {
	if opts.Environment != "" {
		return opts.Environment
	}
	return config.Todo("name this deployment, e.g. prod or staging")
}

func upstreamFromDoc(t *openapi3.T, opts Options) upstreamDraft {
	u := upstreamDraft{name: "api"}
	if t.Info != nil {
		if n := snake(strings.TrimSuffix(strings.TrimSpace(t.Info.Title), " API")); n != "" {
			u.name = strings.Join(firstN(strings.Split(n, "_"), 3), "_")
		}
	}
	switch {
	case opts.BaseURL != "":
		u.baseURL = opts.BaseURL
	case len(t.Servers) > 0 && t.Servers[0] != nil:
		s := t.Servers[0]
		base := s.URL
		for name, v := range s.Variables {
			if v != nil {
				base = strings.ReplaceAll(base, "{"+name+"}", v.Default)
			}
		}
		if pu, err := url.Parse(base); err == nil && pu.IsAbs() && (pu.Scheme == "http" || pu.Scheme == "https") {
			u.baseURL = strings.TrimRight(base, "/")
			u.baseNote = "the document's first server"
		} else {
			u.baseURL = config.Todo("the API's absolute base URL; the document's server is relative")
		}
	default:
		u.baseURL = config.Todo("the API's base URL; the document names no server")
	}
	return u
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// credentialFromDoc drafts the credential from the document's security
// requirements (the top level's, else the drafted operations'). A
// requirement is drafted whole or not at all: airlock sends one
// credential, so an alternative that one secret satisfies is preferred,
// and a requirement of several schemes together (X-Auth-Email with
// X-Auth-Key) is a TODO naming them, never half of it.
func credentialFromDoc(t *openapi3.T, upstreamName string, ops []*openapi3.Operation) (*credDraft, string) {
	if t.Components == nil || len(t.Components.SecuritySchemes) == 0 {
		return nil, "the document declares no security scheme: no credential is sent"
	}
	schemes := t.Components.SecuritySchemes
	reqs := t.Security
	where := "the document's security"
	if len(reqs) == 0 {
		where = "the drafted operations' security"
		for _, op := range ops {
			if op.Security != nil && len(*op.Security) > 0 {
				reqs = *op.Security
				break
			}
		}
	}
	if len(reqs) == 0 {
		names := slices.Sorted(maps.Keys(schemes))
		if len(names) == 1 {
			if ref := schemes[names[0]]; ref != nil && ref.Value != nil {
				cred, note := credentialFromScheme(names[0], ref.Value, upstreamName)
				return cred, note + " (the only scheme the document declares; it requires none by name)"
			}
		}
		return &credDraft{env: todo("the credential: the document declares the schemes " + strings.Join(names, ", ") + " and requires none of them by name; pick one and write it as docs/config.md says")}, ""
	}
	type option struct {
		name  string
		score int
	}
	var best *option
	var together []string
	anonymous := false
	for _, req := range reqs {
		names := slices.Sorted(maps.Keys(req))
		switch len(names) {
		case 0:
			anonymous = true
			continue
		case 1:
		default:
			together = append(together, strings.Join(names, " + "))
			continue
		}
		ref := schemes[names[0]]
		if ref == nil || ref.Value == nil {
			continue
		}
		if o := (option{names[0], schemePreference(ref.Value)}); o.score > 0 && (best == nil || o.score > best.score) {
			best = &o
		}
	}
	if best != nil {
		cred, note := credentialFromScheme(best.name, schemes[best.name].Value, upstreamName)
		if len(together) > 0 {
			note += "; chosen over " + strings.Join(together, ", ") + ", which need several secrets together"
		}
		if anonymous {
			note += "; " + where + " also allows no credential"
		}
		return cred, note
	}
	if len(together) > 0 {
		return &credDraft{env: todo("the credential: " + where + " requires " + strings.Join(together, " or ") + " together, and airlock sends one secret; a scheme one secret satisfies [a bearer token] is not offered")}, ""
	}
	if anonymous {
		return nil, where + " requires no credential: none is sent"
	}
	return &credDraft{env: todo("the credential: " + where + " names no scheme airlock can send")}, ""
}

// schemePreference ranks a scheme by how plainly one secret satisfies
// it (0: airlock cannot send it).
func schemePreference(s *openapi3.SecurityScheme) int {
	switch {
	case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"):
		return 6
	case s.Type == "oauth2" && s.Flows != nil && s.Flows.ClientCredentials != nil:
		return 5
	case s.Type == "apiKey" && s.In == "header":
		return 4
	case s.Type == "http" && strings.EqualFold(s.Scheme, "basic"):
		return 3
	case s.Type == "apiKey" && s.In == "query":
		return 2
	case s.Type == "oauth2" || s.Type == "openIdConnect":
		return 1
	}
	return 0
}
