package tools

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/upstream"
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

// onWritePath reports whether the named tool is on the write path.
func onWritePath(name string) bool {
	t, ok := TraitsOf(name)
	return ok && t.WritePath
}

// Check refuses options that would silently offer less than they name: an
// unknown tool name, a tool both offered and excluded, a write-path tool
// named while ReadOnly. It needs no configuration, so a command line can
// be refused before anything is done.
func (o Options) Check() error {
	names := ToolNames()
	var errs []string
	for _, n := range append(append([]string(nil), o.Tools...), o.ExcludeTools...) {
		if !slices.Contains(names, n) {
			errs = append(errs, fmt.Sprintf("no tool named %q (tools: %s)", n, strings.Join(names, ", ")))
		}
	}
	for _, n := range o.Tools {
		switch {
		case slices.Contains(o.ExcludeTools, n):
			errs = append(errs, fmt.Sprintf("%s is both offered (tools) and excluded (exclude-tools)", n))
		case o.ReadOnly && onWritePath(n):
			errs = append(errs, fmt.Sprintf("%s is on the write path, which read-only never offers", n))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// CheckFor is Check for a configuration: it also refuses a write-path tool
// named in Tools when the configuration (rt) has no action.
func (o Options) CheckFor(rt *upstream.Runtime) error {
	if err := o.Check(); err != nil {
		return err
	}
	if rt != nil && len(rt.Actions) == 0 {
		for _, n := range o.Tools {
			if onWritePath(n) {
				return fmt.Errorf("%s is on the write path, and the configuration has no action: it would not be offered", n)
			}
		}
	}
	return nil
}

// Enabled returns the tools to offer under the deps' Options: without an
// action in the configuration, or read-only, none on the write path. An
// unknown name in Tools or ExcludeTools, or options that contradict each
// other (see CheckFor), are an error that names the tools (New refuses
// them first).
func (d *Deps) Enabled() ([]Spec, error) {
	if err := d.Options.CheckFor(d.Runtime); err != nil {
		return nil, err
	}
	noActions := d.Runtime != nil && len(d.Runtime.Actions) == 0
	var out []Spec
	for _, s := range d.Specs() {
		switch {
		case (d.Options.ReadOnly || noActions) && s.WritePath:
		case len(d.Options.Tools) > 0 && !slices.Contains(d.Options.Tools, s.Name):
		case slices.Contains(d.Options.ExcludeTools, s.Name):
		default:
			out = append(out, s)
		}
	}
	return out, nil
}
