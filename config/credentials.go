package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A credential form is a kind, like a pagination dialect: the keys it
// reads, its checks, the secrets it reads and how airlock check says it
// live in its file (credential_NAME.go), and its row in credentialKinds
// is the one place that says it exists. A credential names one form; a key
// of another form is refused with its line, never accepted and ignored.
// client_certificate is not a form of its own here: it goes with any.

// CredentialKind is one credential form.
type CredentialKind struct {
	// Name is the form's name, as describe_resources and airlock check
	// say it.
	Name string
	// keys are the credential's keys the form reads.
	keys []string
	// chosen says whether a credential names this form.
	chosen func(c *CredentialConfig) bool
	// check reports what is wrong in the form's keys (at the credential's
	// path p).
	check func(l *errList, c *CredentialConfig, p []string)
	// sources are the secrets the form reads, in order.
	sources func(c *CredentialConfig) []namedSource
	// summary says the form for airlock check, given its secrets' states
	// (nil: "FORM credential, …").
	summary func(c *CredentialConfig, parts []string) string
}

// credentialKinds is every credential form, in the order Form chooses
// between them. A new form is its file here, its loader in upstream (a row
// in upstream's table of loaders) and this row.
var credentialKinds = [...]CredentialKind{
	sessionKind, sigV4Kind, oauth2Kind, basicKind, queryKind, staticKind,
}

// CredentialKindOf returns the credential form named name.
func CredentialKindOf(name string) (CredentialKind, bool) {
	for _, k := range credentialKinds {
		if k.Name == name {
			return k, true
		}
	}
	return CredentialKind{}, false
}

// CredentialKinds returns every credential form, a copy of the table.
func CredentialKinds() []CredentialKind { return slices.Clone(credentialKinds[:]) }

// Keys returns the credential keys the form reads (client_certificate,
// which goes with every form, included), sorted.
func (k CredentialKind) Keys() []string {
	keys := append(slices.Clone(k.keys), "client_certificate")
	slices.Sort(keys)
	return keys
}

// Reads reports whether the form reads the credential key.
func (k CredentialKind) Reads(key string) bool { return slices.Contains(k.Keys(), key) }

// Form names the credential's form, or client_certificate when it has
// none but a certificate ("" when it has neither).
func (c *CredentialConfig) Form() string {
	for _, k := range credentialKinds {
		if k.chosen(c) {
			return k.Name
		}
	}
	if c.ClientCertificate != nil {
		return FormClientCertificate
	}
	return ""
}

// setCredentialKeys are the credential's keys that hold a value, in the
// order the configuration type declares them.
func setCredentialKeys(c *CredentialConfig) []string {
	var out []string
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" && !v.Field(i).IsZero() {
			out = append(out, name)
		}
	}
	return out
}

// formNames is the list of forms as an error names them.
func formNames() string {
	var names []string
	for _, k := range credentialKinds {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

func validateCredential(l *errList, c *CredentialConfig, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	var chosen []CredentialKind
	for _, k := range credentialKinds {
		if k.chosen(c) {
			chosen = append(chosen, k)
		}
	}
	switch {
	case len(chosen) == 0 && c.ClientCertificate == nil:
		if c.Header != "" || c.Scheme != nil {
			// A header without the secret it carries.
			l.add("set exactly one of env or file", p...)
			break
		}
		l.add("set one form: env or file (a static secret), "+strings.Join([]string{"query", "basic", "oauth2", "session", "aws_sigv4"}, ", ")+" or client_certificate", p...)
	case len(chosen) > 1:
		var names []string
		for _, k := range chosen {
			names = append(names, k.Name)
		}
		l.add(fmt.Sprintf("one form per credential (%s set): forms are %s; only client_certificate goes with another", strings.Join(names, " and "), formNames()), p...)
	case len(chosen) == 1:
		k := chosen[0]
		for _, key := range setCredentialKeys(c) {
			if k.Reads(key) {
				continue
			}
			var readers []string
			for _, o := range credentialKinds {
				if o.Reads(key) {
					readers = append(readers, o.Name)
				}
			}
			l.add(fmt.Sprintf("the %s form does not read %s; %s reads it", k.Name, key, strings.Join(readers, ", ")), at(key)...)
		}
	}
	for _, k := range chosen {
		if k.check != nil {
			k.check(l, c, p)
		}
	}
	if cc := c.ClientCertificate; cc != nil {
		if cc.Cert == "" {
			l.add("required: the PEM file of the client certificate", at("client_certificate", "cert")...)
		}
		if cc.Key == "" {
			l.add("required: the PEM file of the certificate's private key", at("client_certificate", "key")...)
		}
	}
}

// credentialSources lists every secret a credential reads, with what it
// is, for airlock check's warnings and summary.
func credentialSources(c *CredentialConfig) []namedSource {
	var out []namedSource
	for _, k := range credentialKinds {
		if k.chosen(c) && k.sources != nil {
			out = append(out, k.sources(c)...)
		}
	}
	return out
}
