package packaging

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config/schema"
)

// allPlatforms are the platforms a release is built for.
var allPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}

const hostPlatform = runtime.GOOS + "/" + runtime.GOARCH

// release is a release directory, as scripts/release wrote it.
type release struct {
	dir       string
	version   string
	platforms []string          // the platforms it must hold
	sums      map[string]string // file name: its SHA-256, from SHA256SUMS
	built     bool              // built by this test process
}

// name is the base name of a platform's files.
func (r *release) name(platform string) string {
	os, arch, _ := strings.Cut(platform, "/")
	return "airlock_" + r.version + "_" + os + "_" + arch
}

// archive is the file name of a platform's archive.
func (r *release) archive(platform string) string {
	if strings.HasPrefix(platform, "windows/") {
		return r.name(platform) + ".zip"
	}
	return r.name(platform) + ".tar.gz"
}

func (r *release) path(file string) string { return filepath.Join(r.dir, file) }

var (
	releaseOnce sync.Once
	shared      *release
	sharedErr   error
	builtDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range []string{builtDir, unpacked.dir} {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}

// requireRelease returns the release under test: AIRLOCK_RELEASE_DIR (which
// must hold all six platforms), or, with AIRLOCK_TEST_HEAVY=1, one that
// scripts/release builds once for this machine's platform.
func requireRelease(t testing.TB) *release {
	t.Helper()
	dir := os.Getenv("AIRLOCK_RELEASE_DIR")
	if dir == "" && os.Getenv("AIRLOCK_TEST_HEAVY") != "1" {
		unavailable(t, "no release to test: set AIRLOCK_RELEASE_DIR to what scripts/release wrote, or AIRLOCK_TEST_HEAVY=1 to build one")
	}
	releaseOnce.Do(func() {
		platforms := allPlatforms
		if dir == "" {
			if sharedErr = releasePrerequisites(); sharedErr != nil {
				return
			}
			builtDir, sharedErr = os.MkdirTemp("", "airlock-release-")
			if sharedErr != nil {
				return
			}
			dir, platforms = builtDir, []string{hostPlatform}
			if sharedErr = runRelease(t.Context(), dir, hostPlatform, ""); sharedErr != nil {
				return
			}
		}
		shared, sharedErr = readRelease(dir, platforms)
		if shared != nil {
			shared.built = builtDir != ""
		}
	})
	for _, tool := range []string{"tar", "gzip", "unzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s, which the tests read archives with, is not on PATH", tool)
		}
	}
	if sharedErr != nil {
		if strings.HasPrefix(sharedErr.Error(), "missing: ") {
			unavailable(t, "%v", sharedErr)
		}
		t.Fatal(sharedErr)
	}
	return shared
}

// releasePrerequisites says what scripts/release needs and is missing.
func releasePrerequisites() error {
	for _, tool := range []string{"git", "jq", "zip", "unzip", "gzip", "sha256sum", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("missing: %s, which scripts/release needs", tool)
		}
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".bin", "mcpb")); err != nil {
		return fmt.Errorf("missing: the MCPB CLI (npm ci in packaging/)")
	}
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		return fmt.Errorf("missing: /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates)")
	}
	return nil
}

// runRelease runs scripts/release -o dir for one platform; version, when
// set, is the VERSION it is given.
func runRelease(ctx context.Context, dir, platform, version string) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join("..", "scripts", "release"), "-o", dir, "--platforms", platform)
	cmd.Env = os.Environ()
	if version != "" {
		cmd.Env = append(cmd.Env, "VERSION="+version)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/release -o %s --platforms %s: %w\n%s", dir, platform, err, out)
	}
	return nil
}

// readRelease reads dir's SHA256SUMS and server.json.
func readRelease(dir string, platforms []string) (*release, error) {
	r := &release{dir: dir, platforms: platforms, sums: map[string]string{}}
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, fmt.Errorf("%s is no release: %w", dir, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("SHA256SUMS: %q is not a sha256sum line", sc.Text())
		}
		r.sums[file] = sum
	}
	var s struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil || s.Version == "" {
		return nil, fmt.Errorf("%s/server.json names no version: %v", dir, err)
	}
	r.version = s.Version
	return r, nil
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Bytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// entry is one file of an archive: its header, its SHA-256 and, when it
// is small (or all were asked for), its content.
type entry struct {
	mode     os.FileMode
	uid, gid int
	modTime  time.Time
	sum      string
	data     []byte
}

// smallFile is the largest file readArchive keeps unless asked to keep all.
const smallFile = 1 << 20

// readArchive reads a .tar, .tar.gz, .zip or .mcpb; keepAll keeps every
// file's content, not only the small ones. Compressed content is inflated
// by gzip and unzip: Go's inflater, under the race detector, takes a minute
// for a release.
func readArchive(t testing.TB, path string, keepAll bool) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	read := func(r io.Reader, size int64) (string, []byte) {
		h := sha256.New()
		var buf bytes.Buffer
		w := io.Writer(h)
		if keepAll || size <= smallFile {
			w = io.MultiWriter(h, &buf)
		}
		if _, err := io.Copy(w, r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return hex.EncodeToString(h.Sum(nil)), buf.Bytes()
	}
	if strings.HasSuffix(path, ".zip") || strings.HasSuffix(path, ".mcpb") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			var sum string
			var data []byte
			if keepAll || f.UncompressedSize64 <= smallFile {
				rc, err := f.Open()
				if err != nil {
					t.Fatal(err)
				}
				sum, data = read(rc, int64(f.UncompressedSize64))
				rc.Close()
			} else {
				sum, _ = read(inflated(t, "unzip", "-p", path, f.Name), 0)
			}
			out[f.Name] = entry{mode: f.Mode(), modTime: f.Modified, sum: sum, data: data}
		}
		return out
	}
	var r io.Reader
	if strings.HasSuffix(path, ".gz") {
		r = inflated(t, "gzip", "-dc", path)
	} else {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		sum, data := read(tr, h.Size)
		out[h.Name] = entry{mode: h.FileInfo().Mode(), uid: h.Uid, gid: h.Gid, modTime: h.ModTime, sum: sum, data: data}
	}
	return out
}

// inflated is what a command (gzip -dc, unzip -p) writes, whole.
func inflated(t testing.TB, name string, args ...string) io.Reader {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return bytes.NewReader(out)
}

// unpacked holds the binaries binaryOf unpacked, by platform, in a
// directory TestMain removes.
var unpacked struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// binaryOf unpacks the airlock binary of a platform's archive, once per
// test process, and returns its path.
func binaryOf(t testing.TB, r *release, platform string) string {
	t.Helper()
	unpacked.Lock()
	defer unpacked.Unlock()
	if p, ok := unpacked.paths[platform]; ok {
		return p
	}
	if unpacked.dir == "" {
		dir, err := os.MkdirTemp("", "airlock-binaries-")
		if err != nil {
			t.Fatal(err)
		}
		unpacked.dir, unpacked.paths = dir, map[string]string{}
	}
	exe := "airlock"
	if strings.HasPrefix(platform, "windows/") {
		exe = "airlock.exe"
	}
	member := r.name(platform) + "/" + exe
	archive := r.path(r.archive(platform))
	var in io.Reader
	if strings.HasSuffix(archive, ".zip") {
		in = inflated(t, "unzip", "-p", archive, member)
	} else {
		in = inflated(t, "tar", "-xzOf", archive, member)
	}
	dest := filepath.Join(unpacked.dir, strings.ReplaceAll(platform, "/", "_"), exe)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.OpenFile(dest, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	unpacked.paths[platform] = dest
	return dest
}

// hostBinary is the binary of this machine's platform.
func hostBinary(t testing.TB, r *release) string {
	t.Helper()
	if !slices.Contains(r.platforms, hostPlatform) {
		unavailable(t, "the release has no binary for this machine (%s)", hostPlatform)
	}
	return binaryOf(t, r, hostPlatform)
}

// versionInfo is what airlock version --json prints.
type versionInfo struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time"`
	Release    bool   `json:"release"`
	Platform   string `json:"platform"`
}

func runVersion(t testing.TB, bin string) versionInfo {
	t.Helper()
	cmd := exec.Command(bin, "version", "--json")
	cmd.Dir = t.TempDir() // no git checkout around it
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("airlock version --json: %v", err)
	}
	var v versionInfo
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("airlock version --json printed %q: %v", out, err)
	}
	return v
}

// commitTime is the time git records for commit, or "" when this checkout
// does not have it.
func commitTime(t testing.TB, commit string) time.Time {
	t.Helper()
	out, err := exec.Command("git", "log", "-1", "--format=%ct", commit).Output()
	if err != nil {
		t.Fatalf("the release's commit %s is not in this checkout: %v", commit, err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(sec, 0).UTC()
}

// TestRelease_EveryPlatformHasItsArchiveSBOMAndBundle_AllInSHA256SUMS: one
// command wrote, for every platform, an archive, an SBOM and a bundle, and
// server.json, airlock.schema.json (and the image, with a linux platform); SHA256SUMS lists
// every file and nothing else, with its true hash.
func TestRelease_EveryPlatformHasItsArchiveSBOMAndBundle_AllInSHA256SUMS(t *testing.T) {
	r := requireRelease(t)
	want := []string{"server.json", "airlock.schema.json"}
	for _, p := range r.platforms {
		want = append(want, r.archive(p), r.name(p)+".sbom.cdx.json", r.name(p)+".mcpb")
		if strings.HasPrefix(p, "linux/") && !slices.Contains(want, "airlock_"+r.version+"_oci.tar") {
			want = append(want, "airlock_"+r.version+"_oci.tar")
		}
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" {
			have = append(have, e.Name())
		}
	}
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("the release holds\n  %v\nwant\n  %v", have, want)
	}
	var listed []string
	for file, sum := range r.sums {
		listed = append(listed, file)
		if got := sha256File(t, r.path(file)); got != sum {
			t.Errorf("SHA256SUMS says %s is %s; it is %s", file, sum, got)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, have) {
		t.Errorf("SHA256SUMS lists\n  %v\nthe release holds\n  %v", listed, have)
	}
}

// TestRelease_ArchivesHoldAStaticBinaryForTheirPlatformAndAreDatedAtTheCommit:
// each archive holds the binary, README.md, LICENSE and docs/, owned by
// 0:0 and dated at the commit's time (what makes two builds identical);
// the binary is built for the archive's platform, without cgo, with
// -trimpath.
func TestRelease_ArchivesHoldAStaticBinaryForTheirPlatformAndAreDatedAtTheCommit(t *testing.T) {
	r := requireRelease(t)
	v := runVersion(t, hostBinary(t, r))
	dated := commitTime(t, v.Commit)
	for _, p := range r.platforms {
		files := readArchive(t, r.path(r.archive(p)), false)
		exe := "airlock"
		if strings.HasPrefix(p, "windows/") {
			exe = "airlock.exe"
		}
		top := r.name(p) + "/"
		want := dated
		if strings.HasSuffix(r.archive(p), ".zip") {
			// A zip entry's MS-DOS time counts seconds by two, and zip
			// rounds an odd second up.
			want = dated.Add(time.Duration(dated.Second()%2) * time.Second)
		}
		for _, file := range []string{exe, "README.md", "LICENSE", "docs/config.md", "docs/deployment.md"} {
			if _, ok := files[top+file]; !ok {
				t.Errorf("%s lacks %s", r.archive(p), top+file)
			}
		}
		for name, e := range files {
			if !strings.HasPrefix(name, top) {
				t.Errorf("%s: %s is outside %s", r.archive(p), name, top)
			}
			if !e.modTime.Equal(want) || e.uid != 0 || e.gid != 0 {
				t.Errorf("%s: %s is dated %v, owned %d:%d; want the commit's time %v, 0:0", r.archive(p), name, e.modTime.UTC(), e.uid, e.gid, want)
			}
		}
		bin := files[top+exe]
		if !strings.HasPrefix(p, "windows/") && bin.mode.Perm() != 0o755 {
			t.Errorf("%s: %s has mode %v, want 0755", r.archive(p), exe, bin.mode)
		}
		path := binaryOf(t, r, p)
		if sha256File(t, path) != bin.sum {
			t.Fatalf("%s: the binary unpacked is not the one listed", r.archive(p))
		}
		if got := executableFormat(path); got != p {
			t.Errorf("%s holds a binary for %q", r.archive(p), got)
		}
		bi, err := buildinfo.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v", r.archive(p), err)
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"]+"/"+settings["GOARCH"] != p {
			t.Errorf("%s: built with %v", r.archive(p), settings)
		}
	}
}

// TestRelease_TheBinaryNamesItsVersionCommitAndDate: without a git checkout
// around it, the release's binary prints the release's version, its commit
// and the commit's time, which are what the release was built from.
func TestRelease_TheBinaryNamesItsVersionCommitAndDate(t *testing.T) {
	r := requireRelease(t)
	v := runVersion(t, hostBinary(t, r))
	if v.Version != r.version || !v.Release || len(v.Commit) != 40 || v.Platform != hostPlatform {
		t.Fatalf("airlock version --json: %+v; want version %s, a release with its commit, platform %s", v, r.version, hostPlatform)
	}
	if want := commitTime(t, v.Commit).Format(time.RFC3339); v.CommitTime != want {
		t.Errorf("the binary says its commit is of %s; git says %s", v.CommitTime, want)
	}
}

// TestRelease_SBOMsListTheModulesEachBinaryLinks: each SBOM (CycloneDX,
// from cyclonedx-gomod) describes its platform's binary and lists exactly
// the modules, at the versions, that the binary's build information names.
func TestRelease_SBOMsListTheModulesEachBinaryLinks(t *testing.T) {
	r := requireRelease(t)
	for _, p := range r.platforms {
		var bom struct {
			BOMFormat   string `json:"bomFormat"`
			SpecVersion string `json:"specVersion"`
			Metadata    struct {
				Component struct {
					Name, Version, PURL string
				} `json:"component"`
			} `json:"metadata"`
			Components []struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"components"`
		}
		b, err := os.ReadFile(r.path(r.name(p) + ".sbom.cdx.json"))
		if err == nil {
			err = json.Unmarshal(b, &bom)
		}
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		goos, goarch, _ := strings.Cut(p, "/")
		c := bom.Metadata.Component
		if bom.BOMFormat != "CycloneDX" || c.Name != "github.com/airlock-mcp/airlock" || c.Version != "v"+r.version ||
			!strings.Contains(c.PURL, "goos="+goos) || !strings.Contains(c.PURL, "goarch="+goarch) {
			t.Errorf("%s: the SBOM is %s %s of %+v", p, bom.BOMFormat, bom.SpecVersion, c)
		}
		bi, err := buildinfo.ReadFile(binaryOf(t, r, p))
		if err != nil {
			t.Fatal(err)
		}
		var linked, listed []string
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			linked = append(linked, d.Path+"@"+d.Version)
		}
		for _, m := range bom.Components {
			listed = append(listed, m.Name+"@"+m.Version)
		}
		slices.Sort(linked)
		slices.Sort(listed)
		if len(linked) == 0 || !slices.Equal(listed, linked) {
			t.Errorf("%s: the SBOM lists %d modules, the binary links %d:\n  listed %v\n  linked %v", p, len(listed), len(linked), listed, linked)
		}
	}
}

// TestRelease_TwoBuildsOfOneCommitAreIdentical builds this machine's
// platform again, from the same commit, and compares every file it writes
// with the release's: the archive, the SBOM and the bundle byte for byte,
// and the image of that platform by its manifest's digest (the layout's
// other platforms differ).
func TestRelease_TwoBuildsOfOneCommitAreIdentical(t *testing.T) {
	r := requireRelease(t)
	v := runVersion(t, hostBinary(t, r))
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(head)) != v.Commit {
		t.Fatalf("the release in %s is of commit %s, this checkout is at %s: rebuild it to compare", r.dir, v.Commit, head)
	}
	again := t.TempDir()
	start := time.Now()
	if err := runRelease(t.Context(), again, hostPlatform, r.version); err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuilt %s in %v", hostPlatform, time.Since(start).Round(time.Second))
	second, err := readRelease(again, []string{hostPlatform})
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{r.archive(hostPlatform), r.name(hostPlatform) + ".sbom.cdx.json", r.name(hostPlatform) + ".mcpb"} {
		if second.sums[file] == "" || second.sums[file] != r.sums[file] {
			t.Errorf("%s: %s then %s", file, r.sums[file], second.sums[file])
		}
	}
	if runtime.GOOS == "linux" {
		oci := "airlock_" + r.version + "_oci.tar"
		first, next := readImage(t, r.path(oci)), readImage(t, second.path(oci))
		if first.manifests[hostPlatform] == "" || first.manifests[hostPlatform] != next.manifests[hostPlatform] {
			t.Errorf("the %s image's manifest: %s then %s", hostPlatform, first.manifests[hostPlatform], next.manifests[hostPlatform])
		}
	}
}

// TestRelease_BundlesCarryTheirPlatformsBinaryAndPassTheOfficialCLI: every
// bundle is accepted by the official MCPB CLI (validate, info), names its
// platform and the release's version, lists airlock's tools, and carries
// the same binary as the archive, executable.
func TestRelease_BundlesCarryTheirPlatformsBinaryAndPassTheOfficialCLI(t *testing.T) {
	r := requireRelease(t)
	mcpb := requireMCPB(t)
	nodeOS := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}
	for _, p := range r.platforms {
		bundle := r.path(r.name(p) + ".mcpb")
		files := readArchive(t, bundle, false)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), files["manifest.json"].data, 0o644); err != nil {
			t.Fatal(err)
		}
		m := readManifest(t, filepath.Join(dir, "manifest.json"))
		goos, _, _ := strings.Cut(p, "/")
		if m.Version != r.version || !slices.Equal(m.Compatibility.Platforms, []string{nodeOS[goos]}) {
			t.Errorf("%s: version %s for %v; want %s for %s", p, m.Version, m.Compatibility.Platforms, r.version, nodeOS[goos])
		}
		var tools []string
		for _, tool := range m.Tools {
			tools = append(tools, tool.Name)
			if tool.Description == "" {
				t.Errorf("%s: the tool %s has no description", p, tool.Name)
			}
		}
		if !slices.Equal(tools, allTools) {
			t.Errorf("%s: the manifest lists the tools %v, want %v", p, tools, allTools)
		}
		bin, ok := files[m.Server.EntryPoint]
		switch {
		case !ok:
			t.Errorf("%s: the entry point %s is not in the bundle", p, m.Server.EntryPoint)
		case m.Server.MCPConfig.Command != "${__dirname}/"+m.Server.EntryPoint:
			t.Errorf("%s: the host starts %s, the entry point is %s", p, m.Server.MCPConfig.Command, m.Server.EntryPoint)
		case goos != "windows" && bin.mode.Perm()&0o111 == 0:
			t.Errorf("%s: %s is not executable (%v)", p, m.Server.EntryPoint, bin.mode)
		case bin.sum != sha256File(t, binaryOf(t, r, p)):
			t.Errorf("%s: the bundle's binary is not the archive's", p)
		}
		for _, args := range [][]string{{"validate", filepath.Join(dir, "manifest.json")}, {"info", bundle}} {
			out, err := exec.Command(mcpb, args...).CombinedOutput()
			if err != nil || (args[0] == "info" && !strings.Contains(string(out), filepath.Base(bundle))) {
				t.Errorf("mcpb %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
}

// TestRelease_TheHostsBundleStartsTheDemoAndYourAPI unpacks this machine's
// bundle with the official CLI and starts it as a host would
// (getMcpConfigForManifest): blank, it serves the demo and lists the tools
// its manifest lists; given a configuration and its secret, that API.
func TestRelease_TheHostsBundleStartsTheDemoAndYourAPI(t *testing.T) {
	r := requireRelease(t)
	mcpb := requireMCPB(t)
	node := requireNode(t)
	if !slices.Contains(r.platforms, hostPlatform) {
		unavailable(t, "the release has no bundle for this machine (%s)", hostPlatform)
	}
	dir := t.TempDir()
	if out, err := exec.Command(mcpb, "unpack", r.path(r.name(hostPlatform)+".mcpb"), dir).CombinedOutput(); err != nil {
		t.Fatalf("mcpb unpack: %v\n%s", err, out)
	}
	m := readManifest(t, filepath.Join(dir, "manifest.json"))
	var manifestTools []string
	for _, tool := range m.Tools {
		manifestTools = append(manifestTools, tool.Name)
	}

	l := hostLaunch(t, node, dir, map[string]any{})
	l.Call = searchSubscriptions
	demo := runClient(t, node, l, nil)
	if demo.environment() != "demo" || !slices.Equal(demo.Tools, manifestTools) || demo.Server.Version != r.version {
		t.Errorf("blank, the bundle serves %q with the tools %v as version %s; want the demo, the manifest's tools %v, %s",
			demo.environment(), demo.Tools, demo.Server.Version, manifestTools, r.version)
	}

	const token = "release-bundle-secret"
	l = hostLaunch(t, node, dir, map[string]any{"config": writeAPIConfig(t, "AIRLOCK_CREDENTIAL_1", token), "credential_1": token})
	l.Call = searchSubscriptions
	if got := runClient(t, node, l, nil).environment(); got != "billing-prod" {
		t.Errorf("configured, the bundle serves %q, want the configuration's billing-prod", got)
	}
}

// TestRelease_ServerJSONDescribesTheReleaseAndTheRegistryAcceptsIt:
// server.json names this release's version, every bundle with its true
// SHA-256 and the image with the version's tag, and the MCP Registry's own
// validator accepts it (and refuses a copy it must refuse, so that its
// acceptance means something).
func TestRelease_ServerJSONDescribesTheReleaseAndTheRegistryAcceptsIt(t *testing.T) {
	r := requireRelease(t)
	raw, err := os.ReadFile(r.path("server.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Name     string `json:"name"`
		Version  string `json:"version"`
		Packages []struct {
			RegistryType string `json:"registryType"`
			Identifier   string `json:"identifier"`
			FileSHA256   string `json:"fileSha256"`
			Transport    struct {
				Type string `json:"type"`
			} `json:"transport"`
		} `json:"packages"`
		Remotes []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"remotes"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	bundles, images := map[string]string{}, 0
	for _, p := range s.Packages {
		switch p.RegistryType {
		case "mcpb":
			bundles[p.Identifier[strings.LastIndex(p.Identifier, "/")+1:]] = p.FileSHA256
		case "oci":
			images++
			if !strings.HasSuffix(p.Identifier, ":"+r.version) {
				t.Errorf("the image is %s, want the tag %s", p.Identifier, r.version)
			}
		}
		if p.Transport.Type != "stdio" {
			t.Errorf("%s %s: transport %s, want stdio", p.RegistryType, p.Identifier, p.Transport.Type)
		}
	}
	for _, p := range r.platforms {
		file := r.name(p) + ".mcpb"
		if bundles[file] != r.sums[file] {
			t.Errorf("server.json gives %s the SHA-256 %q; it is %s", file, bundles[file], r.sums[file])
		}
	}
	if len(bundles) != len(r.platforms) || images != 1 && slices.ContainsFunc(r.platforms, func(p string) bool { return strings.HasPrefix(p, "linux/") }) {
		t.Errorf("server.json describes %d bundles and %d images, want %d and 1", len(bundles), images, len(r.platforms))
	}
	if s.Version != r.version || len(s.Remotes) != 1 || s.Remotes[0].Type != "streamable-http" || !strings.HasSuffix(s.Remotes[0].URL, "/mcp") {
		t.Errorf("server.json: version %s, remotes %+v", s.Version, s.Remotes)
	}

	// A version range is what the registry refuses in any server.json.
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = "^" + r.version
	broken := filepath.Join(t.TempDir(), "broken.json")
	b, _ := json.Marshal(doc)
	if err := os.WriteFile(broken, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join("..", "scripts", "validate-server-json"), r.path("server.json"), broken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), r.path("server.json")+": valid") || !strings.Contains(string(out), broken+": invalid") {
		t.Errorf("the registry's validator: %v\n%s", err, out)
	}
}

// TestRelease_ShipsTheConfigurationSchemaDraftsName: the release carries
// the schema a draft's first line names (schema.URL, the latest
// release's asset), as this source generates it.
func TestRelease_ShipsTheConfigurationSchemaDraftsName(t *testing.T) {
	r := requireRelease(t)
	b, err := os.ReadFile(r.path("airlock.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, schema.JSON()) {
		t.Error("the release's airlock.schema.json is not the schema of this source's configuration")
	}
	if !strings.HasSuffix(schema.URL, "/releases/latest/download/airlock.schema.json") {
		t.Errorf("drafts name %s, which is not the latest release's asset", schema.URL)
	}
}
