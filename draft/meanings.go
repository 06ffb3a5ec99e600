package draft

import (
	"maps"
	"slices"
)

// ambiguousSizeParams are page size parameters whose meaning differs
// between APIs, with what each reading does: the name alone never makes
// either a fact, so the draft leaves a TODO and probe --fix decides from
// the live API (it tries the parameter, then none).
var ambiguousSizeParams = map[string]string{
	"$top": "in OData V4 $top caps the whole result [SAP CAP asked for $top=100 serves 100 of 3,000 and stops], while Microsoft Graph reads it as a page size",
}

// AmbiguousSizeParams are the page size parameters a draft leaves a TODO
// because APIs read them differently, sorted.
func AmbiguousSizeParams() []string { return slices.Sorted(maps.Keys(ambiguousSizeParams)) }

// sizeParamValue is page_size_param's drafted value for the parameter
// name: the name, or a TODO when APIs read it differently.
func sizeParamValue(name string) string {
	if why, ok := ambiguousSizeParams[name]; ok {
		return quote(todo(name + " or none: " + why + "; probe --fix decides from the live API"))
	}
	return quote(name)
}
