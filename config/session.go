package config

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// FormSession is a session credential: a login whose answer (a cookie, a
// token in the body) authorizes the next requests.
const FormSession = "session"

// SessionConfig is a login as a credential form (MediaWiki's action=login
// with a bot password, after a login token; etcd's /v3/auth/authenticate;
// a Django session): Steps are sent in order when the first request needs
// the session and again when the API says it ended; every cookie their
// answers set is kept and sent with the upstream's requests, and Header
// sends a token a step captured. CSRF is the token a write carries
// (MediaWiki's meta=tokens), fetched once per login, in CSRFField of a
// form body or in CSRFHeader. Expired is how the API says the session
// ended besides 401 (MediaWiki answers 200 with error code
// assertuserfailed, or badtoken for a token of an ended session).
type SessionConfig struct {
	// Secrets are read when airlock starts, each from an environment
	// variable or a file, and redacted everywhere; the steps name them
	// {{secrets.NAME}}.
	Secrets    map[string]SecretSource `yaml:"secrets"`
	Steps      []SessionStep           `yaml:"steps"`
	Header     *SessionHeader          `yaml:"header"`
	CSRF       *SessionStep            `yaml:"csrf"`
	CSRFField  string                  `yaml:"csrf_field"`
	CSRFHeader string                  `yaml:"csrf_header"`
	Expired    *SessionExpiry          `yaml:"expired"`
}

// SessionStep is one request of a login: its method, its path (which may
// hold a query), its form or JSON body, the values it captures from the
// answer (name: a body path) and what proves it succeeded. Values are
// templates: {{secrets.NAME}}, {{STEP.CAPTURE}} of an earlier step, and
// ${VAR} read from the environment when airlock starts.
type SessionStep struct {
	Name    string            `yaml:"name"`
	Method  string            `yaml:"method"`
	Path    string            `yaml:"path"`
	Form    map[string]string `yaml:"form"`
	JSON    map[string]string `yaml:"json"`
	Capture map[string]string `yaml:"capture"`
	Success *SessionSuccess   `yaml:"success"`
}

// SessionSuccess is what a step's answer must hold to have succeeded: the
// value at Path equals Equals (MediaWiki's login.result: Success; its
// failures answer 200 too).
type SessionSuccess struct {
	Path   string `yaml:"path"`
	Equals string `yaml:"equals"`
}

// SessionHeader sends a captured token on every request (etcd:
// Authorization: <token>, without a scheme).
type SessionHeader struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// SessionExpiry is how the API says the session ended: a status (401 is
// always one), or a 2xx whose body holds one of Values at Path.
type SessionExpiry struct {
	Status []int    `yaml:"status"`
	Path   string   `yaml:"path"`
	Values []string `yaml:"values"`
}

var (
	sessionRef  = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	stepName    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	csrfStepRef = "csrf"
)

// SessionRefs lists the {{a.b}} references of a session template.
func SessionRefs(t string) [][2]string {
	var out [][2]string
	for _, m := range sessionRef.FindAllStringSubmatch(t, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// RenderSession fills a session template: {{secrets.NAME}} and
// {{STEP.CAPTURE}} from values (keyed "secrets.NAME", "STEP.CAPTURE").
func RenderSession(t string, values map[string]string) (string, error) {
	var missing string
	out := sessionRef.ReplaceAllStringFunc(t, func(ref string) string {
		m := sessionRef.FindStringSubmatch(ref)
		v, ok := values[m[1]+"."+m[2]]
		if !ok && missing == "" {
			missing = m[1] + "." + m[2]
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("the session template reference %q has no value", missing)
	}
	return out, nil
}

// validateSession checks a session credential: its secrets, each step
// (names, methods, paths, bodies, what every reference names), the
// header, the CSRF step and where its token goes, and the expiry.
var sessionKind = CredentialKind{
	Name:   FormSession,
	keys:   []string{"session"},
	chosen: func(c *CredentialConfig) bool { return c.Session != nil },
	check: func(l *errList, c *CredentialConfig, p []string) {
		validateSession(l, c.Session, append(append([]string(nil), p...), "session"))
	},
	sources: func(c *CredentialConfig) []namedSource {
		var out []namedSource
		for _, name := range slices.Sorted(maps.Keys(c.Session.Secrets)) {
			out = append(out, namedSource{"session secret " + name, c.Session.Secrets[name]})
		}
		return out
	},
}

func validateSession(l *errList, s *SessionConfig, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	for _, name := range slices.Sorted(maps.Keys(s.Secrets)) {
		if !stepName.MatchString(name) {
			l.add("a secret's name is lowercase letters, digits and _", at("secrets", name)...)
		}
		validateSecretSource(l, s.Secrets[name], at("secrets", name))
	}
	if len(s.Steps) == 0 {
		l.add("required: the login's requests, in order", at("steps")...)
	}
	known := map[string]bool{}
	for n := range s.Secrets {
		known["secrets."+n] = true
	}
	steps := map[string]bool{"secrets": true, csrfStepRef: true}
	for i, st := range s.Steps {
		sp := at("steps", fmt.Sprint(i))
		switch {
		case !stepName.MatchString(st.Name):
			l.add("required: a name of lowercase letters, digits and _ (its captures are {{NAME.VALUE}})", append(sp, "name")...)
		case steps[st.Name]:
			l.add(fmt.Sprintf("the name %q is taken", st.Name), append(sp, "name")...)
		}
		steps[st.Name] = true
		validateSessionStep(l, st, known, sp)
		for c := range st.Capture {
			known[st.Name+"."+c] = true
		}
	}
	if h := s.Header; h != nil {
		if h.Name == "" || strings.ContainsAny(h.Name, " :\t") {
			l.add("required: an HTTP header name", at("header", "name")...)
		}
		checkSessionRefs(l, h.Value, known, at("header", "value"))
		if len(SessionRefs(h.Value)) == 0 {
			l.add("the header sends what a step captured: {{STEP.VALUE}}", at("header", "value")...)
		}
	}
	if c := s.CSRF; c != nil {
		if c.Name != "" && c.Name != csrfStepRef {
			l.add("the CSRF step's name is csrf", at("csrf", "name")...)
		}
		validateSessionStep(l, *c, known, at("csrf"))
		if len(c.Capture) != 1 || c.Capture["token"] == "" {
			l.add("the CSRF step captures exactly one value, token: its path in the answer", at("csrf", "capture")...)
		}
		if (s.CSRFField == "") == (s.CSRFHeader == "") {
			l.add("set one of csrf_field (a write's form field) or csrf_header", at("csrf")...)
		}
	} else if s.CSRFField != "" || s.CSRFHeader != "" {
		l.add("csrf_field and csrf_header send the token of a csrf step: declare csrf", at("csrf_field")...)
	}
	if e := s.Expired; e != nil {
		for i, st := range e.Status {
			if st < 200 || st > 599 {
				l.add("an HTTP status", at("expired", "status", fmt.Sprint(i))...)
			}
		}
		if (e.Path == "") != (len(e.Values) == 0) {
			l.add("path and values go together: the body's member and what in it says the session ended", at("expired")...)
		}
	}
}

func validateSessionStep(l *errList, st SessionStep, known map[string]bool, sp []string) {
	at := func(k ...string) []string { return append(append([]string(nil), sp...), k...) }
	switch strings.ToUpper(st.Method) {
	case http.MethodGet, http.MethodPost:
	default:
		l.add("must be GET or POST", at("method")...)
	}
	if !strings.HasPrefix(st.Path, "/") {
		l.add("required: an absolute path on the upstream (it may hold a query)", at("path")...)
	}
	checkPathQuery(l, st.Path, at("path"))
	checkSessionRefs(l, st.Path, known, at("path"))
	if len(st.Form) > 0 && len(st.JSON) > 0 {
		l.add("set one of form or json", at("form")...)
	}
	if (len(st.Form) > 0 || len(st.JSON) > 0) && !strings.EqualFold(st.Method, http.MethodPost) {
		l.add("a body is sent by POST", at("method")...)
	}
	for key, body := range map[string]map[string]string{"form": st.Form, "json": st.JSON} {
		for _, k := range slices.Sorted(maps.Keys(body)) {
			checkSessionRefs(l, body[k], known, at(key, k))
			if bad := badEnvRefs(body[k]); bad != "" {
				l.add(bad, at(key, k)...)
			}
		}
	}
	for _, c := range slices.Sorted(maps.Keys(st.Capture)) {
		if !stepName.MatchString(c) || st.Capture[c] == "" {
			l.add("a capture is name: the value's path in the answer", at("capture", c)...)
		}
	}
	if s := st.Success; s != nil && (s.Path == "" || s.Equals == "") {
		l.add("path and equals are required", at("success")...)
	}
}

func checkSessionRefs(l *errList, t string, known map[string]bool, where []string) {
	for _, r := range SessionRefs(t) {
		if !known[r[0]+"."+r[1]] {
			l.add(fmt.Sprintf("{{%s.%s}} names no secret and no value an earlier step captured", r[0], r[1]), where...)
		}
	}
	if strings.Contains(t, "{{") && len(SessionRefs(t)) == 0 {
		l.add("a reference is {{secrets.NAME}} or {{STEP.VALUE}}", where...)
	}
}
