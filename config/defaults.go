package config

import (
	"net/http"
	"time"
)

// Defaults applied where the configuration is silent. They are deliberately
// conservative: a response budget well under what MCP clients truncate at.
const (
	DefaultPageSize      = 100
	DefaultMaxItems      = 50
	DefaultMaxItemsCap   = 1000
	DefaultMaxPages      = 200
	DefaultMaxPagesCap   = 5000
	DefaultDeadlineMS    = 15000
	DefaultDeadlineMSCap = 120000
	DefaultResponseBytes = 24000
	DefaultScanItems     = 200000
)

// NormalizeInvariants returns the invariants with their values in the
// form decoded JSON has (see NormalizeValue).
func NormalizeInvariants(invs []InvariantConfig) []InvariantConfig {
	out := make([]InvariantConfig, len(invs))
	for i, inv := range invs {
		inv.If.Value, inv.Then.Value = normalizeYAMLValue(inv.If.Value), normalizeYAMLValue(inv.Then.Value)
		out[i] = inv
	}
	return out
}

// DefaultItemsPath is where a dialect's answers hold their items when
// list.items is not set.
func DefaultItemsPath(dialect string) string {
	switch dialect {
	case DialectCursor:
		return "data"
	case DialectLink:
		return ""
	case DialectNextURL:
		return "results"
	case DialectSearchAfter:
		return "hits.hits"
	default:
		return "items"
	}
}

// ResolvePagination fills in the dialect's defaults: parameter names,
// response paths, page size and consistency.
func ResolvePagination(p PaginationConfig) PaginationConfig {
	if p.PageSize == 0 {
		p.PageSize = DefaultPageSize
	}
	if p.Concurrency == 0 {
		p.Concurrency = 1
	}
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	if s := p.Snapshot; s != nil && s.Param != "" {
		// The first page's value sent with every later page reads the
		// whole list at one point in time.
		set(&p.Consistency, ConsistencySnapshot)
	}
	switch p.Dialect {
	case DialectCursor:
		set(&p.PageSizeParam, "limit")
		if p.NextCursor == "" {
			set(&p.CursorParam, "starting_after")
		} else {
			set(&p.CursorParam, "cursor")
		}
		set(&p.Consistency, ConsistencyKeyset)
	case DialectLink:
		set(&p.PageSizeParam, "per_page")
		set(&p.Consistency, ConsistencyNone)
	case DialectOffset:
		set(&p.PageSizeParam, "limit")
		set(&p.OffsetParam, "offset")
		if p.TotalHeader == "" {
			set(&p.Total, "total")
		}
		set(&p.Consistency, ConsistencyNone)
	case DialectPage:
		set(&p.PageSizeParam, "per_page")
		set(&p.PageParam, "page")
		if p.TotalHeader == "" {
			set(&p.Total, "total")
		}
		if p.FirstPage == nil {
			one := 1
			p.FirstPage = &one
		}
		set(&p.Consistency, ConsistencyNone)
	case DialectContinue:
		set(&p.PageSizeParam, "limit")
		set(&p.ContinueParam, "continue")
		set(&p.ContinuePath, "metadata.continue")
		set(&p.ResourceVersion, "metadata.resourceVersion")
		set(&p.Remaining, "metadata.remainingItemCount")
		if p.Snapshot == nil {
			// The continue token carries the snapshot; resourceVersion
			// names it, and every page must name the same.
			p.Snapshot = &SnapshotConfig{From: p.ResourceVersion}
		}
		set(&p.Consistency, ConsistencySnapshot)
	case DialectNextURL:
		set(&p.PageSizeParam, "page_size")
		set(&p.Next, "next")
		set(&p.Consistency, ConsistencyNone)
	case DialectGraphQL:
		set(&p.PageSizeParam, "first")
		set(&p.CursorParam, "after")
		set(&p.HasMore, "pageInfo.hasNextPage")
		set(&p.NextCursor, "pageInfo.endCursor")
		set(&p.Total, "totalCount")
		set(&p.Consistency, ConsistencyKeyset)
	case DialectContinueObject:
		resolveContinueObject(&p)
	case DialectSearchAfter:
		set(&p.PageSizeParam, "size")
		set(&p.SearchAfter, "search_after")
		set(&p.SortValues, "sort")
		if p.TotalHeader == "" {
			set(&p.Total, "hits.total.value")
			if p.Total == "hits.total.value" {
				set(&p.TotalRelation, "hits.total.relation")
			}
		}
		if p.PIT != nil {
			set(&p.Consistency, ConsistencySnapshot)
		}
		set(&p.Consistency, ConsistencyKeyset)
	}
	if p.Total == NoTotal {
		p.Total, p.TotalRelation = "", ""
	}
	if p.PageSizeParam == NoPageSize {
		// The server alone decides its page size (SAP CAP: OData's $top
		// limits the whole result, not a page).
		p.PageSizeParam = ""
	}
	return p
}

// ResolveLimits fills in the default and cap of every limit the
// configuration leaves out.
func ResolveLimits(l LimitsConfig) LimitsConfig {
	def := func(lim *Limit, d, c int) {
		if lim.Cap == 0 {
			lim.Cap = c
			if lim.Default > c {
				lim.Cap = lim.Default
			}
		}
		if lim.Default == 0 {
			lim.Default = min(d, lim.Cap)
		}
	}
	def(&l.MaxItems, DefaultMaxItems, DefaultMaxItemsCap)
	def(&l.MaxPages, DefaultMaxPages, DefaultMaxPagesCap)
	def(&l.DeadlineMS, DefaultDeadlineMS, DefaultDeadlineMSCap)
	if l.ResponseBytes == 0 {
		l.ResponseBytes = DefaultResponseBytes
	}
	if l.ScanItems == 0 {
		l.ScanItems = DefaultScanItems
	}
	return l
}

// ResolveAction fills in an action's defaults (concurrency, stop rule,
// limits, reconciliation) and puts its values in the form decoded JSON has.
func ResolveAction(cfg ActionConfig) ActionConfig {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Stop.FailureRatio == 0 {
		cfg.Stop.FailureRatio = 0.5
	}
	if cfg.Stop.MinAttempts == 0 {
		cfg.Stop.MinAttempts = 20
	}
	if cfg.MaxTargets == 0 {
		cfg.MaxTargets = 10000
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 3
	}
	if cfg.Reconcile.Rereads == 0 {
		cfg.Reconcile.Rereads = 6
	}
	if cfg.Reconcile.Backoff == 0 {
		cfg.Reconcile.Backoff = 250 * time.Millisecond
	}
	if cfg.Reconcile.MaxBackoff == 0 {
		cfg.Reconcile.MaxBackoff = 4 * time.Second
	}
	cfg.Params = asMap(normalizeYAMLValue(cfg.Params))
	cfg.Precondition = normalizeRules(cfg.Precondition)
	for i := range cfg.Effect {
		cfg.Effect[i].To = normalizeYAMLValue(cfg.Effect[i].To)
	}
	if cfg.Request != nil {
		cfg.Request.Body = normalizeYAMLValue(cfg.Request.Body)
		cfg.Request.Variables = normalizeYAMLValue(cfg.Request.Variables)
		if cfg.Request.GraphQL != "" && cfg.Request.Method == "" {
			cfg.Request.Method = http.MethodPost
		}
	}
	if cfg.Bulk != nil {
		cfg.Bulk.Body = normalizeYAMLValue(cfg.Bulk.Body)
	}
	return cfg
}
