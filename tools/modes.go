package tools

import (
	"fmt"
	"slices"
	"strings"
)

// Options choose which tools a server offers. The zero value offers every
// tool the configuration can use.
type Options struct {
	// ReadOnly offers no tool on the write path: neither
	// commit_bulk_action nor preview_selection, which exists only to
	// prepare a commit.
	ReadOnly bool
	// Tools, when set, offers only these tools (by name).
	Tools []string
	// ExcludeTools never offers these tools.
	ExcludeTools []string
}

// writePath are the tools that exist only to change the upstream.
var writePath = []string{"preview_selection", "commit_bulk_action"}

// Enabled returns the tools to offer under the deps' Options: without an
// action in the configuration, or read-only, none on the write path. An
// unknown name in Tools or ExcludeTools is an error that names the tools.
func (d *Deps) Enabled() ([]Spec, error) {
	all := d.Specs()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = s.Name
	}
	for _, n := range append(append([]string(nil), d.Options.Tools...), d.Options.ExcludeTools...) {
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("no tool named %q (tools: %s)", n, strings.Join(names, ", "))
		}
	}
	noActions := d.Runtime != nil && len(d.Runtime.Actions) == 0
	var out []Spec
	for _, s := range all {
		switch {
		case (d.Options.ReadOnly || noActions) && slices.Contains(writePath, s.Name):
		case len(d.Options.Tools) > 0 && !slices.Contains(d.Options.Tools, s.Name):
		case slices.Contains(d.Options.ExcludeTools, s.Name):
		default:
			out = append(out, s)
		}
	}
	return out, nil
}
