package tools

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/airlock-mcp/airlock/selection"
)

// The tools' names. Only the catalog's rows spell them; whatever names a
// tool (its traits, its argument errors, the server, the demo) reads them
// here.
const (
	DescribeResourcesName = "describe_resources"
	SearchAllName         = "search_all"
	PreviewSelectionName  = "preview_selection"
	GetSelectionName      = "get_selection"
	CommitBulkActionName  = "commit_bulk_action"
	GetOperationName      = "get_operation"
	// DecideSelectionName is the app-only tool the approval view calls
	// (not in the catalog: the server adds it beside preview_selection).
	DecideSelectionName = "decide_selection"
)

// catalog is every tool airlock has, in the order it offers them: each
// one's traits and the constructor of its Spec. It is the one list that
// names the tools; what depends on a tool's name (scopes, the write path,
// tasks, metric labels) reads its traits here.
var catalog = []struct {
	Traits
	build func(*Deps) Spec
}{
	{describeTraits, DescribeResources},
	{searchTraits, SearchAll},
	{previewTraits, PreviewSelection},
	{getSelectionTraits, GetSelection},
	{commitTraits, CommitBulkAction},
	{getOperationTraits, GetOperation},
}

// ToolNames are the names of every tool airlock has, in the order it
// offers them.
func ToolNames() []string {
	names := make([]string, len(catalog))
	for i, t := range catalog {
		names[i] = t.Name
	}
	return names
}

// TraitsOf returns the named tool's traits; false when airlock has no such
// tool.
func TraitsOf(name string) (Traits, bool) {
	i := slices.IndexFunc(catalog, func(t struct {
		Traits
		build func(*Deps) Spec
	}) bool {
		return t.Name == name
	})
	if i < 0 {
		return Traits{}, false
	}
	return catalog[i].Traits, true
}

// ToolScope is the scope a token needs to call the named tool: ScopeWrite
// for the tools on the write path, ScopeRead for every other.
func ToolScope(tool string) string {
	if t, ok := TraitsOf(tool); ok {
		return t.Scope
	}
	return ScopeRead
}

// MayCall reports whether p may call the named tool: any principal that no
// access token names holds the whole server; an OAuth principal needs the
// tool's scope (ScopeWrite covers the read tools too).
func MayCall(p selection.Principal, tool string) bool {
	if !p.OAuth {
		return true
	}
	return slices.Contains(p.Scopes, ScopeWrite) || slices.Contains(p.Scopes, ToolScope(tool))
}

// Specs returns every tool, built on d.
func (d *Deps) Specs() []Spec {
	out := make([]Spec, len(catalog))
	for i, t := range catalog {
		out[i] = t.build(d)
	}
	return out
}

// TaskSearchDeadline is the deadline_ms above which a call of a tool that
// runs as a task when long (TaskWhenLong) does.
const TaskSearchDeadline = 20 * time.Second

// longCall reports whether a call asks for a deadline over
// TaskSearchDeadline.
func longCall(raw json.RawMessage) bool {
	var a struct {
		DeadlineMS *float64 `json:"deadline_ms"`
	}
	return json.Unmarshal(raw, &a) == nil && a.DeadlineMS != nil && time.Duration(*a.DeadlineMS)*time.Millisecond > TaskSearchDeadline
}
