package config

import (
	"net/http"
	"time"

	"github.com/airlock-mcp/airlock/config/strictyaml"
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
		inv.If.Value, inv.Then.Value = strictyaml.JSONValue(inv.If.Value), strictyaml.JSONValue(inv.Then.Value)
		out[i] = inv
	}
	return out
}

// DefaultItemsPath is where a dialect's answers hold their items when
// list.items is not set (its kind's Items; "items" for no dialect).
func DefaultItemsPath(dialect string) string {
	if k, ok := DialectKindOf(dialect); ok {
		return k.Items
	}
	return "items"
}

// ResolvePagination fills in the defaults: the page size, the
// concurrency and a snapshot's consistency here, then the dialect's own
// (parameter names, response paths, consistency: see its kind).
func ResolvePagination(p PaginationConfig) PaginationConfig {
	if p.PageSize == 0 {
		p.PageSize = DefaultPageSize
	}
	if p.Concurrency == 0 {
		p.Concurrency = 1
	}
	if s := p.Snapshot; s != nil && s.Param != "" {
		// The first page's value sent with every later page reads the
		// whole list at one point in time.
		setDefault(&p.Consistency, ConsistencySnapshot)
	}
	if k, ok := DialectKindOf(p.Dialect); ok {
		k.resolve(&p)
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
	cfg.Params = asMap(strictyaml.JSONValue(cfg.Params))
	cfg.Precondition = normalizeRules(cfg.Precondition)
	for i := range cfg.Effect {
		cfg.Effect[i].To = strictyaml.JSONValue(cfg.Effect[i].To)
	}
	if cfg.Request != nil {
		cfg.Request.Body = strictyaml.JSONValue(cfg.Request.Body)
		cfg.Request.Variables = strictyaml.JSONValue(cfg.Request.Variables)
		if cfg.Request.GraphQL != "" && cfg.Request.Method == "" {
			cfg.Request.Method = http.MethodPost
		}
	}
	if cfg.Bulk != nil {
		cfg.Bulk.Body = strictyaml.JSONValue(cfg.Bulk.Body)
	}
	return cfg
}
