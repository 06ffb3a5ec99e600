package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// buildInfo is what `airlock version` reports, read from the binary's own
// build information.
type buildInfo struct {
	Version string `json:"version"`
	// Module is the main module's version as the go command stamped it:
	// a tag, a pseudo-version, or "(devel)" for a build from a checkout.
	Module     string `json:"module_version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified"`
	// Release is true when scripts/release stamped the commit and its time
	// at link time.
	Release  bool   `json:"release,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// releaseCommit and releaseDate are set at link time by scripts/release
// (-X main.releaseCommit=… -X main.releaseDate=…). A release is built from
// an export of its commit, which carries no version control information for
// the go command to record, so that the binary depends on nothing but the
// commit; the date is the commit's, so that two builds are identical.
var releaseCommit, releaseDate string

// version is airlock's version: what `airlock version` reports and what
// MCP clients and traces are told. scripts/release sets it at link time
// (-X main.version=…).
var version = "0.1.0"

// readBuildInfo reads the version of airlock (what MCP clients are told),
// and from the binary's build information the commit (when the go command
// stamped it: a build in a git clone), the Go version and the platform.
func readBuildInfo() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return fromBuildInfo(info).stamped(releaseCommit, releaseDate)
}

// stamped is bi with the commit and date a release build was linked with;
// without them (any other build), bi as it is.
func (bi buildInfo) stamped(commit, date string) buildInfo {
	if commit == "" {
		return bi
	}
	bi.Commit, bi.CommitTime, bi.Modified, bi.Release = commit, date, false, true
	return bi
}

func fromBuildInfo(info *debug.BuildInfo) buildInfo {
	bi := buildInfo{Version: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info == nil {
		return bi
	}
	bi.Module = info.Main.Version
	if info.GoVersion != "" {
		bi.Go = info.GoVersion
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			bi.Commit = s.Value
		case "vcs.time":
			bi.CommitTime = s.Value
		case "vcs.modified":
			bi.Modified = s.Value == "true"
		}
	}
	return bi
}

func versionCmd(args []string, stdout io.Writer) error {
	f := newFlags("version", "version [--json]", "Print airlock's version, the commit it was built from and the Go version that built it.\nairlock --version prints the same.")
	asJSON := f.Bool("json", false, "print one JSON object")
	if _, err := f.parse(args, 0, stdout); err != nil {
		return err
	}
	bi := readBuildInfo()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(bi)
	}
	_, err := io.WriteString(stdout, bi.String())
	return err
}

// String is the text `airlock version` prints.
func (bi buildInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "airlock %s\n", bi.Version)
	switch {
	case bi.Commit == "" && bi.Module != "" && bi.Module != "(devel)":
		fmt.Fprintf(&b, "commit:  not recorded (a build of the module's release %s, which names it)\n", bi.Module)
	case bi.Commit == "":
		// -buildvcs=false leaves no trace in the binary: it may come from
		// the command line or from GOFLAGS in the go env, where a plain
		// rebuild in a git clone would not record the commit either.
		b.WriteString("commit:  unknown (built without version control information: build in a git clone with\n" +
			"         go build -buildvcs=true ./cmd/airlock, which overrides a -buildvcs=false in GOFLAGS; go env GOFLAGS shows it)\n")
	default:
		c := bi.Commit
		if bi.CommitTime != "" {
			c += " (" + bi.CommitTime + ")"
		}
		if bi.Modified {
			c += ", with uncommitted changes"
		}
		fmt.Fprintf(&b, "commit:  %s\n", c)
	}
	// A release's module version is "(devel)": it names the commit instead.
	if bi.Module != "" && !(bi.Release && bi.Module == "(devel)") {
		fmt.Fprintf(&b, "module:  %s\n", bi.Module)
	}
	fmt.Fprintf(&b, "go:      %s %s\n", bi.Go, bi.Platform)
	return b.String()
}
