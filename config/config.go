// Package config is airlock's configuration file: its types, the strict
// YAML parse (unknown keys and wrong types are errors with line numbers,
// read by config/strictyaml), validation that reports every error at once
// (action templates rendered as a commit renders them, with
// config/template), the defaults each part resolves to, environment
// references and TODO markers.
//
// It must never send a request, keep or show a secret's value (it only
// says whether one is there), or depend on the packages that act on a
// configuration.
package config

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airlock-mcp/airlock/config/strictyaml"
	"go.yaml.in/yaml/v3"
)

// Config is the parsed configuration file. Parse it with Parse, then call
// upstream.Initialize to build the runtime objects.
type Config struct {
	Environment string                     `yaml:"environment"`
	Upstreams   map[string]*UpstreamConfig `yaml:"upstreams"`
	Resources   map[string]*ResourceConfig `yaml:"resources"`
	Actions     map[string]*ActionConfig   `yaml:"actions"`

	root    *yaml.Node
	baseDir string
	// keyLines holds the line of every struct key the document sets (see
	// strictyaml.Decode).
	keyLines map[string]int
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
	// JSONMediaTypes are the media types, besides application/json and
	// any +json, whose answers are JSON (AWS's application/x-amz-json-1.0):
	// any other stays a changed content type.
	JSONMediaTypes []string `yaml:"json_media_types"`
	// Verify is the default of its actions' verify (answer or reread).
	Verify string `yaml:"verify"`
	// QueryEncoding is how query strings are written: rfc3986 (the
	// default: a space is %20) or form (a space is +, as HTML forms
	// write it). A list may say otherwise (list.query_encoding).
	QueryEncoding string `yaml:"query_encoding"`
	// MaxRetryAfter bounds the wait airlock takes from the upstream (a
	// Retry-After, a rate limit reset): a longer one is read as this
	// (transport.DefaultMaxRetryAfter when zero).
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// Throttling declares the error answers besides 429 that say the
	// upstream is rate-limiting (DynamoDB's 400 with
	// ProvisionedThroughputExceededException).
	Throttling []ThrottlingConfig `yaml:"throttling"`
	// Conflicts declares the error answers besides 409 and 412 that say
	// a conditional write's condition failed (DynamoDB's 400 with
	// ConditionalCheckFailedException), in the same form: the target
	// changed since it was read, and nothing was applied.
	Conflicts []ThrottlingConfig `yaml:"conflicts"`
	// Unauthorized declares the error answers besides 401 that say the
	// upstream refused the credential (DynamoDB's 400 with
	// InvalidSignatureException or UnrecognizedClientException), in the
	// same form: an authentication failure, never a rejected value.
	Unauthorized []ThrottlingConfig `yaml:"unauthorized"`
}

// Query encodings (upstreams.NAME.query_encoding, list.query_encoding).
const (
	QueryRFC3986 = "rfc3986"
	QueryForm    = "form"
)

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
	// Session is a login whose answer authorizes the next requests (see
	// SessionConfig).
	Session *SessionConfig `yaml:"session"`
	// SigV4 signs every request with AWS Signature Version 4 (see
	// SigV4Config).
	SigV4 *SigV4Config `yaml:"aws_sigv4"`
}

// BackoffConfig bounds the wait between retries when the upstream gives no
// Retry-After.
type BackoffConfig struct {
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// ThrottlingConfig declares one kind of error answer that is a rate limit:
// its status and, when Member is set, the body member (a dotted path)
// whose string value ends with Match. Without Member, every answer of the
// status is one.
type ThrottlingConfig struct {
	Status int    `yaml:"status"`
	Member string `yaml:"member"`
	Match  string `yaml:"match"`
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
	// ItemEncoding is how the API writes its items' values: dynamodb
	// wraps each attribute in a typed AttributeValue ({"S": "x"},
	// {"N": "20"}, {"NULL": true}, …). Every read sees the plain value
	// (a number exact, NULL as null), and writes carry it back typed.
	ItemEncoding string `yaml:"item_encoding"`
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
	// QueryEncoding overrides the upstream's query_encoding for this
	// list's requests.
	QueryEncoding string `yaml:"query_encoding"`
	// Expression is the parameter that carries the filters declaring an
	// expression name, as one expression in the API's language (OData's
	// $filter). See ExpressionConfig.
	Expression *ExpressionConfig `yaml:"expression"`
	// Headers are sent with every page's request, each replacing the
	// upstream's header of the same name (DynamoDB names its operation
	// in X-Amz-Target: Scan for the list, GetItem for get, UpdateItem for
	// an action).
	Headers map[string]string `yaml:"headers"`
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
	// is sent upstream is then answered from the first page, and a page
	// that reaches it ends the list.
	TotalExact bool `yaml:"total_exact"`
	// TotalPages (a body path) or TotalPagesHeader (X-WP-TotalPages) is
	// the page dialect's count of pages: the page it names last ends the
	// list, and no page past it is asked for.
	TotalPages       string `yaml:"total_pages"`
	TotalPagesHeader string `yaml:"total_pages_header"`
	Concurrency      int    `yaml:"concurrency"`
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
	// continue_object: see ContinuationObjectConfig.
	ContinuationObjectConfig `yaml:",inline"`
	// CursorField is the declared field of the last item whose value is
	// the next cursor (default: the id field), and CursorExclusive how it
	// is made exclusive when the upstream's cursor is inclusive (etcd's
	// range key). See reach.go.
	CursorField     string `yaml:"cursor_field"`
	CursorExclusive string `yaml:"cursor_exclusive"`
	// AbsentMeansZero lists members the upstream omits when they hold
	// their zero value (proto3 JSON omits more: false and an empty kvs):
	// absent, the end flag is false and the items are none.
	AbsentMeansZero []string `yaml:"absent_means_zero"`
	// Snapshot is a value read from the first page and sent with every
	// later one (etcd's revision).
	Snapshot *SnapshotConfig `yaml:"snapshot"`
	// Remaining is where a page says how many items follow it
	// (Kubernetes' metadata.remainingItemCount, the continue dialect's
	// default): a page that ends the list while it says more follow
	// contradicts itself.
	Remaining string `yaml:"remaining"`
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

// NoPageSize is pagination.page_size_param's value for an API whose pages
// are sized by the server alone: no page size is sent (OData's $top limits
// the whole result, so sending it as a page size cuts the list).
const NoPageSize = "none"

// FieldConfig declares one field of a resource's items. A Sensitive field
// never leaves airlock and answers no query; Queryable (only with
// Sensitive) lets filters and exclusion rules name it, disclosing its
// values through counts and membership.
type FieldConfig struct {
	Path string `yaml:"path"`
	Type string `yaml:"type"`
	// Elements is the type of an array field's elements (integer for
	// WordPress's categories: [4, 9]): a filter value is converted to it
	// before it is sent or compared, so that 4 and "4" mean the same.
	// Unset, an element is compared in the type each item holds.
	Elements    string   `yaml:"elements"`
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
	// Decode is how the API encodes the field's value (base64: etcd's
	// keys and values): it is read decoded everywhere (filters, review,
	// digests) and written back encoded.
	Decode string `yaml:"decode"`
	// Set is the DynamoDB set type an array field is written back as
	// (SS, NS or BS; item_encoding: dynamodb): a list is written as L
	// otherwise, which would change the attribute's type.
	Set string `yaml:"set"`
	// Volatile marks a field the upstream changes on every write
	// (Redmine's updated_on, CouchDB's _rev): a write that changes it is
	// not said to have changed more than its effect.
	Volatile bool `yaml:"volatile"`
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
	// search: see SearchFilterConfig.
	SearchFilterConfig `yaml:",inline"`
	// Expression is the field's name in the list's filter expression
	// (list.expression): the value is sent there, quoted by the
	// language's rules, instead of as a parameter of its own.
	Expression string `yaml:"expression"`
	// Literal says how the API reads a value's text beyond the value
	// (operators at its start, strings it splits at): see LiteralConfig.
	Literal *LiteralConfig `yaml:"literal"`
	// Operator is the text a comparison's value is sent after, for an API
	// that reads the comparison from the value (Redmine's
	// updated_on=>=2026-01-01T00:00:00Z).
	Operator string `yaml:"operator"`
	// ParamCompares says the parameter itself makes the comparison
	// (django-filter's updated__gte, an updated_after): the value is sent
	// as it is. A comparison sent as param declares one of the two.
	ParamCompares bool `yaml:"param_compares"`
}

// FieldOf is the field the filter named name compares: Field, else the
// field of the filter's own name (also for a nil filter).
func (fc *FilterConfig) FieldOf(name string) string {
	if fc != nil && fc.Field != "" {
		return fc.Field
	}
	return name
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

// VisibilityConfig says how the upstream reveals a restricted view (Header
// or Field holding one of RestrictedValues), or declares one the upstream
// never reveals: Restricted says why the credential sees only part of the
// records ("anonymous reads never show drafts"), and Only, when set, which
// values of which fields it does see. An answer is then complete only for a
// filter that keeps to those values.
type VisibilityConfig struct {
	Header           string           `yaml:"header"`
	Field            string           `yaml:"field"`
	RestrictedValues []string         `yaml:"restricted_values"`
	Description      string           `yaml:"description"`
	Restricted       string           `yaml:"restricted"`
	Only             map[string][]any `yaml:"only"`
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

// Consistency levels.
const (
	ConsistencySnapshot = "snapshot"
	ConsistencyKeyset   = "keyset"
	ConsistencyNone     = "none"
)

// Field types.
var fieldTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "array": true, "object": true, "timestamp": true}

// scalarTypes are the types an array's elements may declare.
var scalarTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "timestamp": true}

// IsScalarType reports whether typ is a scalar field type (string,
// integer, number, boolean, timestamp).
func IsScalarType(typ string) bool { return scalarTypes[typ] }

// Error is one problem in a configuration file, with its line.
type Error struct {
	// Line is the problem's line (from 1); 0 when it has none.
	Line int
	// Column is the column (from 1) of the key or value at fault, when
	// the problem is about one (0 otherwise); Error does not print it.
	Column int
	// Path is the dotted path of keys and list indexes to the value at
	// fault, "config" for the document as a whole.
	Path string
	// Msg says what is wrong, in airlock's words.
	Msg string
}

func (e Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Errors is every problem found in a configuration file.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Load reads and parses a configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(b)
	if err != nil {
		return nil, err
	}
	cfg.baseDir = filepath.Dir(path)
	return cfg, nil
}

// Warnings are problems a configuration may run with but should not keep:
// aliases past their end date.
func (c *Config) Warnings(now time.Time) []string { return c.expiredAliases(now) }

// BaseDir is the directory relative paths in the configuration (schema and
// OpenAPI files) are read from: the configuration file's own.
func (c *Config) BaseDir() string { return c.baseDir }

// Parse parses a configuration strictly: unknown keys are errors with
// line numbers, and every semantic problem is reported, not only the first.
// The error is a Errors.
func Parse(b []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, Errors{Error(strictyaml.SyntaxError(b, err))}
	}
	if second := strictyaml.SecondDocument(b); second > 0 {
		return nil, Errors{{Line: second, Path: "config", Msg: "a second YAML document: a configuration is one document; remove the --- and what follows it, or merge the two"}}
	}
	// Duplicates are reported and dropped first; then the document is
	// decoded by a walk against the configuration's types that reports
	// every unknown key (with the key that was meant) and every value of
	// the wrong type, and goes on past them, so that what was read is
	// still validated: a misspelled key is reported together with the
	// required key it leaves missing.
	errs := fromYAML(strictyaml.DropDuplicateKeys(&root))
	var cfg Config
	decoded, keyLines := strictyaml.Decode(&root, &cfg)
	errs = append(errs, fromYAML(decoded)...)
	cfg.root, cfg.keyLines = &root, keyLines
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

// withoutLines drops the errors on lines already reported: a value yaml
// could not read is also missing or zero to the checks that follow.
func withoutLines(errs, reported Errors) Errors {
	lines := map[int]bool{}
	for _, e := range reported {
		lines[e.Line] = true
	}
	var out Errors
	for _, e := range errs {
		if !lines[e.Line] {
			out = append(out, e)
		}
	}
	return out
}

// fromYAML is the decoder's problems as configuration errors.
func fromYAML(problems []strictyaml.Problem) Errors {
	var out Errors
	for _, p := range problems {
		out = append(out, Error(p))
	}
	return out
}

// keyLine reports the line of the key at the dotted path when the document
// sets it (with any value, null included; through an alias or a merge
// too), and whether it does.
func (c *Config) keyLine(path ...string) (int, bool) {
	line, ok := c.keyLines[strings.Join(path, ".")]
	return line, ok
}

// line finds the line of a dotted path in the YAML tree (0 when unknown).
// Path elements are map keys or list indexes.
func (c *Config) line(path ...string) int { return strictyaml.Line(c.root, path...) }

// at is path with one more key.
func at(path []string, k string) []string { return append(append([]string(nil), path...), k) }

// joinPath is a key path as errors name it: "config" for the document.
func joinPath(path []string) string {
	if len(path) == 0 {
		return "config"
	}
	return strings.Join(path, ".")
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
		p := ResolvePagination(r.Pagination)
		srcs := ""
		if len(r.Sources) > 0 {
			names := make([]string, len(r.Sources))
			for i, s := range r.Sources {
				names[i] = s.Name
			}
			srcs = ", sources " + strings.Join(names, "/")
		}
		method := "GET"
		if ListKind(r) != ListQuery {
			method = "POST"
		}
		out = append(out, fmt.Sprintf("resource %s: %s %s via %s, dialect %s (consistency %s), %d fields, %d filters%s",
			name, method, r.List.Path, r.Upstream, p.Dialect, p.Consistency, len(r.Fields), len(r.Filters), srcs))
	}
	return out
}
