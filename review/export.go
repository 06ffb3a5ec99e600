package review

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/selection"
)

// Manifest export formats.
const (
	ExportCSV  = "csv"
	ExportJSON = "json"
)

// ExportManifest writes every member of a selection, in manifest order:
// id, version, review fields and the before-values of the fields the
// action changes. CSV has one column per field (review fields first, then
// before.FIELD); JSON is one object with the selection's identity and the
// members. Sensitive fields never reach the store, so they cannot appear.
func ExportManifest(ctx context.Context, st selection.Store, sel *selection.Selection, format string, w io.Writer) error {
	switch format {
	case ExportCSV:
		return exportCSV(ctx, st, sel, w)
	case ExportJSON:
		return exportJSON(ctx, st, sel, w)
	}
	return fmt.Errorf("export format %q: want csv or json", format)
}

func eachMember(ctx context.Context, st selection.Store, sel *selection.Selection, fn func(selection.Record) error) error {
	return st.EachRecord(ctx, sel.ID, func(r selection.Record) error {
		if r.Disposition != selection.Member {
			return nil
		}
		return fn(r)
	})
}

func exportCSV(ctx context.Context, st selection.Store, sel *selection.Selection, w io.Writer) error {
	// One pass for the columns (records may differ in the fields they
	// carry), one for the rows.
	review, before := map[string]bool{}, map[string]bool{}
	if err := eachMember(ctx, st, sel, func(r selection.Record) error {
		for k := range r.Review {
			review[k] = true
		}
		for k := range r.Before {
			before[k] = true
		}
		return nil
	}); err != nil {
		return err
	}
	delete(review, "id")
	rcols, bcols := sortedSet(review), sortedSet(before)
	cw := csv.NewWriter(w)
	header := append([]string{"id", "version"}, rcols...)
	for _, b := range bcols {
		header = append(header, "before."+b)
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	row := make([]string, len(header))
	if err := eachMember(ctx, st, sel, func(r selection.Record) error {
		row = row[:0]
		row = append(row, r.ID, r.Version)
		for _, c := range rcols {
			row = append(row, cell(r.Review, c))
		}
		for _, c := range bcols {
			row = append(row, cell(r.Before, c))
		}
		return cw.Write(row)
	}); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// cell renders a value for CSV: strings as they are, anything else as
// canonical JSON, absent as empty.
func cell(m map[string]any, k string) string {
	v, ok := m[k]
	switch {
	case !ok:
		return ""
	case v == nil:
		return "null"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := jsonvalue.Canonical(v)
	return string(b)
}

func exportJSON(ctx context.Context, st selection.Store, sel *selection.Selection, w io.Writer) error {
	head, _ := json.Marshal(map[string]any{
		"selection_id": sel.ID, "digest": sel.Digest, "action": sel.Action, "action_digest": sel.ActionDigest,
		"resource": sel.Resource, "environment": sel.Environment, "upstream": sel.Upstream, "kind": sel.Kind,
		"members_count": sel.Summary.Members,
	})
	// Stream the members into the object: a million members never sit in
	// memory at once.
	// I-JSON, as the tools' answers: an id beyond 2^53 is a string, which
	// a JavaScript or spreadsheet reader cannot round into another id.
	head = envelope.IJSON(head)
	if _, err := fmt.Fprintf(w, "%s,\"members\":[", head[:len(head)-1]); err != nil {
		return err
	}
	first := true
	if err := eachMember(ctx, st, sel, func(r selection.Record) error {
		b, err := json.Marshal(map[string]any{"id": r.ID, "version": r.Version, "fields": r.Review, "before": r.Before})
		if err != nil {
			return err
		}
		b = envelope.IJSON(b)
		if !first {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		first = false
		_, err = w.Write(b)
		return err
	}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "]}\n")
	return err
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
