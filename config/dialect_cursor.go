package config

import "fmt"

// DialectCursor continues with a cursor: one the answer hands out
// (next_cursor), or the last item's id or declared field (Stripe's
// starting_after, etcd's range key), while an end flag says more follows.
const DialectCursor = "cursor"

// cursorKeys are the keys the cursor dialect reads beyond sharedKeys.
type cursorKeys struct {
	HasMore         string `yaml:"has_more"`
	IsLast          string `yaml:"is_last"`
	CursorParam     string `yaml:"cursor_param"`
	NextCursor      string `yaml:"next_cursor"`
	CursorField     string `yaml:"cursor_field"`
	CursorExclusive string `yaml:"cursor_exclusive"`
}

// resolveCursor fills in the cursor dialect's defaults: Stripe's names.
func resolveCursor(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "limit")
	if p.NextCursor == "" {
		setDefault(&p.CursorParam, "starting_after")
	} else {
		setDefault(&p.CursorParam, "cursor")
	}
	setDefault(&p.Consistency, ConsistencyKeyset)
}

// checkCursor checks that the cursor comes from somewhere, and the forms
// that derive it from the last item (see reach.go), which read no
// next_cursor.
func checkCursor(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	if pg.HasMore == "" && pg.NextCursor == "" {
		l.add("the cursor dialect needs has_more (cursor = last id) or next_cursor (a response path)", at("pagination")...)
	}
	checkEndFlags(l, pg, at)
	if pg.CursorField != "" {
		if pg.NextCursor != "" {
			l.add("cursor_field names the last item's field the cursor is read from: the cursor dialect with has_more, not next_cursor", at("pagination", "cursor_field")...)
		}
		if _, ok := r.Fields[pg.CursorField]; !ok {
			l.add(fmt.Sprintf("field %q is not declared", pg.CursorField), at("pagination", "cursor_field")...)
		}
	}
	switch pg.CursorExclusive {
	case "":
	case CursorNulSuffix:
		if pg.NextCursor != "" {
			l.add("cursor_exclusive makes the last item's key exclusive: the cursor dialect with has_more, not next_cursor", at("pagination", "cursor_exclusive")...)
		}
	default:
		l.add("use nul_suffix (the next key is the last one and a NUL byte, as etcd's inclusive range key needs)", at("pagination", "cursor_exclusive")...)
	}
}

// checkEndFlags refuses two end flags: one says more, the other last.
func checkEndFlags(l *errList, pg PaginationConfig, at func(k ...string) []string) {
	if pg.HasMore != "" && pg.IsLast != "" {
		l.add("set one end flag: has_more (true: more follows) or is_last (true: the last page)", at("pagination", "is_last")...)
	}
}

// setDefault sets *dst to v when it is unset.
func setDefault(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}
