package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A pagination dialect is a kind: the keys it reads (its own struct, from
// whose yaml tags the set is taken), its defaults and its checks live in
// its file (dialect_NAME.go), and its row in dialectKinds below is the one
// place that says it exists. Every pagination key a dialect does not read
// is refused with its line, so that a key set for another dialect is never
// accepted and ignored. The resolved PaginationConfig stays the runtime
// form: flat, every key any dialect reads.

// DialectKind is one pagination dialect: its name, the questions other
// packages ask of it, and what it reads, defaults and checks.
type DialectKind struct {
	// Name is pagination.dialect's value.
	Name string
	// Items is where the dialect's answers hold their items when
	// list.items is not set ("" is the answer itself).
	Items string
	// Method, when set, is the one list method the dialect reads with
	// (the continue dialect and Link headers follow GET; search_after
	// posts its body).
	Method string
	// GraphQL: the list request is a GraphQL query whose page size and
	// cursor are variables, and the answer's items are a connection's.
	GraphQL bool
	// SendsSnapshot: the dialect builds its continuation itself, so a
	// snapshot value can be sent beside it (pagination.snapshot.param); a
	// next link or a numbered page carries its own.
	SendsSnapshot bool
	// Positional: pages are asked for by position (an offset, a page
	// number), which an upstream may refuse past the end it knows.
	Positional bool

	// keys is the struct whose yaml tags are the keys the dialect reads
	// beyond sharedKeys.
	keys reflect.Type
	// resolve fills in the dialect's defaults; the shared ones are
	// ResolvePagination's.
	resolve func(p *PaginationConfig)
	// check reports what is wrong in a resource's use of the dialect,
	// beyond keys it does not read (refused before).
	check func(l *errList, r *ResourceConfig, at func(k ...string) []string)
}

// dialectKinds is every pagination dialect, in the order errors list them.
// A new dialect is its file here, its runtime in upstream (a row in
// upstream's table of constructors) and this row.
var dialectKinds = [...]DialectKind{
	{Name: DialectCursor, Items: "data", SendsSnapshot: true,
		keys: reflect.TypeFor[cursorKeys](), resolve: resolveCursor, check: checkCursor},
	{Name: DialectLink, Method: "GET",
		keys: reflect.TypeFor[linkKeys](), resolve: resolveLink},
	{Name: DialectOffset, Items: "items", Positional: true,
		keys: reflect.TypeFor[offsetKeys](), resolve: resolveOffset, check: checkOffset},
	{Name: DialectPage, Items: "items", Positional: true,
		keys: reflect.TypeFor[pageKeys](), resolve: resolvePage, check: checkPage},
	{Name: DialectContinue, Items: "items", Method: "GET", SendsSnapshot: true,
		keys: reflect.TypeFor[continueKeys](), resolve: resolveContinue},
	{Name: DialectNextURL, Items: "results",
		keys: reflect.TypeFor[nextURLKeys](), resolve: resolveNextURL, check: checkNextURL},
	{Name: DialectGraphQL, Items: "items", GraphQL: true, SendsSnapshot: true,
		keys: reflect.TypeFor[graphqlKeys](), resolve: resolveGraphQL, check: checkGraphQL},
	{Name: DialectSearchAfter, Items: "hits.hits", Method: "POST", SendsSnapshot: true,
		keys: reflect.TypeFor[searchAfterKeys](), resolve: resolveSearchAfter, check: checkSearchAfter},
	{Name: DialectContinueObject, Items: "items",
		keys: reflect.TypeFor[continueObjectKeys](), resolve: resolveContinueObject, check: checkContinueObject},
	{Name: DialectBookmark, Items: "docs", Method: "POST",
		keys: reflect.TypeFor[bookmarkKeys](), resolve: resolveBookmark},
}

// sharedKeys are the pagination keys every dialect reads: how the list is
// sized and how consistent it is, its total (compared with what was read
// even where it proves no end), how continuations expire, the snapshot
// and remaining count read beside any page, and members omitted when zero.
type sharedKeys struct {
	Dialect         string          `yaml:"dialect"`
	Consistency     string          `yaml:"consistency"`
	PageSize        int             `yaml:"page_size"`
	PageSizeParam   string          `yaml:"page_size_param"`
	Total           string          `yaml:"total"`
	TotalHeader     string          `yaml:"total_header"`
	TotalExact      bool            `yaml:"total_exact"`
	TotalRelation   string          `yaml:"total_relation"`
	Expiry          *ExpiryConfig   `yaml:"expiry"`
	AbsentMeansZero []string        `yaml:"absent_means_zero"`
	Snapshot        *SnapshotConfig `yaml:"snapshot"`
	Remaining       string          `yaml:"remaining"`
}

// DialectKindOf returns the dialect named name, and whether there is one.
func DialectKindOf(name string) (DialectKind, bool) {
	for _, k := range dialectKinds {
		if k.Name == name {
			return k, true
		}
	}
	return DialectKind{}, false
}

// DialectKinds returns every pagination dialect, a copy of the table.
func DialectKinds() []DialectKind { return slices.Clone(dialectKinds[:]) }

// Keys returns the pagination keys the dialect reads, the shared ones
// included, sorted.
func (k DialectKind) Keys() []string {
	keys := append(keysOf(reflect.TypeFor[sharedKeys]()), keysOf(k.keys)...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// Reads reports whether the dialect reads the pagination key.
func (k DialectKind) Reads(key string) bool { return slices.Contains(k.Keys(), key) }

// keysOf lists the yaml keys of a struct type, inline structs' included.
func keysOf(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case opts == "inline":
			out = append(out, keysOf(f.Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}

// dialectNames lists the dialects for an error message.
func dialectNames() string {
	names := make([]string, len(dialectKinds))
	for i, k := range dialectKinds {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// readersOf names the dialects that read key, "a, b and c".
func readersOf(key string) string {
	var names []string
	for _, k := range dialectKinds {
		if k.Reads(key) {
			names = append(names, k.Name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// validateDialect checks a resource's pagination against its dialect: the
// dialect is one of the table's, every key set is one it reads, the list
// method is one it reads with, and its own checks.
func (c *Config) validateDialect(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	k, ok := DialectKindOf(pg.Dialect)
	switch {
	case pg.Dialect == "":
		l.add("required: one of "+dialectNames(), at("pagination", "dialect")...)
		return
	case !ok:
		l.add("unknown dialect; use one of "+dialectNames(), at("pagination", "dialect")...)
		return
	}
	for _, key := range keysOf(reflect.TypeFor[PaginationConfig]()) {
		path := at("pagination", key)
		line, set := c.keyLine(path...)
		if !set || k.Reads(key) {
			continue
		}
		verb := "reads"
		if strings.Contains(readersOf(key), " and ") {
			verb = "read"
		}
		l.errs = append(l.errs, Error{Line: line, Path: strings.Join(path, "."),
			Msg: fmt.Sprintf("the %s dialect does not read %s; %s %s it", k.Name, key, readersOf(key), verb)})
	}
	switch {
	case k.Method == "GET" && ListKind(r) == ListBody:
		l.add("the "+k.Name+" dialect reads with GET", at("list", "method")...)
	case k.Method == "POST" && ListKind(r) != ListBody:
		l.add("the "+k.Name+" dialect posts its body: set list.method: POST", at("list", "method")...)
	}
	if k.check != nil {
		k.check(l, r, at)
	}
}
