package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// pathPlaceholder is an OpenAPI path parameter ({customer}) left in a
// path: nothing airlock sends fills it. A template reference ({{id}}) is
// not one.
var pathPlaceholder = regexp.MustCompile(`(^|[^{$])\{([^{}]+)\}([^}]|$)`)

// unfilledPlaceholders reports every path (list, get, the actions'
// request and bulk paths, a source's) that still holds a path parameter
// written the OpenAPI way: a request to it would carry the braces
// literally, to a resource nobody meant.
func (c *Config) unfilledPlaceholders() Errors {
	var errs Errors
	check := func(p string, at ...string) {
		if m := pathPlaceholder.FindStringSubmatch(p); m != nil {
			errs = append(errs, Error{Line: c.line(at...), Path: joinPath(at), Msg: fmt.Sprintf("the path parameter {%s} is not filled: write the value this configuration reads (%q sends the braces as they are)", m[2], p)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Resources)) {
		r := c.Resources[name]
		if r == nil {
			continue
		}
		check(r.List.Path, "resources", name, "list", "path")
		if r.Get != nil {
			check(r.Get.Path, "resources", name, "get", "path")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Actions)) {
		a := c.Actions[name]
		if a == nil {
			continue
		}
		if a.Request != nil {
			check(a.Request.Path, "actions", name, "request", "path")
		}
		if a.Bulk != nil {
			check(a.Bulk.Path, "actions", name, "bulk", "path")
		}
	}
	return errs
}
