// Package upstream describes HTTP APIs in a strict YAML configuration and
// reads them: pagination dialects, retries, rate limits, and the scan engine
// that says exactly how much of a requested scope it covered and why not.
//
// It must never read a credential from anything but the configuration's env
// var or file, never follow a continuation to another host, and never report a
// scan as complete when any part of the scope went unread.
package upstream

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the parsed configuration file. Parse it with ParseConfig, then
// call Initialize to build the runtime objects.
type Config struct {
	Environment string                     `yaml:"environment"`
	Upstreams   map[string]*UpstreamConfig `yaml:"upstreams"`
	Resources   map[string]*ResourceConfig `yaml:"resources"`
	Actions     map[string]*ActionConfig   `yaml:"actions"`

	root    *yaml.Node
	baseDir string
}

// UpstreamConfig describes one HTTP API.
type UpstreamConfig struct {
	BaseURL         string            `yaml:"base_url"`
	Credential      *CredentialConfig `yaml:"credential"`
	Timeout         time.Duration     `yaml:"timeout"`
	Retries         *int              `yaml:"retries"`
	Backoff         BackoffConfig     `yaml:"backoff"`
	RateLimit       RateLimitConfig   `yaml:"rate_limit"`
	Concurrency     int               `yaml:"concurrency"`
	MaxBodyBytes    int64             `yaml:"max_body_bytes"`
	RequestIDHeader string            `yaml:"request_id_header"`
	Headers         map[string]string `yaml:"headers"`
}

// CredentialConfig says where an upstream's credential comes from and how
// it is sent; never from a tool argument. Exactly one form: a static secret
// (Env or File, sent in Header with Scheme, or in the Query parameter),
// Basic (a user and a password read separately) or OAuth2 (client
// credentials). ClientCertificate (mTLS) stands alone or goes with any of
// them. See credential.go.
type CredentialConfig struct {
	Env    string  `yaml:"env"`
	File   string  `yaml:"file"`
	Header string  `yaml:"header"`
	Scheme *string `yaml:"scheme"`
	// Query sends the static secret as this query parameter (?api_key=).
	Query             string            `yaml:"query"`
	Basic             *BasicConfig      `yaml:"basic"`
	OAuth2            *OAuth2Config     `yaml:"oauth2"`
	ClientCertificate *ClientCertConfig `yaml:"client_certificate"`
}

// BackoffConfig bounds the wait between retries when the upstream gives no
// Retry-After.
type BackoffConfig struct {
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// RateLimitConfig is the client-side rate limit (token bucket).
type RateLimitConfig struct {
	PerSecond float64 `yaml:"per_second"`
	Burst     int     `yaml:"burst"`
}

// ResourceConfig describes one listable collection.
type ResourceConfig struct {
	Upstream      string                   `yaml:"upstream"`
	Description   string                   `yaml:"description"`
	List          ListConfig               `yaml:"list"`
	Pagination    PaginationConfig         `yaml:"pagination"`
	IDField       string                   `yaml:"id_field"`
	VersionField  string                   `yaml:"version_field"`
	Fields        map[string]*FieldConfig  `yaml:"fields"`
	DefaultFields []string                 `yaml:"default_fields"`
	Filters       map[string]*FilterConfig `yaml:"filters"`
	DefaultFilter map[string]any           `yaml:"default_filter"`
	Sources       []SourceConfig           `yaml:"sources"`
	Visibility    *VisibilityConfig        `yaml:"visibility"`
	Incomplete    *IncompleteConfig        `yaml:"incomplete"`
	ResultCap     int                      `yaml:"result_cap"`
	Freshness     *FreshnessConfig         `yaml:"freshness"`
	Limits        LimitsConfig             `yaml:"limits"`
	Get           *GetConfig               `yaml:"get"`
	ReviewFields  []string                 `yaml:"review_fields"`
	ReviewGroups  []string                 `yaml:"review_groups"`
	SelectionTTL  time.Duration            `yaml:"selection_ttl"`
	Invariants    []InvariantConfig        `yaml:"invariants"`
	Contract      *ContractConfig          `yaml:"contract"`
}

// ListConfig is the list endpoint.
type ListConfig struct {
	Path   string            `yaml:"path"`
	Params map[string]string `yaml:"params"`
	Items  string            `yaml:"items"`
	// ScalarItemField reads items that are plain values (strings, numbers)
	// as objects holding the value under this field name.
	ScalarItemField string `yaml:"scalar_item_field"`
	// Method is GET (the default) or POST: a POST list sends Body as its
	// JSON body, with the pagination and filter parameters placed in it
	// at their dotted paths (Notion, Jira's search, Elasticsearch).
	Method string         `yaml:"method"`
	Body   map[string]any `yaml:"body"`
	// GraphQL is the query document of a graphql list: it declares the
	// page size and cursor variables (and any filter variables) and
	// selects the connection named by pagination.connection.
	GraphQL string `yaml:"graphql"`
}

// PaginationConfig selects a dialect and names its parameters and response
// paths. Unset names take the dialect's conventional defaults.
type PaginationConfig struct {
	Dialect       string `yaml:"dialect"`
	Consistency   string `yaml:"consistency"`
	PageSize      int    `yaml:"page_size"`
	PageSizeParam string `yaml:"page_size_param"`
	// cursor
	HasMore     string `yaml:"has_more"`
	CursorParam string `yaml:"cursor_param"`
	NextCursor  string `yaml:"next_cursor"`
	// offset and page
	OffsetParam string `yaml:"offset_param"`
	PageParam   string `yaml:"page_param"`
	FirstPage   *int   `yaml:"first_page"`
	Total       string `yaml:"total"`
	// TotalHeader reads the total from a response header (X-Total-Count)
	// instead of the body.
	TotalHeader string `yaml:"total_header"`
	// TotalExact declares that the total counts exactly the records the
	// upstream-side filters select: a counts-only query whose every filter
	// is sent upstream is then answered from the first page.
	TotalExact  bool `yaml:"total_exact"`
	Concurrency int  `yaml:"concurrency"`
	// continue
	ContinueParam   string `yaml:"continue_param"`
	ContinuePath    string `yaml:"continue_path"`
	ResourceVersion string `yaml:"resource_version"`
	// IsLast is an end flag that says "last" rather than "more" (Jira's
	// isLast, Salesforce's done): true proves the end.
	IsLast string `yaml:"is_last"`
	// next_url: the path of the next page's URL in the body (Django REST
	// Framework's next, Microsoft Graph's @odata.nextLink).
	Next string `yaml:"next"`
	// graphql: the path of the connection under data; the cursor and
	// the end come from its pageInfo, the items from nodes or
	// edges[].node, the total from totalCount.
	Connection string `yaml:"connection"`
	// search_after: the path, in each item, of its sort values (the
	// cursor is the last item's), and the point in time held across
	// the pages.
	SortValues  string     `yaml:"sort_values"`
	SearchAfter string     `yaml:"search_after_param"`
	PIT         *PITConfig `yaml:"pit"`
	// TotalRelation, with total, reads whether the total is exact ("eq")
	// or a bound (anything else makes the total unknown).
	TotalRelation string `yaml:"total_relation"`
	// Expiry is how the upstream says a continuation expired.
	Expiry *ExpiryConfig `yaml:"expiry"`
}

// PITConfig is a point in time held across the pages of a search_after
// list: opened once by a POST to Open, its id (at ID in that answer) is
// sent at Param in every page's body, and replaced by the one each answer
// carries at Response (an upstream may renew it).
type PITConfig struct {
	Open     string `yaml:"open"`
	ID       string `yaml:"id"`
	Param    string `yaml:"param"`
	Response string `yaml:"response"`
}

// ExpiryConfig is how an upstream answers a continuation that expired: a
// status among Status (default 410 Gone) whose body (for a graphql list,
// also the errors of a 200 answer) matches Match when it is set. Only a
// request that carried a continuation can expire.
type ExpiryConfig struct {
	Status []int  `yaml:"status"`
	Match  string `yaml:"match"`
}

// NoTotal is pagination.total's value for an API that reports no total.
const NoTotal = "none"

// FieldConfig declares one field of a resource's items. A Sensitive field
// never leaves airlock and answers no query; Queryable (only with
// Sensitive) lets filters and exclusion rules name it, disclosing its
// values through counts and membership.
type FieldConfig struct {
	Path        string   `yaml:"path"`
	Type        string   `yaml:"type"`
	Nullable    bool     `yaml:"nullable"`
	Enum        []string `yaml:"enum"`
	Sensitive   bool     `yaml:"sensitive"`
	Queryable   bool     `yaml:"queryable"`
	Deprecated  bool     `yaml:"deprecated"`
	Normalize   string   `yaml:"normalize"`
	Description string   `yaml:"description"`
	// Contract: Required means the field must be present (it may be null
	// when Nullable); Decision marks a field that chooses targets,
	// eligibility, scope, completion or approval; Permission marks a
	// boolean compared with == true and never defaulted.
	Required   bool          `yaml:"required"`
	Decision   bool          `yaml:"decision"`
	Permission bool          `yaml:"permission"`
	Format     string        `yaml:"format"`
	Aliases    []AliasConfig `yaml:"aliases"`
	// NullValues are values the upstream uses for "no value" (PocketBase
	// stores a missing text as ""): they read as null everywhere.
	NullValues []any `yaml:"null_values"`
	// Layout is how a timestamp field is written when it is not RFC 3339:
	// a Go layout, or unix / unix_ms for epoch numbers. Values are
	// normalized to RFC 3339.
	Layout string `yaml:"layout"`
	// Money marks an amount of money, shown to reviewers with its currency.
	Money *MoneyConfig `yaml:"money"`
}

// FilterConfig declares a filter. Param, when set, is sent upstream; airlock
// always re-checks the filter on every item it reads (an upstream that
// ignores an unknown parameter must not widen the scope).
type FilterConfig struct {
	Param string `yaml:"param"`
	Field string `yaml:"field"`
	Op    string `yaml:"op"`
	// NullParam is sent as the parameter's value for a null filter value.
	NullParam string `yaml:"null_param"`
	// Multi says how the API takes several values of the parameter:
	// repeat (?p=a&p=b), comma (?p=a,b; a value holding the separator
	// cannot be sent so) or array (a JSON array, in a POST body or a
	// GraphQL variable). Unset, a list of values is not sent upstream:
	// airlock applies it alone.
	Multi string `yaml:"multi"`
	// MultiParam is where a list goes when the API takes it under
	// another parameter than one value (team=x but team__in=x,y).
	MultiParam string `yaml:"multi_param"`
	// Separator joins a comma list (default ",").
	Separator string `yaml:"separator"`
	// Null (is_null) is a null filter value sent as a parameter of its
	// own (owner__isnull=true), or as a JSON null in a body or variable.
	// (YAML reads a bare null key as no key at all, hence the name.)
	Null        *NullForm `yaml:"is_null"`
	Description string    `yaml:"description"`
}

// NullForm sends a null filter value: Param set to Value. In a query,
// Value is required; in a POST body or a GraphQL variable, an unset
// Value sends JSON null.
type NullForm struct {
	Param string `yaml:"param"`
	Value any    `yaml:"value"`
}

// SourceConfig is one partition or region of a fanned-out resource.
type SourceConfig struct {
	Name    string            `yaml:"name"`
	BaseURL string            `yaml:"base_url"`
	Params  map[string]string `yaml:"params"`
	// Match names filter values this source holds; a filter that asks for
	// another value leaves the source out of scope.
	Match map[string]string `yaml:"match"`
}

// VisibilityConfig says how the upstream reveals a restricted view.
type VisibilityConfig struct {
	Header           string   `yaml:"header"`
	Field            string   `yaml:"field"`
	RestrictedValues []string `yaml:"restricted_values"`
	Description      string   `yaml:"description"`
}

// IncompleteConfig names response paths through which the upstream says its
// own answer is incomplete.
type IncompleteConfig struct {
	Flags         []string `yaml:"flags"`
	TotalRelation string   `yaml:"total_relation"`
}

// FreshnessConfig names where the upstream says how old its index is.
type FreshnessConfig struct {
	Header string        `yaml:"header"`
	Field  string        `yaml:"field"`
	MaxAge time.Duration `yaml:"max_age"`
}

// LimitsConfig holds budget defaults and hard caps.
type LimitsConfig struct {
	MaxItems      Limit `yaml:"max_items"`
	MaxPages      Limit `yaml:"max_pages"`
	DeadlineMS    Limit `yaml:"deadline_ms"`
	ResponseBytes int   `yaml:"response_bytes"`
	ScanItems     int   `yaml:"scan_items"`
}

// Limit is a default and a hard cap.
type Limit struct {
	Default int `yaml:"default"`
	Cap     int `yaml:"cap"`
}

// Dialect names.
const (
	DialectCursor   = "cursor"
	DialectLink     = "link"
	DialectOffset   = "offset"
	DialectPage     = "page"
	DialectContinue = "continue"
	// DialectNextURL follows a next page's URL read from the body.
	DialectNextURL = "next_url"
	// DialectGraphQL pages a GraphQL connection (pageInfo, nodes/edges).
	DialectGraphQL = "graphql"
	// DialectSearchAfter continues after the last item's sort values
	// (Elasticsearch/OpenSearch search_after), optionally in a point in
	// time.
	DialectSearchAfter = "search_after"
)

// Consistency levels.
const (
	ConsistencySnapshot = "snapshot"
	ConsistencyKeyset   = "keyset"
	ConsistencyNone     = "none"
)

// Field types.
var fieldTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "array": true, "object": true, "timestamp": true}

// ConfigError is one problem in a configuration file, with its line.
type ConfigError struct {
	Line int
	Path string
	Msg  string
}

func (e ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// ConfigErrors is every problem found in a configuration file.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// LoadConfig reads and parses a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := ParseConfig(b)
	if err != nil {
		return nil, err
	}
	cfg.baseDir = filepath.Dir(path)
	return cfg, nil
}

// Warnings are problems a configuration may run with but should not keep:
// aliases past their end date.
func (c *Config) Warnings(now time.Time) []string { return c.expiredAliases(now) }

// ParseConfig parses a configuration strictly: unknown keys are errors with
// line numbers, and every semantic problem is reported, not only the first.
// The error is a ConfigErrors.
func ParseConfig(b []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, ConfigErrors{openerLine(b, syntaxError(err))}
	}
	if second := secondDocument(b); second > 0 {
		return nil, ConfigErrors{{Line: second, Path: "config", Msg: "a second YAML document: a configuration is one document; remove the --- and what follows it, or merge the two"}}
	}
	// Every key is checked against the configuration's keys (with the
	// key that was meant), and duplicates are reported and dropped, before
	// the values are decoded: decoding then goes on past a value of the
	// wrong type, and what was read is still validated, so that a
	// misspelled key is reported together with the required key it leaves
	// missing.
	errs := dropDuplicateKeys(&root)
	errs = append(errs, unknownKeys(&root)...)
	var cfg Config
	if err := root.Decode(&cfg); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, ConfigErrors{syntaxError(err)}
		}
		for _, m := range te.Errors {
			errs = append(errs, yamlTypeError(&root, m))
		}
	}
	cfg.root = &root
	if len(errs) > 0 {
		errs = append(errs, withoutLines(cfg.validate(), errs)...)
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
		return nil, errs
	}
	if errs := cfg.validate(); len(errs) > 0 {
		return nil, errs
	}
	return &cfg, nil
}

// syntaxError carries a YAML syntax error's line in Line, not only in the
// message. The YAML parser reports its own errors (as opposed to the
// scanner's) one line early: the line is corrected here.
func syntaxError(err error) ConfigError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.HasPrefix(msg, "line ") {
		if i := strings.Index(msg, ": "); i > 0 {
			if line, convErr := strconv.Atoi(msg[5:i]); convErr == nil {
				msg = msg[i+2:]
				if parserProblems[msg] {
					line++
				}
				return ConfigError{Line: line, Path: "config", Msg: explainSyntax(msg)}
			}
		}
	}
	return ConfigError{Path: "config", Msg: explainSyntax(msg)}
}

// yamlTypeError turns one of yaml's decoding errors into a ConfigError
// that names the key by its path and says what was expected, never a Go
// type.
func yamlTypeError(root *yaml.Node, m string) ConfigError {
	line := 0
	rest := m
	if strings.HasPrefix(m, "line ") {
		if i := strings.Index(m, ": "); i > 0 {
			line, _ = strconv.Atoi(m[5:i])
			rest = m[i+2:]
		}
	}
	if strings.HasPrefix(rest, "cannot unmarshal ") {
		return wrongType(root, line, strings.TrimPrefix(rest, "cannot unmarshal "))
	}
	return ConfigError{Line: line, Path: "config", Msg: rest}
}

// line finds the line of a dotted path in the YAML tree (0 when unknown).
// Path elements are map keys or list indexes.
func (c *Config) line(path ...string) int {
	if c.root == nil || len(c.root.Content) == 0 {
		return 0
	}
	n := c.root.Content[0]
	best := n.Line
	for _, p := range path {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					next = n.Content[i+1]
					best = n.Content[i].Line
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i < len(n.Content) {
				next = n.Content[i]
				best = next.Line
			}
		}
		if next == nil {
			return best
		}
		n = next
	}
	return best
}

type errList struct {
	c    *Config
	errs ConfigErrors
}

func (l *errList) add(msg string, path ...string) {
	l.errs = append(l.errs, ConfigError{Line: l.c.line(path...), Path: strings.Join(path, "."), Msg: msg})
}

func (c *Config) validate() ConfigErrors {
	l := &errList{c: c}
	l.errs = append(l.errs, nullKeys(c.root)...)
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
	if c := u.Credential; c != nil {
		validateCredential(l, c, at("credential"))
	}
	if u.Timeout < 0 {
		l.add("must not be negative", at("timeout")...)
	}
	if u.Retries != nil && (*u.Retries < 0 || *u.Retries > 10) {
		l.add("must be between 0 and 10", at("retries")...)
	}
	if u.RateLimit.PerSecond < 0 || u.RateLimit.Burst < 0 {
		l.add("must not be negative", at("rate_limit")...)
	}
	if u.Concurrency < 0 || u.Concurrency > 64 {
		l.add("must be between 1 and 64", at("concurrency")...)
	}
	for h := range u.Headers {
		if strings.EqualFold(h, "authorization") || strings.EqualFold(h, "cookie") {
			l.add("credentials belong in credential, not in headers", at("headers")...)
		}
	}
}

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
	if r.IDField == "" {
		l.add("required: the field holding each item's stable id", at("id_field")...)
	}
	validateList(l, r, at)
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
		if !fieldTypes[f.Type] {
			l.add("type must be one of string, integer, number, boolean, timestamp, array, object", at("fields", fname, "type")...)
		}
		if len(f.Enum) > 0 && f.Type != "string" {
			l.add("enum is only for string fields", at("fields", fname, "enum")...)
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
	// A field that reads a sensitive field's value, or an object holding
	// it, would return what sensitive withholds.
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
	if v := r.Visibility; v != nil {
		if (v.Header == "") == (v.Field == "") {
			l.add("set exactly one of header or field", at("visibility")...)
		}
		if len(v.RestrictedValues) == 0 {
			l.add("required: the values that mean the view is restricted", at("visibility", "restricted_values")...)
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
		case !strings.HasPrefix(g.Path, "/") || !strings.Contains(g.Path, "{{id}}"):
			l.add("must be an absolute path containing {{id}}", at("get", "path")...)
		}
	}
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
	validateInvariants(l, r.Fields, r.Invariants, at("invariants"))
	if ct := r.Contract; ct != nil && (ct.Schema == "") == (ct.OpenAPI == nil) {
		l.add("set exactly one of schema or openapi", at("contract")...)
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

// Summary describes the configuration in a few lines for `airlock check`:
// each upstream (and whether its credential is present) and each resource.
func (c *Config) Summary(getenv func(string) string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		u := c.Upstreams[name]
		cred := credentialSummary(u.Credential, getenv)
		out = append(out, fmt.Sprintf("upstream %s: %s, %s", name, u.BaseURL, cred))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Resources)) {
		r := c.Resources[name]
		p := resolvePagination(r.Pagination)
		srcs := ""
		if len(r.Sources) > 0 {
			names := make([]string, len(r.Sources))
			for i, s := range r.Sources {
				names[i] = s.Name
			}
			srcs = ", sources " + strings.Join(names, "/")
		}
		method := "GET"
		if listKind(r) != listQuery {
			method = "POST"
		}
		out = append(out, fmt.Sprintf("resource %s: %s %s via %s, dialect %s (consistency %s), %d fields, %d filters%s",
			name, method, r.List.Path, r.Upstream, p.Dialect, p.Consistency, len(r.Fields), len(r.Filters), srcs))
	}
	return out
}

// fieldPathOf is where a declared field lives in an item.
func fieldPathOf(name string, f *FieldConfig) string {
	if f.Path != "" {
		return f.Path
	}
	return name
}
