package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/internal/configtest"
)

func TestDialects_EveryDialectsMinimalConfigurationParses(t *testing.T) {
	for _, k := range DialectKinds() {
		if _, ok := configtest.DialectMinimal[k.Name]; !ok {
			t.Errorf("dialect %s has no minimal configuration here", k.Name)
			continue
		}
		if _, err := Parse(configtest.WithPaginationKey(k.Name, "", "")); err != nil {
			t.Errorf("dialect %s: %v", k.Name, err)
		}
	}
}

// TestDialects_AKeyTheDialectDoesNotReadIsRefusedWithItsLine: for every
// dialect and every pagination key it does not read, the key set is
// refused at its line, naming the key, the dialect and those that read it.
func TestDialects_AKeyTheDialectDoesNotReadIsRefusedWithItsLine(t *testing.T) {
	refused := 0
	for _, k := range DialectKinds() {
		for _, key := range keysOf(reflect.TypeFor[PaginationConfig]()) {
			if k.Reads(key) {
				continue
			}
			value, ok := configtest.PaginationKeyValues[key]
			if !ok {
				t.Errorf("no test value for %s, which the %s dialect does not read", key, k.Name)
				continue
			}
			refused++
			t.Run(k.Name+"/"+key, func(t *testing.T) {
				got := parseErrors(t, configtest.WithPaginationKey(k.Name, key, value))
				checkErrors(t, got, []wantErr{{9, "resources.items.pagination." + key,
					"the " + k.Name + " dialect does not read " + key + "; " + readersOf(key)}})
			})
		}
	}
	if refused == 0 {
		t.Fatal("no key was refused")
	}
	t.Logf("%d keys refused across %d dialects", refused, len(dialectKinds))
}

func TestDialects_TheRefusalReadsAsDocumented(t *testing.T) {
	got := parseErrors(t, configtest.WithPaginationKey(DialectCursor, "total_pages", "pages"))
	want := "line 9: resources.items.pagination.total_pages: the cursor dialect does not read total_pages; page reads it"
	if len(got) != 1 || got[0].Error() != want {
		t.Errorf("got %v, want %s", got, want)
	}
	got = parseErrors(t, configtest.WithPaginationKey(DialectLink, "is_last", "last"))
	want = "line 9: resources.items.pagination.is_last: the link dialect does not read is_last; cursor and next_url read it"
	if len(got) != 1 || got[0].Error() != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestDialects_AKeyMergedFromAnAnchorIsRefusedWhereItIsWritten: a key the
// dialect does not read is refused however it reaches the pagination,
// at the line it is written on.
func TestDialects_AKeyMergedFromAnAnchorIsRefusedWhereItIsWritten(t *testing.T) {
	y := configtest.Lines(append(append([]string(nil), configtest.MinimalUpstream...),
		"resources:", // 5
		"  items:",
		"    upstream: api",
		"    list: {path: /items}",
		"    pagination: &pg {dialect: page, first_page: 0}", // 9
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
		"  others:",
		"    upstream: api",
		"    list: {path: /others}",
		"    pagination: {<<: *pg, dialect: offset}", // 16
		"    id_field: id",
		"    fields:",
		"      id: {type: string}",
	)...)
	checkErrors(t, parseErrors(t, y), []wantErr{{9, "resources.others.pagination.first_page", "the offset dialect does not read first_page; page reads it"}})
}

// TestDialects_TheTableAndPaginationConfigAgree: every key a dialect's
// struct names is a PaginationConfig key of the same type, none is both
// shared and a dialect's own, and every PaginationConfig key is read by
// some dialect, so that the kinds' structs cannot drift from the runtime
// form.
func TestDialects_TheTableAndPaginationConfigAgree(t *testing.T) {
	types := map[string]reflect.Type{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if opts == "inline" {
				collect(f.Type)
				continue
			}
			types[name] = f.Type
		}
	}
	collect(reflect.TypeFor[PaginationConfig]())
	shared := keysOf(reflect.TypeFor[sharedKeys]())
	check := func(owner string, st reflect.Type) {
		for i := range st.NumField() {
			f := st.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if opts == "inline" {
				if f.Type != reflect.TypeFor[ContinuationObjectConfig]() {
					t.Errorf("%s inlines %s, which PaginationConfig does not", owner, f.Type)
				}
				continue
			}
			if pt, ok := types[name]; !ok || pt != f.Type {
				t.Errorf("%s reads %s as %s; PaginationConfig has %v", owner, name, f.Type, pt)
			}
			if owner != "shared" && slices.Contains(shared, name) {
				t.Errorf("%s names %s, which every dialect reads", owner, name)
			}
		}
	}
	check("shared", reflect.TypeFor[sharedKeys]())
	seen := map[string]bool{}
	for _, k := range DialectKinds() {
		if seen[k.Name] {
			t.Errorf("dialect %s is in the table twice", k.Name)
		}
		seen[k.Name] = true
		if k.resolve == nil || k.keys == nil {
			t.Errorf("dialect %s has no defaults or no keys", k.Name)
			continue
		}
		check(k.Name, k.keys)
	}
	for key := range types {
		if readersOf(key) == "" {
			t.Errorf("no dialect reads pagination.%s", key)
		}
	}
}

func TestDialects_DefaultsComeFromTheKind(t *testing.T) {
	for _, tc := range []struct {
		dialect, items, pageSizeParam, consistency string
	}{
		{DialectCursor, "data", "limit", ConsistencyKeyset},
		{DialectLink, "", "per_page", ConsistencyNone},
		{DialectOffset, "items", "limit", ConsistencyNone},
		{DialectPage, "items", "per_page", ConsistencyNone},
		{DialectContinue, "items", "limit", ConsistencySnapshot},
		{DialectNextURL, "results", "page_size", ConsistencyNone},
		{DialectGraphQL, "items", "first", ConsistencyKeyset},
		{DialectSearchAfter, "hits.hits", "size", ConsistencyKeyset},
		{DialectContinueObject, "items", "limit", ConsistencyKeyset},
	} {
		p := ResolvePagination(PaginationConfig{Dialect: tc.dialect})
		if got := DefaultItemsPath(tc.dialect); got != tc.items {
			t.Errorf("%s: items at %q, want %q", tc.dialect, got, tc.items)
		}
		if p.PageSizeParam != tc.pageSizeParam || p.Consistency != tc.consistency || p.PageSize != DefaultPageSize {
			t.Errorf("%s: resolved to %+v", tc.dialect, p)
		}
	}
}
