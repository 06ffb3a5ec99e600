package transport

import "github.com/airlock-mcp/airlock/config"

// CredentialInfo describes an upstream's credential without its secrets:
// the form, where each secret is read (an environment variable's name or
// a file's path) and how it is sent.
type CredentialInfo struct {
	Form string `json:"form"`
	// Sources are where the secrets are read: "env NAME" or "file PATH".
	Sources []string `json:"sources,omitempty"`
	// Header or Query is where a static secret is sent.
	Header string `json:"header,omitempty"`
	Query  string `json:"query,omitempty"`
	// TokenURL and Scopes describe an OAuth 2.0 client.
	TokenURL string   `json:"token_url,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	Resource string   `json:"resource,omitempty"`
	Audience string   `json:"audience,omitempty"`
	// Region and Service are what an AWS Signature Version 4 signs for.
	Region  string `json:"region,omitempty"`
	Service string `json:"service,omitempty"`
	// ClientCertificate is the client certificate's file, for mTLS.
	ClientCertificate string `json:"client_certificate,omitempty"`
}

// Credential describes the upstream's credential (nil when it sends none).
func (c *Client) Credential() *CredentialInfo {
	cr := c.credConfig
	if cr == nil {
		return nil
	}
	info := &CredentialInfo{Form: cr.Form()}
	info.Sources = cr.Sources()
	switch info.Form {
	case config.FormStatic:
		info.Header = cr.Header
		if info.Header == "" {
			info.Header = "Authorization"
		}
	case config.FormQuery:
		info.Query = cr.Query
	case config.FormBasic:
		info.Header = "Authorization"
	case config.FormSigV4:
		info.Header = "Authorization"
		info.Region, info.Service = cr.SigV4.Region, cr.SigV4.Service
	case config.FormOAuth2:
		info.Header = "Authorization"
		info.TokenURL = c.tokenURL
		info.Scopes = append([]string(nil), cr.OAuth2.Scopes...)
		info.Resource, info.Audience = cr.OAuth2.Resource, cr.OAuth2.Audience
	}
	if cc := cr.ClientCertificate; cc != nil {
		info.ClientCertificate = cc.Cert
		info.Sources = append(info.Sources, "file "+cc.Key)
	}
	return info
}
