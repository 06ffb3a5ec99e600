package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/internal/clock"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/upstream/contract"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Runtime is an initialized configuration: upstream clients and resources.
type Runtime struct {
	Environment string
	Upstreams   map[string]*transport.Client
	Resources   map[string]*Resource
	Actions     map[string]*Action
	// Redactor knows every credential the runtime loaded: what airlock
	// stores, logs, returns or exports passes through it.
	Redactor *redact.Redactor
}

// Resource is a resource with every default resolved.
//
// Config is the resource as configured, with one exception (List.Items
// holds the dialect's default when none was written); Pagination, Sources
// and Limits are those parts of it resolved: defaults filled in, base URLs
// expanded. Logic reads the resolved ones. Config keeps the written parts
// because telling a written value from a default needs them (the tools'
// default max_items is the configured default, else the cap, never the
// built-in default), and the config package resolves the written form.
type Resource struct {
	Name        string
	Description string
	// List is how the resource's list is asked for: its configuration,
	// pagination, sources, client and dialect.
	dialect.List
	Limits config.LimitsConfig
	// DefaultMaxItems is max_items when a call sets none: the declared
	// default, else the cap, so that an answer holds as many items as the
	// response budget takes.
	DefaultMaxItems int
	// Contract checks every item read.
	Contract *contract.Contract
	// norms rewrite field values into their declared form on every item
	// read (normalize, null_values, layout).
	norms []fieldNorm
	// endVerified remembers, per source, that a probe saw the upstream
	// send its "more follows" signal (a per-process memory).
	endVerified sync.Map
	// OnRun, when set, is told after each scan run of this resource how
	// many pages it read and items it scanned: Options.ObserveScan, set by
	// Initialize.
	OnRun func(pages, items int)
	// decoders decode the fields the API encodes (decode: base64).
	decoders []fieldDecoder
}

// Options are the runtime dependencies of Initialize.
type Options struct {
	Logger *slog.Logger
	// Getenv reads credentials from the environment; nil means os.Getenv.
	Getenv func(string) string
	// Clock drives the client-side rate limiter, cooldowns, Retry-After
	// dates, the waits between retries and the OAuth token's renewal; nil
	// means the wall clock. A test that gives a fake clock moves it for
	// every such wait to end.
	Clock Clock
	// MaxRetryWait bounds how long one call sleeps through a Retry-After
	// (DefaultMaxRetryWait when zero); a longer wait is reported instead.
	MaxRetryWait time.Duration
	// WithoutCredentials builds a runtime that never calls an upstream:
	// for operator commands (approve, review), which need the actions and
	// their policies but must not need the API's secret.
	WithoutCredentials bool
	// Redactor, when set, receives every credential loaded (so that a
	// logger built before the configuration redacts them too); nil means
	// a new one. Either way the runtime's logger redacts through it.
	Redactor *redact.Redactor
	// WrapTransport, when set, wraps each upstream's HTTP transport (for
	// metrics and traces): it sees every attempt of every request, with
	// the credential in its headers, which it must never record.
	WrapTransport func(upstream string, next http.RoundTripper) http.RoundTripper
	// ObserveScan, when set, is told after each scan run how many pages it
	// read and items it scanned, and of which resource (for metrics).
	ObserveScan func(resource string, pages, items int)
	// DialContext, when set, makes every connection to an upstream, its
	// token endpoint and its login (tests serve them in memory: package
	// internal/memnet); nil means the network.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Clock is the time source logic uses, timers included, so that tests can
// move it.
type Clock = clock.Clock

// WallClock is the real clock.
var WallClock Clock = clock.Real{}

// Initialize builds the runtime from a parsed configuration: loads each
// credential (failing at start-up, not at the first call), creates the HTTP
// clients and resolves every default. A configuration that still holds a
// TODO(...) placeholder (airlock init's draft) is refused with a
// config.Errors naming each one.
func Initialize(ctx context.Context, c *config.Config, opts Options) (*Runtime, error) {
	if errs := c.Unresolved(); len(errs) > 0 {
		return nil, errs
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Clock == nil {
		opts.Clock = WallClock
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New()
	}
	opts.Logger = slog.New(opts.Redactor.Handler(opts.Logger.Handler()))
	rt := &Runtime{Environment: c.Environment, Upstreams: map[string]*transport.Client{}, Resources: map[string]*Resource{}, Actions: map[string]*Action{},
		Redactor: opts.Redactor}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Upstreams)) {
		uc := *c.Upstreams[name]
		base, err := config.ExpandEnv(uc.BaseURL, opts.Getenv)
		if err == nil {
			uc.BaseURL, err = base, checkBaseURL(base)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream %q: base_url: %w", name, err))
			continue
		}
		cl, err := transport.New(name, &uc, transport.Options{Logger: opts.Logger, Getenv: opts.Getenv, Clock: opts.Clock, MaxRetryWait: opts.MaxRetryWait,
			WithoutCredentials: opts.WithoutCredentials, Redactor: opts.Redactor, WrapTransport: opts.WrapTransport, DialContext: opts.DialContext})
		if err != nil {
			errs = append(errs, fmt.Errorf("upstream %q: %w", name, err))
			continue
		}
		rt.Upstreams[name] = cl
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("initialize: %w", errors.Join(errs...))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Resources)) {
		rc := c.Resources[name]
		cl, ok := rt.Upstreams[rc.Upstream]
		if !ok {
			return nil, fmt.Errorf("resource %q: no upstream named %q", name, rc.Upstream)
		}
		r := &Resource{Name: name, Description: rc.Description, List: dialect.List{Upstream: cl, Config: *rc}}
		r.Pagination = config.ResolvePagination(rc.Pagination)
		r.Limits = config.ResolveLimits(rc.Limits)
		r.Sources = append([]config.SourceConfig(nil), rc.Sources...)
		if len(r.Sources) == 0 {
			r.Sources = []config.SourceConfig{{Name: name}}
		}
		r.DefaultMaxItems = r.Limits.MaxItems.Cap
		if rc.Limits.MaxItems.Default > 0 {
			r.DefaultMaxItems = r.Limits.MaxItems.Default
		}
		// Config holds the resolved forms too, so that no reader (a helper
		// handed the whole ResourceConfig included) sees a declared value
		// where the resolved one applies.
		r.Config.Pagination, r.Config.Limits, r.Config.Sources = r.Pagination, r.Limits, r.Sources
		for i, src := range r.Sources {
			if src.BaseURL == "" {
				continue
			}
			base, err := config.ExpandEnv(src.BaseURL, opts.Getenv)
			if err == nil {
				err = checkBaseURL(base)
			}
			if err != nil {
				return nil, fmt.Errorf("resource %q: source %q: base_url: %w", name, src.Name, err)
			}
			r.Sources[i].BaseURL = base
		}
		if r.Config.List.Items == "" {
			r.Config.List.Items = config.DefaultItemsPath(r.Pagination.Dialect)
		}
		if r.Config.List.Items == "." {
			r.Config.List.Items = ""
		}
		r.decoders = fieldDecoders(r)
		r.Dialect = r.DialectFor(r.Pagination)
		r.Expression = config.ResolveExpression(rc.List.Expression)
		r.norms = fieldNorms(r)
		ct, err := contract.Compile(listOf(r), rc.Fields, config.NormalizeInvariants(rc.Invariants), rc.Contract, c.BaseDir())
		if err != nil {
			return nil, fmt.Errorf("resource %q: %w", name, err)
		}
		r.Contract = ct
		if opts.ObserveScan != nil {
			r.OnRun = func(pages, items int) { opts.ObserveScan(name, pages, items) }
		}
		rt.Resources[name] = r
	}
	for _, name := range slices.Sorted(maps.Keys(c.Actions)) {
		ac := c.Actions[name]
		a := newAction(name, *ac, rt.Resources[ac.Resource])
		if rc := ac.Response; rc != nil {
			ct, err := contract.Compile(listOf(a.Resource), rc.Fields, config.NormalizeInvariants(rc.Invariants), nil, c.BaseDir())
			if err != nil {
				return nil, fmt.Errorf("action %q: response: %w", name, err)
			}
			a.Response = ct
		}
		rt.Actions[name] = a
	}
	return rt, nil
}

// ResourceNames returns the resource names, sorted.
func (rt *Runtime) ResourceNames() []string {
	names := make([]string, 0, len(rt.Resources))
	for n := range rt.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ActionNames returns the action names, sorted.
func (rt *Runtime) ActionNames() []string { return slices.Sorted(maps.Keys(rt.Actions)) }

// ReviewFields are the fields a selection's manifest may show: the
// configured allowlist, else the default fields.
func (r *Resource) ReviewFields() []string {
	if len(r.Config.ReviewFields) > 0 {
		return append([]string(nil), r.Config.ReviewFields...)
	}
	return r.DefaultFields()
}

// SelectionTTL is how long a selection of this resource stays committable.
func (r *Resource) SelectionTTL() time.Duration {
	if r.Config.SelectionTTL > 0 {
		return r.Config.SelectionTTL
	}
	return 15 * time.Minute
}

// Host is the upstream host shown in scope (never with credentials).
func (r *Resource) Host() string { return r.Upstream.Host() }

// DefaultFields returns the fields delivered when the caller names none:
// the configured default_fields, else every non-sensitive declared field.
func (r *Resource) DefaultFields() []string {
	if len(r.Config.DefaultFields) > 0 {
		return append([]string(nil), r.Config.DefaultFields...)
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		if f := r.Config.Fields[n]; f != nil && !f.Sensitive {
			out = append(out, n)
		}
	}
	return out
}

// Consistency is the declared consistency of the resource's dialect.
func (r *Resource) Consistency() string { return r.Pagination.Consistency }

// Visibility describes, for scope.visibility, what the credential can see.
func (r *Resource) Visibility() string {
	v := r.Config.Visibility
	switch {
	case v != nil && v.Description != "":
		return v.Description
	case v != nil && v.Restricted != "":
		return envelope.DefaultVisibility + ", which is restricted: " + v.Restricted
	}
	return envelope.DefaultVisibility
}

// checkBaseURL accepts an absolute http(s) URL without credentials.
func checkBaseURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("not an absolute http or https URL")
	case u.User != nil:
		return errors.New("must not carry credentials; use credential.env or credential.file")
	}
	return nil
}

// listOf is the list a contract reads its fields' paths and rules from:
// the resource's, nil for none.
func listOf(r *Resource) *dialect.List {
	if r == nil {
		return nil
	}
	return &r.List
}
