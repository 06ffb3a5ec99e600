package upstream

import (
	"context"
	"errors"
	"maps"
	"net/url"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Reads outside a scan, for checks of a configuration against the live API
// (package probe): pages as the upstream answers them, and what the client
// holds about its credential and rate limit.

// ErrPartitionNeeded is ListScope's answer for a Query whose partition
// nothing pins: the read is not asked for (DynamoDB refuses a Query
// without it), and a check that needs it is not verifiable.
var ErrPartitionNeeded = errors.New("a Query needs its partition: declare default_filter with one")

// ListScope is filter as a read outside a scan (a probe, contract --live)
// sends it: for a Query (list.expression.key_condition), with the
// partition the resource's default_filter pins when filter does not, and
// ErrPartitionNeeded when neither pins one the key condition carries.
// Another list's filter is returned as given; filter is never modified.
func (r *Resource) ListScope(filter map[string]any) (map[string]any, error) {
	part := r.KeyPartition()
	if part == "" {
		return filter, nil
	}
	out := maps.Clone(filter)
	if out == nil {
		out = map[string]any{}
	}
	if _, set := out[part]; !set {
		if v, ok := r.Config.DefaultFilter[part]; ok {
			out[part] = config.NormalizeValue(v)
		}
	}
	for _, fe := range r.CheckListFilter(out) {
		if fe.Code == envelope.FieldPartitionRequired {
			return nil, ErrPartitionNeeded
		}
	}
	return out, nil
}

// WithPageSize is a copy of the resource that reads pages of n items from
// its first source.
func (r *Resource) WithPageSize(n int) *Resource {
	pg := r.Pagination
	pg.PageSize = n
	return &Resource{
		Name: r.Name, Description: r.Description, List: dialect.List{Upstream: r.Upstream, Config: r.Config, Pagination: pg,
			Sources: r.Sources[:1], Dialect: r.DialectFor(pg), Expression: r.Expression},
		Limits: r.Limits, Contract: r.Contract, norms: r.norms, decoders: r.decoders,
	}
}

// RawWalk is what a walk of the list with a filter sent upstream read,
// without airlock's own re-check: what the upstream itself selects.
type RawWalk struct {
	Docs     map[string]map[string]any // normalized, by id
	Complete bool
	Pages    int
}

// RawWalkSpec says how to walk a list raw.
type RawWalkSpec struct {
	Filter    map[string]any
	RequestID string
	// MaxPages bounds the pages read.
	MaxPages int
	// Send sends each page's request: the caller counts and bounds them.
	Send func(context.Context, transport.Request) (*transport.Response, error)
	// Keep is given each page's items as the upstream sent them.
	Keep func([]any)
	// EndSeen says that an unfiltered walk showed the dialect's end signal:
	// a page without it then ends the list.
	EndSeen bool
}

// WalkRaw reads the first source's pages with the filter sent upstream, up
// to the end the dialect proves or spec.MaxPages; the end is complete
// only when proven. A Query's partition is ListScope's: without one,
// nothing is sent and the error is ErrPartitionNeeded.
func (r *Resource) WalkRaw(ctx context.Context, spec RawWalkSpec) (RawWalk, error) {
	maxPages := spec.MaxPages
	filter, err := r.ListScope(spec.Filter)
	if err != nil {
		return RawWalk{Docs: map[string]map[string]any{}}, err
	}
	// The configured page size: the fewest requests for what a filtered
	// call would read.
	pg := r.Pagination
	d := r.DialectFor(pg)
	idPath := r.FieldPath(r.Config.IDField)
	w := RawWalk{Docs: map[string]map[string]any{}}
	st := dialect.State{}
	if err := r.EnsurePIT(ctx, r.Sources[0], &st, spec.RequestID); err != nil {
		return w, err
	}
	norm := &Scan{r: r, normalized: map[string]bool{}}
	for w.Pages < maxPages {
		req, err := r.PageRequest(r.Sources[0], st, dialect.ListOptions{Filter: filter, PageSize: pg.PageSize, RequestID: spec.RequestID})
		if err != nil {
			return w, err
		}
		resp, err := spec.Send(ctx, req)
		if err != nil {
			return w, err
		}
		w.Pages++
		doc, err := r.decodeBody(resp, st)
		if err != nil {
			return w, err
		}
		items, err := r.ItemsOf(doc)
		if err != nil {
			return w, err
		}
		page, err := d.Parse(resp, doc, items, st)
		if err != nil {
			return w, err
		}
		r.afterParse(resp, doc, st, &page)
		if spec.Keep != nil {
			spec.Keep(page.Items)
		}
		fresh := 0
		for _, it := range page.Items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			m = CopyDoc(m)
			if err := r.DecodeFields(m); err != nil {
				return w, err
			}
			id, ok := jsonvalue.GetID(m, idPath)
			if !ok {
				continue
			}
			if _, dup := w.Docs[id]; !dup {
				fresh++
			}
			c := CopyDoc(m)
			norm.normalizeLocked(c)
			w.Docs[id] = c
		}
		next := page.Next
		switch {
		case next.Done:
			w.Complete = next.End == envelope.EndProven
			return w, nil
		case next.Probe:
			// The unfiltered walk showed whether the upstream sends its
			// signal: its absence here is then the end.
			w.Complete = spec.EndSeen
			return w, nil
		case st.Started && (fresh == 0 || sameContinuation(st, next)):
			return w, nil
		}
		st = next
	}
	return w, nil
}

func CopyDoc(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = CopyDoc(sub)
		}
		out[k] = v
	}
	return out
}

// FirstPageRequest is the request for the first page of the first source
// at the resource's page size, outside a scan; a search_after list's point
// in time is not opened (see OpenFirstPage). A Query reads the partition
// ListScope gives it; without one the error is ErrPartitionNeeded.
func (r *Resource) FirstPageRequest(requestID string) (transport.Request, error) {
	scope, err := r.ListScope(nil)
	if err != nil {
		return transport.Request{}, err
	}
	return r.PageRequest(r.Sources[0], dialect.State{}, dialect.ListOptions{Filter: scope, PageSize: r.Pagination.PageSize, RequestID: requestID})
}

// OpenFirstPage opens the point in time a search_after list is read in (a
// request of its own; other dialects need none) and returns the request for
// the first page in it, as FirstPageRequest scopes it.
func (r *Resource) OpenFirstPage(ctx context.Context, requestID string) (transport.Request, error) {
	scope, err := r.ListScope(nil)
	if err != nil {
		return transport.Request{}, err
	}
	st := dialect.State{}
	if err := r.EnsurePIT(ctx, r.Sources[0], &st, requestID); err != nil {
		return transport.Request{}, err
	}
	return r.PageRequest(r.Sources[0], st, dialect.ListOptions{Filter: scope, PageSize: r.Pagination.PageSize, RequestID: requestID})
}

// DecodePage reads a first page's body as a scan does: JSON, no error
// object in a success, GraphQL data without errors. A body that decodes to
// JSON null is read: where its items are is PageItems' question.
func (r *Resource) DecodePage(resp *transport.Response) (any, error) {
	return r.decodeBody(resp, dialect.State{})
}

// PageItems are the items of a decoded page, where the configuration says
// they are.
func (r *Resource) PageItems(doc any) ([]any, error) {
	return r.ItemsOf(doc)
}

func (r *Resource) decodeBody(resp *transport.Response, st dialect.State) (any, error) {
	doc, err := transport.DecodeJSONBody(resp, true)
	if err == nil && r.Pagination.Dialect == config.DialectGraphQL {
		err = r.graphqlCheck(doc, st)
	}
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// SentFilter says how a list request carries filter upstream: what it
// sends ("" when none of it) and, for a value kept back, why ("" when the
// configuration declares no upstream form for it).
func (r *Resource) SentFilter(filter map[string]any) (sent, why string) {
	p := &dialect.Params{Kind: config.ListKind(&r.Config), Query: url.Values{}, Body: map[string]any{}}
	for _, f := range r.SendFilters(p, filter) {
		if f.Why != "" && why == "" {
			why = f.Why
		}
	}
	return p.Describe(), why
}
