package read

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Decisions about an upstream answer, from the most to the least
// permissive.
const (
	// DecideAccept: the answer keeps every contract.
	DecideAccept = "accept"
	// DecideAcceptWithWarning: only fields no decision rests on drifted.
	DecideAcceptWithWarning = "accept_with_warning"
	// DecideContinueSearch: no items yet, but the upstream says there are
	// more pages: keep reading, claim nothing.
	DecideContinueSearch = "continue_search"
	// DecideRefuse: decision fields drifted; reads withhold the records and
	// writes must not be planned on them.
	DecideRefuse = "refuse_or_request_review"
	// DecideStop: the answer cannot be used at all (an error, another
	// content type, a broken write answer).
	DecideStop = "stop"
)

// Decision is what airlock makes of one answer, with the reasons in
// operational language.
type Decision struct {
	Decision string   `json:"decision"`
	Details  []string `json:"details,omitempty"`
}

// DecideList judges a list answer of the resource as the scan would.
func DecideList(r *upstream.Resource, resp *transport.Response) Decision {
	if resp.Status < 200 || resp.Status > 299 {
		return Decision{DecideStop, []string{fmt.Sprintf("the upstream answered %d", resp.Status)}}
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return Decision{DecideStop, []string{err.Error()}}
	}
	items, err := r.ItemsOf(doc) // plain values too, with list.scalar_item_field
	if err != nil {
		return Decision{DecideStop, []string{err.Error()}}
	}
	pg, err := r.Dialect.Parse(resp, doc, items, dialect.State{})
	if err != nil {
		return Decision{DecideStop, []string{err.Error()}}
	}
	if len(items) == 0 && !pg.Next.Done {
		return Decision{DecideContinueSearch, []string{"no items on this page, and the upstream says more pages follow: an empty page proves nothing"}}
	}
	decision := map[string]bool{r.Config.IDField: true}
	for name, fc := range r.Config.Filters {
		decision[fc.FieldOf(name)] = true
	}
	counts := map[string]int{}
	var order []string
	drift := false
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return Decision{DecideStop, []string{"an item is not a JSON object"}}
		}
		vs, _ := r.Contract.Check(m, decision)
		for _, v := range vs {
			if !v.Decision {
				drift = true
				continue
			}
			d := v.Describe()
			if counts[d] == 0 {
				order = append(order, d)
			}
			counts[d]++
		}
	}
	if len(order) > 0 {
		var details []string
		for _, d := range order {
			details = append(details, fmt.Sprintf("%s in %d of %d items", d, counts[d], len(items)))
		}
		return Decision{DecideRefuse, details}
	}
	if drift {
		return Decision{DecideAcceptWithWarning, []string{"fields no decision rests on drifted"}}
	}
	return Decision{DecideAccept, nil}
}

// DecideItem judges a single-item answer (a re-read before a write).
func DecideItem(r *upstream.Resource, resp *transport.Response) Decision {
	if resp.Status < 200 || resp.Status > 299 {
		return Decision{DecideStop, []string{fmt.Sprintf("the upstream answered %d", resp.Status)}}
	}
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return Decision{DecideStop, []string{err.Error()}}
	}
	item, _ := jsonvalue.Get(doc, "")
	if r.Config.Get != nil {
		item, _ = jsonvalue.Get(doc, r.Config.Get.Item)
	}
	m, ok := item.(map[string]any)
	if !ok {
		return Decision{DecideStop, []string{"the item is not a JSON object"}}
	}
	vs, _ := r.Contract.Check(m, map[string]bool{r.Config.IDField: true})
	var details []string
	drift := false
	for _, v := range vs {
		if v.Decision {
			details = append(details, v.Describe())
		} else {
			drift = true
		}
	}
	switch {
	case len(details) > 0:
		return Decision{DecideRefuse, details}
	case drift:
		return Decision{DecideAcceptWithWarning, []string{"fields no decision rests on drifted"}}
	}
	return Decision{DecideAccept, nil}
}

// Probe reads one small page of the resource (read-only) and judges it:
// `airlock contract --live`. A Query reads the partition its
// default_filter pins (upstream.Resource.ListScope); without one nothing
// is sent and the decision is stop, saying why.
func Probe(ctx context.Context, r *upstream.Resource, requestID string, pageSize int) Decision {
	scope, err := r.ListScope(nil)
	if err != nil {
		// Nothing is sent: a Query without its partition proves nothing.
		return Decision{DecideStop, []string{"not verifiable: " + err.Error()}}
	}
	st := dialect.State{}
	if err := r.EnsurePIT(ctx, r.Sources[0], &st, requestID); err != nil {
		return Decision{DecideStop, []string{"the upstream could not be read: " + err.Error()}}
	}
	req, err := r.PageRequest(r.Sources[0], st, dialect.ListOptions{Filter: scope, PageSize: pageSize, RequestID: requestID})
	if err != nil {
		return Decision{DecideStop, []string{"the upstream could not be read: " + err.Error()}}
	}
	resp, err := r.Upstream.Do(ctx, req)
	if err != nil {
		var he *transport.HTTPError
		if errors.As(err, &he) && he.Kind == transport.FailStatus && resp != nil {
			return DecideList(r, resp)
		}
		return Decision{DecideStop, []string{"the upstream could not be read: " + err.Error()}}
	}
	return DecideList(r, resp)
}

// RecordedResponse builds a Response from a recorded status, headers and
// body (versioned fixtures).
func RecordedResponse(status int, headers map[string]string, body []byte) *transport.Response {
	h := http.Header{}
	keys := make([]string, 0, len(headers))
	for k := range headers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Set(k, headers[k])
	}
	return &transport.Response{Status: status, Header: h, Body: body}
}

// ParseFixtureName splits a versioned fixture file name,
// <resource>-<operation>-v<N>.json.
func ParseFixtureName(name string) (resource, operation string, version int, ok bool) {
	base, found := strings.CutSuffix(name, ".json")
	if !found {
		return "", "", 0, false
	}
	i := strings.LastIndex(base, "-v")
	if i < 0 {
		return "", "", 0, false
	}
	v, err := strconv.Atoi(base[i+2:])
	if err != nil || v < 1 {
		return "", "", 0, false
	}
	rest := base[:i]
	j := strings.LastIndex(rest, "-")
	if j < 0 {
		return "", "", 0, false
	}
	return rest[:j], rest[j+1:], v, true
}
