package draft

import (
	"fmt"
	"sort"
	"strings"
)

// distinctNames gives every field its own name: two keys that read the
// same once snake-cased (repository_url beside repository.url) keep the
// plain name for the field the item holds at its top level, and the other
// is numbered; its path says where it lives. The fields stay sorted.
func distinctNames(fields []*fieldDraft) []*fieldDraft {
	order := append([]*fieldDraft(nil), fields...)
	sort.SliceStable(order, func(i, j int) bool {
		return depth(order[i]) < depth(order[j])
	})
	taken := map[string]bool{}
	for _, f := range order {
		base := f.name
		for i := 2; taken[f.name]; i++ {
			f.name = fmt.Sprintf("%s_%d", base, i)
		}
		if f.name != base && f.path == "" {
			f.path = base
		}
		taken[f.name] = true
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].name < fields[j].name })
	return fields
}

// depth is how deep in the item a field lives: 0 for a top-level key
// written as its name, 1 for one renamed, 2 for a nested one.
func depth(f *fieldDraft) int {
	switch {
	case f.path == "" || f.path == f.name:
		return 0
	case !strings.Contains(f.path, "."):
		return 1
	}
	return 2
}
