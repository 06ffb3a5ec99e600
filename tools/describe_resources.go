package tools

import (
	"context"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

type describeArgs struct {
	Resource string `json:"resource,omitempty" jsonschema:"Describe only this resource (default: all)."`
}

func (describeArgs) schema(s *jsonschema.Schema) {
	p := prop(s, "resource")
	p.MinLength, p.Examples = jsonschema.Ptr(1), []any{"subscriptions"}
}

var describeInput = generate[describeArgs]()

// describeData is describe_resources' data.
type describeData struct {
	Environment string         `json:"environment"`
	Resources   []resourceInfo `json:"resources"`
	// Numbers says how numbers travel (envelope.IJSON): the same for
	// every resource and every answer.
	Numbers string `json:"numbers"`
}

// numbersNote is describeData.Numbers.
const numbersNote = "An integer beyond ±(2^53−1), or a number a double cannot hold exactly, arrives as a string of its digits; send it back as that string (ids, filters, exclusions, groups, params): as a number it is refused."

// resourceInfo is one resource: its fields, filters, pagination, limits,
// credential and actions.
type resourceInfo struct {
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	Upstream      string         `json:"upstream"`
	Fields        []fieldInfo    `json:"fields"`
	DefaultFields []string       `json:"default_fields"`
	Filters       []filterInfo   `json:"filters"`
	Pagination    paginationInfo `json:"pagination"`
	Sources       []string       `json:"sources"`
	Visibility    string         `json:"visibility"`
	Limits        limitsInfo     `json:"limits"`
	// DefaultFilter is applied to the keys a caller does not set.
	DefaultFilter map[string]any `json:"default_filter,omitempty"`
	// Credential is the credential's form and where its secrets are read:
	// what the answers are visible to, never the secrets.
	Credential        *transport.CredentialInfo `json:"credential,omitempty"`
	UpstreamResultCap int                       `json:"upstream_result_cap,omitempty"`
	Actions           []actionInfo              `json:"actions"`
}

func (resourceInfo) schema(s *jsonschema.Schema) {
	// A resource without filters has none (null).
	nullable(prop(s, "filters"))
}

type fieldInfo struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Elements    string   `json:"elements,omitempty"`
	Nullable    bool     `json:"nullable"`
	Enum        []string `json:"enum,omitempty"`
	Sensitive   bool     `json:"sensitive,omitempty"`
	Queryable   bool     `json:"queryable,omitempty"`
	Deprecated  bool     `json:"deprecated,omitempty"`
	Decision    bool     `json:"decision,omitempty"`
	Permission  bool     `json:"permission,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Aliases     []string `json:"aliases,omitempty"`
	Description string   `json:"description,omitempty"`
	ID          bool     `json:"id,omitempty"`
	Version     bool     `json:"version,omitempty"`
	// Decoded names how the API encodes the field (base64): its values,
	// in items, filters and previews, are the decoded text.
	Decoded string `json:"decoded,omitempty"`
}

type filterInfo struct {
	Name         string `json:"name"`
	Op           string `json:"op"`
	SentUpstream bool   `json:"sent_upstream"`
	Field        string `json:"field,omitempty"`
	Description  string `json:"description,omitempty"`
	// MatchedBy is "upstream" for a search (op search): its matches are
	// the upstream's judgment, which airlock cannot re-check, so an
	// answer through it is never complete (SEARCH_MATCHES_UNVERIFIED).
	MatchedBy string `json:"matched_by,omitempty"`
	// Expression names the language of the list's filter expression the
	// filter is sent in (odata, jql, lucene, or declared): an operator
	// or value it cannot carry is applied by airlock alone.
	Expression string `json:"expression,omitempty"`
	// Key is the filter's part of a keyed read's key condition (a
	// DynamoDB Query): "partition" must be given one value in every
	// search (or the search is refused, partition_required); "sort" is
	// one of the sort key's filters, of which a search gives one (or a
	// gte and an lte together).
	Key string `json:"key,omitempty" jsonschema:"partition: every search must give this filter one value (the list reads one partition); sort: a condition on the sort key, one such filter per search (or a gte and an lte one together, a range)"`
}

type paginationInfo struct {
	Dialect     string `json:"dialect"`
	Consistency string `json:"consistency"`
	PageSize    int    `json:"page_size"`
	// Snapshot says where a snapshot consistency comes from: a value the
	// first page names and every later page is read at.
	Snapshot string `json:"snapshot,omitempty"`
}

type limitsInfo struct {
	MaxItems      limitInfo `json:"max_items"`
	MaxPages      limitInfo `json:"max_pages"`
	DeadlineMS    limitInfo `json:"deadline_ms"`
	ResponseBytes int       `json:"response_bytes"`
}

// limitInfo is a budget's default and the most a caller may ask for.
type limitInfo struct {
	Default int `json:"default"`
	Cap     int `json:"cap"`
}

// actionInfo is one action: what it writes, to how many, under which
// precondition and approval.
type actionInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Destructive bool   `json:"destructive"`
	// Params is the JSON Schema of the action's parameters.
	Params         map[string]any      `json:"params"`
	Precondition   []config.RuleConfig `json:"precondition"`
	Conditional    string              `json:"conditional"`
	Effect         []effectInfo        `json:"effect"`
	IdempotencyKey bool                `json:"idempotency_key"`
	MaxTargets     int                 `json:"max_targets"`
	Approval       approvalInfo        `json:"approval"`
	BulkMaxBatch   *int                `json:"bulk_max_batch,omitempty"`
	CannotBeUndone []string            `json:"cannot_be_undone,omitempty"`
	Compensation   string              `json:"compensation,omitempty"`
	Principals     *principalsInfo     `json:"principals,omitempty"`
}

func (actionInfo) schema(s *jsonschema.Schema) {
	// An action without a precondition has none (null).
	nullable(prop(s, "precondition"))
}

type effectInfo struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	To    any    `json:"to"`
}

// approvalInfo is an action's approval policy.
type approvalInfo struct {
	Mode            string          `json:"mode"`
	AboveTargets    int             `json:"above_targets,omitempty"`
	WhenDestructive bool            `json:"when_destructive,omitempty"`
	Environments    []string        `json:"environments,omitempty"`
	UnknownCategory []string        `json:"unknown_category,omitempty"`
	TTLSeconds      int             `json:"ttl_seconds,omitempty"`
	FourEyes        bool            `json:"four_eyes,omitempty"`
	Approvers       *principalsInfo `json:"approvers,omitempty"`
}

func (approvalInfo) schema(s *jsonschema.Schema) {
	enum(prop(s, "mode"), selection.ApprovalNone, selection.ApprovalClient, selection.ApprovalOperator)
}

// principalsInfo is a principals restriction: the groups and scopes that
// let an OAuth principal through.
type principalsInfo struct {
	Groups []string `json:"groups,omitempty"`
	Scopes []string `json:"scopes,omitempty"`
}

// describeTraits are the tool's traits, in the catalog.
var describeTraits = Traits{Name: DescribeResourcesName, Hints: Hints{ReadOnly: Yes, Destructive: No, Idempotent: Yes, OpenWorld: No}, Scope: ScopeRead}

// DescribeResources is the describe_resources tool: what airlock can read,
// how completely, and within which limits.
func DescribeResources(d *Deps) Spec {
	return Spec{
		Traits:      describeTraits,
		Title:       "Describe the configured resources",
		Description: `Resources in detail: fields, filters, consistency, budgets, actions (params, precondition, effect, approval).`,
		Input:       resourceSchema(describeInput, d.Runtime, "Default: all.", false, nil),
		Data:        generate[describeData](),
		Handler:     d.describe,
	}
}

func (d *Deps) describe(_ context.Context, call *Call) *envelope.Envelope {
	var a describeArgs
	errs, bad := decodeArgs(DescribeResourcesName, describeInput, call.Raw, &a)
	names := d.Runtime.ResourceNames()
	if a.Resource != "" && !bad["resource"] {
		if _, ok := d.Runtime.Resources[a.Resource]; !ok {
			errs = append(errs, envelope.NewFieldError("resource", envelope.FieldUnknownResource, names))
		}
		names = []string{a.Resource}
	}
	if len(errs) > 0 {
		return invalid(errs)
	}
	out := make([]resourceInfo, 0, len(names))
	for _, n := range names {
		r := d.Runtime.Resources[n]
		info := describeResource(r)
		info.Actions = describeActions(d.Runtime, r)
		out = append(out, info)
	}
	return &envelope.Envelope{Data: &describeData{Environment: d.Runtime.Environment, Resources: out, Numbers: numbersNote}}
}

func describeResource(r *upstream.Resource) resourceInfo {
	var fields []fieldInfo
	for _, name := range sortedFieldNames(r) {
		f, _ := r.Field(name)
		m := fieldInfo{Name: name, Type: f.Type, Elements: f.Elements, Nullable: f.Nullable, Enum: f.Enum, Sensitive: f.Sensitive, Queryable: f.Sensitive && f.Queryable,
			Deprecated: f.Deprecated, Decision: f.Decision || f.Permission, Permission: f.Permission, Required: f.Required,
			Description: f.Description, ID: name == r.Config.IDField, Version: name == r.Config.VersionField, Decoded: f.Decode}
		for _, a := range f.Aliases {
			m.Aliases = append(m.Aliases, a.Name+" until "+a.Until)
		}
		fields = append(fields, m)
	}
	var filters []filterInfo
	for _, name := range sortedFilterNames(r) {
		fc := r.Config.Filters[name]
		m := filterInfo{Name: name, Op: "eq", SentUpstream: fc.Param != "" || fc.MultiParam != "" || fc.Null != nil || fc.Expression != "", Field: fc.Field, Description: fc.Description}
		if fc.Op != "" {
			m.Op = fc.Op
		}
		if fc.Search {
			m.Op, m.MatchedBy = "search", "upstream"
		}
		if x := r.Config.List.Expression; fc.Expression != "" && x != nil {
			m.Expression = x.Language
			if m.Expression == "" {
				m.Expression = "declared"
			}
			m.Key = config.ResolveExpression(x).KeyCondition.KeyRole(name)
		}
		filters = append(filters, m)
	}
	var sources []string
	for _, s := range r.Sources {
		sources = append(sources, s.Name)
	}
	l := r.Limits
	out := resourceInfo{
		Name: r.Name, Description: r.Description, Upstream: r.Host(),
		Fields: fields, DefaultFields: r.DefaultFields(), Filters: filters,
		Pagination: paginationInfo{Dialect: r.Pagination.Dialect, Consistency: r.Consistency(), PageSize: r.Pagination.PageSize, Snapshot: snapshotInfo(r)},
		Sources:    sources,
		Visibility: r.Visibility(),
		Limits: limitsInfo{
			MaxItems:      limitInfo{Default: r.DefaultMaxItems, Cap: l.MaxItems.Cap},
			MaxPages:      limitInfo{Default: l.MaxPages.Default, Cap: l.MaxPages.Cap},
			DeadlineMS:    limitInfo{Default: l.DeadlineMS.Default, Cap: l.DeadlineMS.Cap},
			ResponseBytes: l.ResponseBytes,
		},
		Credential:        r.Upstream.Credential(),
		UpstreamResultCap: r.Config.ResultCap,
	}
	if len(r.Config.DefaultFilter) > 0 {
		out.DefaultFilter = r.Config.DefaultFilter
	}
	return out
}

// describeActions renders a resource's actions for describe_resources.
func describeActions(rt *upstream.Runtime, r *upstream.Resource) []actionInfo {
	out := []actionInfo{}
	for _, name := range rt.ActionNames() {
		a := rt.Actions[name]
		if a.Resource != r {
			continue
		}
		c := a.Config
		effect := make([]effectInfo, 0, len(c.Effect))
		for _, e := range c.Effect {
			op := e.Op
			if op == "" {
				op = "set"
			}
			effect = append(effect, effectInfo{Field: e.Field, Op: op, To: e.To})
		}
		m := actionInfo{
			Name: name, Description: c.Description, Destructive: c.Destructive,
			Params: c.Params, Precondition: c.Precondition, Conditional: c.Conditional, Effect: effect,
			IdempotencyKey: c.IdempotencyHeader != "", MaxTargets: c.MaxTargets,
			Approval: approvalPolicy(c.Approval), CannotBeUndone: c.Irreversible, Compensation: c.Compensation,
		}
		if m.Params == nil {
			m.Params = map[string]any{"type": "object", "maxProperties": 0}
		}
		if c.Bulk != nil {
			m.BulkMaxBatch = envelope.Ptr(c.Bulk.MaxBatch)
		}
		if c.Principals != nil {
			m.Principals = principalsRule(c.Principals)
		}
		out = append(out, m)
	}
	return out
}

func approvalPolicy(p *config.ApprovalConfig) approvalInfo {
	if p == nil {
		return approvalInfo{Mode: selection.ApprovalNone}
	}
	m := approvalInfo{Mode: p.Mode, AboveTargets: p.AboveTargets, WhenDestructive: p.Destructive, Environments: p.Environments,
		UnknownCategory: p.UnknownGroup, TTLSeconds: int(p.TTL.Seconds()), FourEyes: p.FourEyes}
	if p.Mode == "" {
		m.Mode = selection.ApprovalNone
	}
	if p.Approvers != nil {
		m.Approvers = principalsRule(p.Approvers)
	}
	return m
}

func principalsRule(p *config.PrincipalsConfig) *principalsInfo {
	return &principalsInfo{Groups: p.Groups, Scopes: p.Scopes}
}

func sortedFieldNames(r *upstream.Resource) []string {
	out := make([]string, 0, len(r.Config.Fields))
	for k := range r.Config.Fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedFilterNames(r *upstream.Resource) []string {
	out := make([]string, 0, len(r.Config.Filters))
	for k := range r.Config.Filters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// snapshotInfo says, for a list read at one point in time by a value of
// its first page, which value and how it is sent ("" otherwise).
func snapshotInfo(r *upstream.Resource) string {
	s := r.Pagination.Snapshot
	if s == nil || s.Param == "" || r.Consistency() != config.ConsistencySnapshot {
		return ""
	}
	return "every page is read at the first page's " + s.From + " (sent as " + s.Param + ")"
}
