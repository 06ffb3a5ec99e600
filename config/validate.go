package config

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config/strictyaml"
)

type errList struct {
	c    *Config
	errs Errors
}

func (l *errList) add(msg string, path ...string) {
	l.errs = append(l.errs, Error{Line: l.c.line(path...), Path: strings.Join(path, "."), Msg: msg})
}

func (c *Config) validate() Errors {
	l := &errList{c: c}
	l.errs = append(l.errs, fromYAML(strictyaml.NullKeys(c.root))...)
	if c.Environment == "" {
		l.add("required: name the environment (it is shown beside every answer)", "environment")
	}
	if len(c.Upstreams) == 0 {
		l.add("required: at least one upstream", "upstreams")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		u := c.Upstreams[name]
		if u == nil {
			l.add("empty upstream", "upstreams", name)
			continue
		}
		validateUpstream(l, name, u)
	}
	if len(c.Resources) == 0 {
		l.add("required: at least one resource", "resources")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Resources)) {
		r := c.Resources[name]
		if r == nil {
			l.add("empty resource", "resources", name)
			continue
		}
		c.validateResource(l, name, r)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Actions)) {
		a := c.Actions[name]
		if a == nil {
			l.add("empty action", "actions", name)
			continue
		}
		c.validateAction(l, name, a)
	}
	l.errs = append(l.errs, c.unfilledPlaceholders()...)
	sort.SliceStable(l.errs, func(i, j int) bool { return l.errs[i].Line < l.errs[j].Line })
	return l.errs
}

func validateUpstream(l *errList, name string, u *UpstreamConfig) {
	p := []string{"upstreams", name}
	at := func(k string) []string { return append(append([]string(nil), p...), k) }
	if u.BaseURL == "" {
		l.add("required", at("base_url")...)
	} else if bad := badEnvRefs(u.BaseURL); bad != "" {
		l.add(bad, at("base_url")...)
	} else if wholeEnvRef(u.BaseURL) {
		// The whole URL comes from the environment: checked at start-up.
	} else if bu, err := url.Parse(placeholderEnv(u.BaseURL)); err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" {
		l.add("must be an absolute http or https URL", at("base_url")...)
	} else if bu.User != nil {
		l.add("must not carry credentials; use credential.env or credential.file", at("base_url")...)
	}
	if u.Verify != "" && u.Verify != VerifyAnswer && u.Verify != VerifyReread {
		l.add("use answer or reread", at("verify")...)
	}
	if c := u.Credential; c != nil {
		validateCredential(l, c, at("credential"))
	}
	validQueryEncoding(l, u.QueryEncoding, at("query_encoding"))
	if u.Timeout < 0 {
		l.add("must not be negative", at("timeout")...)
	}
	if u.Retries != nil && (*u.Retries < 0 || *u.Retries > 10) {
		l.add("must be between 0 and 10", at("retries")...)
	}
	if u.RateLimit.PerSecond < 0 || u.RateLimit.Burst < 0 {
		l.add("must not be negative", at("rate_limit")...)
	}
	validateWaits(l, u, at)
	validateUnauthorized(l, u, at)
	validateOverlaps(l, u, at)
	if u.Concurrency < 0 || u.Concurrency > 64 {
		l.add("must be between 1 and 64", at("concurrency")...)
	}
	for h := range u.Headers {
		if strings.EqualFold(h, "authorization") || strings.EqualFold(h, "cookie") {
			l.add("credentials belong in credential, not in headers", at("headers")...)
		}
	}
	for i, mt := range u.JSONMediaTypes {
		if !jsonMediaType(mt) {
			l.add("must be a media type such as application/x-amz-json-1.0, without parameters", append(at("json_media_types"), strconv.Itoa(i))...)
		}
	}
}

// jsonMediaType says whether v is a bare media type (type/subtype, in
// lower case, with no parameters).
func jsonMediaType(v string) bool {
	mt, params, err := mime.ParseMediaType(v)
	return err == nil && len(params) == 0 && mt == v && strings.Count(mt, "/") == 1 && !strings.HasSuffix(mt, "/") && !strings.HasPrefix(mt, "/")
}

// The range of max_retry_after: no shorter than the wait airlock names
// itself for a failure that names none (10 s), no longer than a day.
const (
	minMaxRetryAfter = 10 * time.Second
	maxMaxRetryAfter = 24 * time.Hour
)

// validateWaits checks the bound on the upstream's waits and its throttling
// declarations.
func validateWaits(l *errList, u *UpstreamConfig, at func(string) []string) {
	if d := u.MaxRetryAfter; d != 0 && (d < minMaxRetryAfter || d > maxMaxRetryAfter || d%time.Second != 0) {
		l.add("must be whole seconds between 10s and 24h", at("max_retry_after")...)
	}
	for i, t := range u.Throttling {
		p := append(at("throttling"), strconv.Itoa(i))
		switch {
		case t.Status == http.StatusTooManyRequests:
			l.add("429 is always a rate limit; declare other statuses", append(p, "status")...)
		case t.Status < 400 || t.Status > 599:
			l.add("required: an error status (400 to 599)", append(p, "status")...)
		}
		validateMatch(l, t, p)
	}
	for i, t := range u.Conflicts {
		p := append(at("conflicts"), strconv.Itoa(i))
		switch {
		case t.Status == http.StatusConflict || t.Status == http.StatusPreconditionFailed:
			l.add("409 and 412 are always conflicts; declare other statuses", append(p, "status")...)
		case t.Status < 400 || t.Status > 499:
			l.add("required: a refusal's status (400 to 499)", append(p, "status")...)
		}
		if t.Member == "" {
			// A whole status (every 400) would read a malformed write as
			// a changed target.
			l.add("required: the body member that names the conflict (__type)", append(p, "member")...)
		}
		validateMatch(l, t, p)
	}
}

// validateMatch checks a declared error answer's member and match.
func validateMatch(l *errList, t ThrottlingConfig, p []string) {
	switch {
	case t.Member != "" && t.Match == "":
		l.add("required with member: the text the member's value ends with", append(p, "match")...)
	case t.Member == "" && t.Match != "":
		l.add("match needs member: the body member whose value it matches", append(p, "match")...)
	}
}

// validateResource checks one resource, part by part; every error is
// reported, none stops the others.
func (c *Config) validateResource(l *errList, name string, r *ResourceConfig) {
	p := []string{"resources", name}
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	if r.Upstream == "" {
		l.add("required", at("upstream")...)
	} else if _, ok := c.Upstreams[r.Upstream]; !ok {
		l.add(fmt.Sprintf("no upstream named %q", r.Upstream), at("upstream")...)
	}
	if r.List.Path == "" || !strings.HasPrefix(r.List.Path, "/") {
		l.add("required: an absolute path such as /v1/items", at("list", "path")...)
	}
	validateListPathQuery(l, r, at)
	if r.IDField == "" {
		l.add("required: the field holding each item's stable id", at("id_field")...)
	}
	validateList(l, r, at)
	c.validateDialect(l, r, at)
	validateFields(l, r, at)
	validateDefaults(l, r, at)
	validateSources(l, r, at)
	validateSignals(l, r, at)
	validateLimits(l, r, at)
	validateGet(l, r, at)
	validateReview(l, r, at)
	validateInvariants(l, r.Fields, r.Invariants, at("invariants"))
	if ct := r.Contract; ct != nil && (ct.Schema == "") == (ct.OpenAPI == nil) {
		l.add("set exactly one of schema or openapi", at("contract")...)
	}
}

// validateFields checks the declared fields: each one, and that none reads
// what a sensitive field withholds.
func validateFields(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if f := r.List.ScalarItemField; f != "" {
		if _, ok := r.Fields[f]; !ok {
			l.add(fmt.Sprintf("field %q is not declared", f), at("list", "scalar_item_field")...)
		}
	}
	if len(r.Fields) == 0 {
		l.add("required: declare the fields airlock may read", at("fields")...)
	}
	if r.IDField != "" && len(r.Fields) > 0 {
		if _, ok := r.Fields[r.IDField]; !ok {
			l.add("the id field must be declared in fields", at("id_field")...)
		}
	}
	for _, fname := range slices.Sorted(maps.Keys(r.Fields)) {
		f := r.Fields[fname]
		if f == nil {
			l.add("empty field", at("fields", fname)...)
			continue
		}
		validateField(l, r, fname, f, at)
	}
	validateSensitiveReaders(l, r, at)
}

// validateField checks one declared field.
func validateField(l *errList, r *ResourceConfig, fname string, f *FieldConfig, at func(k ...string) []string) {
	if !fieldTypes[f.Type] {
		l.add("type must be one of string, integer, number, boolean, timestamp, array, object", at("fields", fname, "type")...)
	}
	if len(f.Enum) > 0 && f.Type != "string" {
		l.add("enum is only for string fields", at("fields", fname, "enum")...)
	}
	switch {
	case f.Elements == "":
	case f.Type != "array":
		l.add("elements is the element type of an array field: set type: array", at("fields", fname, "elements")...)
	case !scalarTypes[f.Elements]:
		l.add("elements must be one of string, integer, number, boolean, timestamp", at("fields", fname, "elements")...)
	}
	switch f.Normalize {
	case "", "lower", "trim":
	default:
		l.add("normalize must be lower or trim", at("fields", fname, "normalize")...)
	}
	if f.Sensitive && fname == r.IDField {
		l.add("the id field cannot be sensitive", at("fields", fname, "sensitive")...)
	}
	for i, v := range f.NullValues {
		switch v.(type) {
		case string, int, float64, bool:
		default:
			l.add("a null value must be a string, number or boolean", at("fields", fname, "null_values", strconv.Itoa(i))...)
		}
	}
	if f.Layout != "" {
		if f.Type != "timestamp" {
			l.add("layout is only for timestamp fields", at("fields", fname, "layout")...)
		} else if !validLayout(f.Layout) {
			l.add("layout must be rfc3339, unix, unix_ms or a Go time layout such as \"2006-01-02 15:04:05.999Z07:00\"", at("fields", fname, "layout")...)
		}
	}
	if f.Queryable && !f.Sensitive {
		l.add("queryable only applies to a sensitive field (every other field can be queried)", at("fields", fname, "queryable")...)
	}
	validateFieldContract(l, f, at("fields", fname))
	validateMoney(l, r, fname, at("fields", fname, "money"))
}

// validateSensitiveReaders refuses a field that reads a sensitive field's
// value, or an object holding it: it would return what sensitive withholds.
func validateSensitiveReaders(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	for _, sname := range slices.Sorted(maps.Keys(r.Fields)) {
		sf := r.Fields[sname]
		if sf == nil || !sf.Sensitive {
			continue
		}
		spath := fieldPathOf(sname, sf)
		for _, fname := range slices.Sorted(maps.Keys(r.Fields)) {
			f := r.Fields[fname]
			if f == nil || f.Sensitive || fname == sname {
				continue
			}
			if p := fieldPathOf(fname, f); p == spath || strings.HasPrefix(spath, p+".") {
				l.add(fmt.Sprintf("reads %s, which holds sensitive field %q: mark it sensitive too, or point it elsewhere", p, sname), at("fields", fname)...)
			}
		}
	}
}

// validateDefaults checks the default fields, the filters and the default
// filter.
func validateDefaults(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	for i, fname := range r.DefaultFields {
		f, ok := r.Fields[fname]
		if !ok {
			l.add(fmt.Sprintf("field %q is not declared", fname), at("default_fields", strconv.Itoa(i))...)
		} else if f != nil && f.Sensitive {
			l.add(fmt.Sprintf("field %q is sensitive and cannot be returned", fname), at("default_fields", strconv.Itoa(i))...)
		}
	}
	validateFilters(l, r, at)
	for _, k := range slices.Sorted(maps.Keys(r.DefaultFilter)) {
		if _, ok := r.Filters[k]; !ok {
			l.add("default_filter names an undeclared filter", at("default_filter", k)...)
		}
	}
}

// validateSources checks the sources a resource is read from.
func validateSources(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	seen := map[string]bool{}
	for i, s := range r.Sources {
		ix := strconv.Itoa(i)
		if s.Name == "" {
			l.add("required", at("sources", ix, "name")...)
		} else if seen[s.Name] {
			l.add("duplicate source name", at("sources", ix, "name")...)
		}
		seen[s.Name] = true
		if s.BaseURL != "" && !wholeEnvRef(s.BaseURL) {
			if bu, err := url.Parse(placeholderEnv(s.BaseURL)); badEnvRefs(s.BaseURL) != "" || err != nil || bu.Host == "" || bu.User != nil {
				l.add("must be an absolute URL without credentials", at("sources", ix, "base_url")...)
			}
		}
		for k := range s.Match {
			if _, ok := r.Filters[k]; !ok {
				l.add("match names an undeclared filter", at("sources", ix, "match", k)...)
			}
		}
	}
}

// validateSignals checks how the upstream signals a restricted view and
// stale data.
func validateSignals(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if v := r.Visibility; v != nil {
		signalled := v.Header != "" || v.Field != "" || len(v.RestrictedValues) > 0
		switch {
		case v.Restricted == "" && (v.Header == "") == (v.Field == ""):
			l.add("set exactly one of header or field (how the upstream says a view is restricted), or restricted (why this credential always sees only part)", at("visibility")...)
		case v.Header != "" && v.Field != "":
			l.add("set exactly one of header or field", at("visibility")...)
		}
		if signalled && len(v.RestrictedValues) == 0 {
			l.add("required: the values that mean the view is restricted", at("visibility", "restricted_values")...)
		}
		if len(v.Only) > 0 && v.Restricted == "" {
			l.add("only says which records a restricted view shows: set restricted too (why)", at("visibility", "only")...)
		}
		for _, f := range slices.Sorted(maps.Keys(v.Only)) {
			if _, ok := r.Fields[f]; !ok {
				l.add(fmt.Sprintf("field %q is not declared", f), at("visibility", "only", f)...)
			}
			if len(v.Only[f]) == 0 {
				l.add("required: the values of the field the view shows", at("visibility", "only", f)...)
			}
		}
	}
	if f := r.Freshness; f != nil {
		if (f.Header == "") == (f.Field == "") {
			l.add("set exactly one of header or field", at("freshness")...)
		}
		if f.MaxAge <= 0 {
			l.add("required: a positive duration", at("freshness", "max_age")...)
		}
	}
}

// validateLimits checks the result cap and the limits callers may ask for.
func validateLimits(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if r.ResultCap < 0 {
		l.add("must not be negative", at("result_cap")...)
	}
	for _, lim := range []struct {
		name string
		v    Limit
	}{{"max_items", r.Limits.MaxItems}, {"max_pages", r.Limits.MaxPages}, {"deadline_ms", r.Limits.DeadlineMS}} {
		if lim.v.Default < 0 || lim.v.Cap < 0 {
			l.add("must not be negative", at("limits", lim.name)...)
		}
		if lim.v.Cap > 0 && lim.v.Default > lim.v.Cap {
			l.add("default is above the cap", at("limits", lim.name)...)
		}
	}
	if r.Limits.ResponseBytes < 0 || r.Limits.ScanItems < 0 {
		l.add("must not be negative", at("limits")...)
	}
}

// validateGet checks the endpoint that reads one item by id.
func validateGet(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if g := r.Get; g != nil {
		switch {
		case g.GraphQL != "":
			if !strings.HasPrefix(g.Path, "/") {
				l.add("must be an absolute path (the GraphQL endpoint)", at("get", "path")...)
			}
			if !strings.Contains(g.GraphQL, "$id") {
				l.add("the query must take the item's id as $id", at("get", "graphql")...)
			}
			if g.Item == "" {
				l.add("required: the item's path in the answer (data.accountById)", at("get", "item")...)
			}
		case PostGet(g):
			if !strings.HasPrefix(g.Path, "/") {
				l.add("must be an absolute path", at("get", "path")...)
			}
		case !strings.HasPrefix(g.Path, "/") || !strings.Contains(g.Path, "{{id}}"):
			l.add("must be an absolute path containing {{id}}", at("get", "path")...)
		}
		checkPathQuery(l, g.Path, at("get", "path"))
	}
}

// validateReview checks what the review page shows and how long a
// selection lasts.
func validateReview(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	for key, list := range map[string][]string{"review_fields": r.ReviewFields, "review_groups": r.ReviewGroups} {
		for i, fname := range list {
			f, ok := r.Fields[fname]
			if !ok {
				l.add(fmt.Sprintf("field %q is not declared", fname), at(key, strconv.Itoa(i))...)
			} else if f != nil && f.Sensitive {
				l.add(fmt.Sprintf("field %q is sensitive and cannot be reviewed", fname), at(key, strconv.Itoa(i))...)
			}
		}
	}
	if r.SelectionTTL < 0 {
		l.add("must not be negative", at("selection_ttl")...)
	}
}

var formats = map[string]bool{"date-time": true, "date": true, "email": true, "uri": true, "uuid": true, "ipv4": true, "ipv6": true, "hostname": true}

func validateFieldContract(l *errList, f *FieldConfig, p []string) {
	at := func(k ...string) []string { return append(append([]string(nil), p...), k...) }
	if f.Permission && f.Type != "boolean" {
		l.add("a permission field must be a boolean", at("permission")...)
	}
	if f.Format != "" && !formats[f.Format] {
		l.add("format must be one of date-time, date, email, uri, uuid, ipv4, ipv6, hostname", at("format")...)
	}
	for i, a := range f.Aliases {
		ix := strconv.Itoa(i)
		if a.Name == "" {
			l.add("required", at("aliases", ix, "name")...)
		}
		if _, err := time.Parse("2006-01-02", a.Until); err != nil {
			l.add("required: the date (YYYY-MM-DD) after which the alias is no longer accepted; aliases are temporary", at("aliases", ix, "until")...)
		}
	}
}

func validateInvariants(l *errList, fields map[string]*FieldConfig, invs []InvariantConfig, p []string) {
	for i, inv := range invs {
		ix := strconv.Itoa(i)
		for _, part := range []struct {
			name string
			rule RuleConfig
		}{{"if", inv.If}, {"then", inv.Then}} {
			if !ruleOps[part.rule.Op] {
				l.add("op must be one of eq, ne, in, not_in, contains, not_contains, gt, gte, lt, lte", append(append([]string(nil), p...), ix, part.name, "op")...)
			}
			if _, ok := fields[part.rule.Field]; !ok {
				l.add(fmt.Sprintf("field %q is not declared", part.rule.Field), append(append([]string(nil), p...), ix, part.name, "field")...)
			}
		}
	}
}

// fieldPathOf is where a declared field lives in an item.
func fieldPathOf(name string, f *FieldConfig) string {
	if f.Path != "" {
		return f.Path
	}
	return name
}
