package probe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// A credential may see only part of a collection and the upstream may
// never say so (WordPress read anonymously shows no drafts). The evidence
// is in the live API: a filter value the upstream refuses for this
// credential while it answers another value of the same filter, or
// declared values of a field that the whole list, read to its end, never
// holds. Either is named, with the declaration that makes every answer
// say so (visibility.restricted, and only the values seen).

// minItemsUnseen is how many items a whole list must hold before declared
// values it never shows are taken as a sign of a restricted view rather
// than of a small collection.
const minItemsUnseen = 100

// maxUnseenAsked bounds the unseen values asked of the upstream per field.
const maxUnseenAsked = 3

// visibilityCheck looks, field by declared enum, for the two signs of a
// restricted view and, unless the resource declares one, reports it with
// the declaration to add (visibility.FIELD).
func (p *prober) visibilityCheck(ctx context.Context) {
	r := p.r
	if p.truth == nil {
		return // only a whole list shows which values never appear
	}
	for _, field := range slices.Sorted(maps.Keys(r.Config.Fields)) {
		fd := r.Config.Fields[field]
		if fd == nil || len(fd.Enum) == 0 || fd.Sensitive || partitions(r.Config.Sources, field) {
			continue
		}
		seen := map[string]bool{}
		for _, v := range p.commonValues(field, false) {
			seen[jsonvalue.String(v)] = true
		}
		var unseen []string
		for _, e := range fd.Enum {
			if !seen[e] {
				unseen = append(unseen, e)
			}
		}
		if len(unseen) == 0 || len(seen) == 0 {
			continue
		}
		var refused []string
		if name := p.filterOn(field); name != "" {
			for _, v := range unseen[:min(len(unseen), maxUnseenAsked)] {
				if p.left() <= 0 {
					break
				}
				if a := p.askFilter(ctx, map[string]any{name: v}, 1); a.refused {
					refused = append(refused, fmt.Sprintf("%s=%s (%s)", name, v, strings.TrimPrefix(a.evidence, "?")))
				}
			}
		}
		if len(refused) == 0 && len(p.truth) < minItemsUnseen {
			continue
		}
		shown := slices.Sorted(maps.Keys(seen))
		var ev []string
		if len(refused) > 0 {
			ev = append(ev, "the upstream refuses "+strings.Join(refused, "; ")+" for this credential, and answers the values it shows")
		}
		ev = append(ev, fmt.Sprintf("%d of %d declared values of %s (%s) appear in none of the %d items of the whole list", len(unseen), len(fd.Enum), field, strings.Join(unseen, ", "), len(p.truth)))
		at := "visibility." + field
		if v := r.Config.Visibility; v != nil && (v.Restricted != "" || len(v.Only) > 0) {
			p.add(at, OK, strings.Join(ev, "; ")+": the resource declares its restricted view", "")
			continue
		}
		p.add(at, Wrong, strings.Join(ev, "; ")+": the credential sees part of the collection, and answers would say complete for all of it",
			fmt.Sprintf("declare the view, so that every answer beyond it says VISIBILITY_RESTRICTED: visibility: {restricted: %q, only: {%s: [%s]}}",
				"the credential sees only "+field+" "+strings.Join(shown, ", "), field, strings.Join(shown, ", ")))
	}
}

// partitions says whether the resource's sources split it by the field
// (one source per region): the list probe walks is one partition, whose
// other values live in the other sources.
func partitions(sources []config.SourceConfig, field string) bool {
	for _, src := range sources {
		if _, ok := src.Match[field]; ok {
			return true
		}
	}
	return false
}

// filterOn names a filter on the field that is sent upstream as a
// parameter ("" when none is).
func (p *prober) filterOn(field string) string {
	for _, name := range slices.Sorted(maps.Keys(p.r.Config.Filters)) {
		fc := p.r.Config.Filters[name]
		if fc != nil && fc.Param != "" && fc.FieldOf(name) == field && !config.Comparison(fc.Op) && fc.Op != "contains" {
			return name
		}
	}
	return ""
}
