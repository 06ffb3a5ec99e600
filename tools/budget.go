package tools

import (
	"encoding/json"

	"github.com/airlock-mcp/airlock/scancache"
	"github.com/airlock-mcp/airlock/upstream"
)

// Every part of a result that grows with the data is bounded by what it
// costs on the wire (the structured content plus its escaped text copy), so
// that a whole result stays under 32 KB; what a bound cut is said in the
// result. These are the shares of the parts that are not items.
const (
	pageBudget      = 16000 // a page of manifest records or operation targets
	groupBudget     = 8000  // group counts beside items
	previewGroups   = 4000  // a preview's review groups
	previewEffect   = 2000  // a preview's before-value distributions
	previewManifest = 9000  // a preview's first manifest page
	previewAmbig    = 3000  // a preview's ambiguous records
)

// costOf is what a value costs in a tool result.
func costOf(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return scancache.WireCost(b)
}

// fitCount returns how many of the first entries fit the budget: at least
// one when there is any, so that paging always progresses.
func fitCount[T any](entries []T, budget int) int {
	used := 0
	for i, e := range entries {
		used += costOf(e)
		if i > 0 && used > budget {
			return i
		}
	}
	return len(entries)
}

// otherValues is the value of the group that stands for the values a bound
// left out: how many there were. Its count is theirs, so that counts still
// add up to the total.
type otherValues struct {
	OtherValues int `json:"other_values"`
}

// fitGroups keeps, per field, the largest groups (they come sorted by
// count) that fit an equal share of the budget, and folds the rest into
// one group. It returns the fields whose groups were cut, with how many
// values each kept.
func fitGroups(groups map[string][]upstream.Group, budget int) (map[string][]upstream.Group, map[string]int) {
	if len(groups) == 0 {
		return groups, nil
	}
	share := budget / len(groups)
	out := make(map[string][]upstream.Group, len(groups))
	var cut map[string]int
	for field, gs := range groups {
		n := fitCount(gs, share)
		if n >= len(gs) {
			out[field] = gs
			continue
		}
		kept := append([]upstream.Group(nil), gs[:n]...)
		other := upstream.Group{Value: otherValues{}}
		folded := 0
		for _, g := range gs[n:] {
			if ov, ok := g.Value.(map[string]any); ok && ov["other_values"] != nil {
				// An earlier bound's own fold: its values are unknown.
				other.Count += g.Count
				continue
			}
			folded++
			other.Count += g.Count
		}
		other.Value = otherValues{OtherValues: folded}
		out[field] = append(kept, other)
		if cut == nil {
			cut = map[string]int{}
		}
		cut[field] = n
	}
	return out, cut
}
