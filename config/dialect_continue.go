package config

// DialectContinue is Kubernetes' continue token, which carries the
// snapshot the list is read at (named by resourceVersion).
const DialectContinue = "continue"

// continueKeys are the keys the continue dialect reads beyond sharedKeys.
// ResourceVersion is the default of snapshot.from.
type continueKeys struct {
	ContinueParam   string `yaml:"continue_param"`
	ContinuePath    string `yaml:"continue_path"`
	ResourceVersion string `yaml:"resource_version"`
}

// resolveContinue fills in the continue dialect's defaults: Kubernetes'
// names, and its snapshot.
func resolveContinue(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "limit")
	setDefault(&p.ContinueParam, "continue")
	setDefault(&p.ContinuePath, "metadata.continue")
	setDefault(&p.ResourceVersion, "metadata.resourceVersion")
	setDefault(&p.Remaining, "metadata.remainingItemCount")
	if p.Snapshot == nil {
		// The continue token carries the snapshot; resourceVersion
		// names it, and every page must name the same.
		p.Snapshot = &SnapshotConfig{From: p.ResourceVersion}
	}
	setDefault(&p.Consistency, ConsistencySnapshot)
}
