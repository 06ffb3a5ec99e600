package upstream

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream/dialect"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Forms first proven on etcd's v3 JSON gateway and SAP CAP's OData V4 (see
// config/reach.go): a continuation derived from the last item, members
// proto3 JSON omits, a snapshot read from the first page, field values the
// API encodes.

// afterParse completes a parsed page with what depends on the answer
// rather than the dialect: a relative next link resolved against the
// page's own URL and kept without a query credential, and the snapshot
// the first page names.
func (r *Resource) afterParse(resp *transport.Response, doc any, st dialect.State, pg *dialect.Page) {
	// A relative next link is a reference from the page that carried it
	// (RFC 3986: resolved against the document's own URL, not base_url);
	// it is followed on the source's own origin only (PageRequest).
	if pg.Next.NextURL != nil && resp != nil && resp.URL != nil {
		pg.Next.NextURL = resp.URL.ResolveReference(pg.Next.NextURL)
	}
	// A next link built from the request's URL carries a query credential:
	// the scan keeps (and may store) it without.
	pg.Next.NextURL = r.Upstream.WithoutCredential(pg.Next.NextURL)
	if rc := pg.Next.Recheck; rc != nil && pg.Next.RecheckFollowing {
		// The page after, built from the page's own URL.
		rc.NextURL = r.Upstream.WithoutCredential(rc.NextURL)
	}
	r.readSnapshot(doc, st, pg)
	r.readRemaining(doc, pg)
}

// readSnapshot reads the snapshot the list declares (Kubernetes'
// resourceVersion, etcd's header.revision). The scan's snapshot is the
// first page's, never one a later page names: a first page without it
// leaves the scan without one (NO_SNAPSHOT, consistency none). Where every
// page must name it (no param sends it back), a later page without it is
// NO_SNAPSHOT too, and one naming another is INCONSISTENT_SNAPSHOT (Scan
// account).
func (r *Resource) readSnapshot(doc any, st dialect.State, pg *dialect.Page) {
	sc := r.Pagination.Snapshot
	if sc == nil {
		return
	}
	v, vst := dialect.ReadToken(doc, sc.From)
	switch {
	case vst == dialect.Unreadable:
		pg.Doubt(sc.From)
		pg.NoSnapshot = true
	case !st.Started && v != "":
		pg.Snapshot, pg.Next.Snapshot = v, v
	case !st.Started:
		pg.NoSnapshot = true
	case sc.Param != "":
		// A later page answers with the upstream's current value (etcd's
		// header.revision), not the one it was asked to read at.
	case v == "":
		pg.NoSnapshot = true
	default:
		pg.Snapshot = v
	}
}

// readRemaining reads how many items a page says follow it (Kubernetes'
// remainingItemCount): an estimate of the list's size, and, beside an end,
// a contradiction (remaining_vs_end).
func (r *Resource) readRemaining(doc any, pg *dialect.Page) {
	path := r.Pagination.Remaining
	if path == "" {
		return
	}
	n, counted, st := dialect.ReadCount(doc, path)
	switch {
	case st == dialect.Unreadable:
		pg.Doubt(path)
	case counted:
		pg.Estimate = &n
		ends := (pg.Next.Done && pg.Next.End == envelope.EndProven) || pg.Next.Probe
		if n > 0 && ends {
			// The page ends the list, and says more follow: neither is
			// believed.
			pg.Unknown(dialect.SignalRemainingVsEnd, false)
		}
	}
}

// fieldDecoder decodes one field the API encodes (decode: base64).
type fieldDecoder struct{ name, path string }

func fieldDecoders(r *Resource) []fieldDecoder {
	var out []fieldDecoder
	for _, name := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		if f := r.Config.Fields[name]; f != nil && f.Decode == config.DecodeBase64 {
			out = append(out, fieldDecoder{name: name, path: r.FieldPath(name)})
		}
	}
	return out
}

// DecodeFields decodes, in place and exactly once, every field an item's
// API encodes: filters, review, digests and ids then see the value itself.
// A value that is not base64, or not UTF-8 text once decoded, is refused:
// read raw, it would be compared, shown and digested as what it is not.
func (r *Resource) DecodeFields(doc map[string]any) error {
	if r.Config.ItemEncoding == config.EncodingDynamoDB {
		return dialect.FromAttributeValues(doc)
	}
	for _, d := range r.decoders {
		v, ok := jsonvalue.Get(doc, d.path)
		if !ok || v == nil {
			continue
		}
		s, isStr := v.(string)
		if !isStr {
			return transport.BadResponse("field %s is not a base64 string as declared", d.name)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return transport.BadResponse("field %s is not base64 as declared", d.name)
		}
		if !utf8.Valid(b) {
			return transport.BadResponse("field %s is not UTF-8 text once decoded", d.name)
		}
		jsonvalue.Set(doc, d.path, string(b))
	}
	return nil
}

// Decoded reports whether the API encodes a field's value (decode:
// base64): airlock reads it decoded and writes it back encoded.
func (r *Resource) Decoded(field string) bool {
	if r.Config.ItemEncoding != "" {
		return true
	}
	fd, ok := r.Field(field)
	return ok && fd.Decode != ""
}

// Encode writes a decoded field's value back in the API's encoding; any
// other value is returned as it is.
func (r *Resource) Encode(field string, v any) any {
	if !r.Decoded(field) {
		return v
	}
	if r.Config.ItemEncoding == config.EncodingDynamoDB {
		fd, _ := r.Field(field)
		return dialect.ToAttributeValue(v, fd)
	}
	s, ok := v.(string)
	if !ok {
		s = fmt.Sprint(v)
		if v == nil {
			return nil
		}
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// decodedID is an id read from a raw item (before DecodeFields) as the
// scan holds ids: decoded when the id field is (decode: base64).
func (r *Resource) decodedID(raw string) string {
	if raw == "" || !r.Decoded(r.Config.IDField) {
		return raw
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return raw
	}
	return string(b)
}

// DecodeItem is a copy of an item as the upstream sent it, with the
// fields the API encodes decoded (as every read of airlock's sees it).
func (r *Resource) DecodeItem(doc map[string]any) (map[string]any, error) {
	if len(r.decoders) == 0 && r.Config.ItemEncoding == "" {
		return doc, nil
	}
	c := CopyDoc(doc)
	if err := r.DecodeFields(c); err != nil {
		return nil, err
	}
	return c, nil
}

// AsRead is a record as a read by id gives it: a copy, the fields the API
// encodes decoded and every declared normalization applied, so that it
// compares with what reads show.
func (r *Resource) AsRead(doc map[string]any) (map[string]any, error) {
	c := CopyDoc(doc)
	if err := r.DecodeFields(c); err != nil {
		return nil, err
	}
	r.Normalize(c)
	return c, nil
}

// Normalize applies every declared normalization to an item in place, as
// a read does.
func (r *Resource) Normalize(doc map[string]any) {
	s := &Scan{r: r, normalized: map[string]bool{}}
	s.normalizeLocked(doc)
}
