package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNewcomer_FromTheArchiveToAFirstToolAnswer follows the README's first
// steps (the block after "<!-- newcomer: download -->") with this
// machine's archive, in an empty directory whose PATH holds only what those
// steps call (no Go): the download is the archive and SHA256SUMS copied in,
// the checksum line must pass (and fail on a corrupted copy), the archive
// is unpacked, airlock serve --demo answers a real MCP client's first tool
// call, and ./airlock demo runs the tour. It reports how long a newcomer
// waits from the archive to that first answer; nothing asserts a time.
func TestNewcomer_FromTheArchiveToAFirstToolAnswer(t *testing.T) {
	r := requireRelease(t)
	node := requireNode(t)
	if runtime.GOOS == "windows" || !slices.Contains(r.platforms, hostPlatform) {
		unavailable(t, "the README's download steps are for a .tar.gz of this machine's platform (%s)", hostPlatform)
	}
	steps := newcomerSteps(t)

	// Only what the steps call is on PATH.
	bin := t.TempDir()
	for _, tool := range []string{"sha256sum", "tar", "gzip"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			unavailable(t, "%s is not on PATH", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	env := []string{"PATH=" + bin, "HOME=" + home, "LC_ALL=C"}
	goos, goarch, _ := strings.Cut(hostPlatform, "/")
	vars := "V=" + r.version + " P=" + goos + "_" + goarch

	// A corrupted download fails the check.
	bad := t.TempDir()
	download(t, r, bad)
	archive := filepath.Join(bad, r.archive(hostPlatform))
	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(archive, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := shell(bad, env, vars+"\n"+steps.check); err == nil {
		t.Fatalf("the README's check passes a corrupted archive:\n%s", out)
	}

	dir := t.TempDir()
	start := time.Now()
	download(t, r, dir)
	script := vars + "\nif command -v go >/dev/null; then echo 'go is on PATH' >&2; exit 99; fi\n" +
		steps.check + "\n" + steps.unpack + "\npwd"
	out, err := shell(dir, env, script)
	if err != nil {
		t.Fatalf("the README's steps failed: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte(r.archive(hostPlatform)+": OK")) {
		t.Errorf("the checksum line did not check the archive:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	unpacked := lines[len(lines)-1]
	unpackedIn := time.Since(start)

	l := launch{Command: filepath.Join(unpacked, "airlock"), Args: []string{"serve", "--demo"}, Call: searchSubscriptions}
	res := runClient(t, node, l, env)
	firstAnswer := time.Since(start)
	if res.environment() != "demo" || !slices.Equal(res.Tools, allTools) {
		t.Errorf("serve --demo from the archive answered for %q with the tools %v", res.environment(), res.Tools)
	}
	t.Logf("from the archive to the first tool answer: %v (checksum and unpack %v; serve --demo started and answered a first search_all in %d ms; the rest is the client's own start)",
		firstAnswer.Round(time.Millisecond), unpackedIn.Round(time.Millisecond), res.FirstAnswerMS)

	start = time.Now()
	cmd := exec.Command("/bin/sh", "-c", steps.demo)
	cmd.Dir, cmd.Env = unpacked, env
	tour, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", steps.demo, err, tour)
	}
	for _, want := range []string{"VISIBILITY_RESTRICTED", "complete true", "complete false"} {
		if !bytes.Contains(tour, []byte(want)) {
			t.Errorf("the tour lacks %q:\n%s", want, tour)
		}
	}
	t.Logf("%s took %v", steps.demo, time.Since(start).Round(time.Millisecond))
}

// newcomer is the README's download path, by step.
type newcomer struct {
	check, unpack, demo string
}

// newcomerSteps reads the README's download block: a V=… P=… line, the
// downloads (curl), the checksum (sha256sum), the unpacking (tar, cd) and
// the tour. A line of another kind fails the test, which could not follow
// it.
func newcomerSteps(t testing.TB) newcomer {
	t.Helper()
	block, ok := readmeBlocks(t, "newcomer")["download"]
	if !ok {
		t.Fatal(`the README has no block after "<!-- newcomer: download -->"`)
	}
	var s newcomer
	for line := range strings.SplitSeq(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmd = strings.TrimSpace(cmd)
		switch w := strings.Fields(cmd); {
		case len(w) == 0:
		case strings.HasPrefix(w[0], "V="):
		case w[0] == "curl":
			if !strings.Contains(cmd, "${V}_${P}") && !strings.HasSuffix(cmd, "/SHA256SUMS") {
				t.Errorf("README: %q downloads neither the archive nor SHA256SUMS", line)
			}
		case w[0] == "sha256sum":
			s.check = cmd
		case w[0] == "tar" || w[0] == "cd":
			s.unpack += cmd + "\n"
		case cmd == "./airlock demo":
			s.demo = cmd
		default:
			t.Errorf("README: the download steps hold %q, which this test does not know how to follow", line)
		}
	}
	if s.check == "" || s.unpack == "" || s.demo == "" {
		t.Fatalf("README: the download steps lack a checksum, an unpacking or ./airlock demo: %+v", s)
	}
	return s
}

// download puts what the README's curl lines fetch into dir.
func download(t testing.TB, r *release, dir string) {
	t.Helper()
	for _, f := range []string{r.archive(hostPlatform), "SHA256SUMS"} {
		b, err := os.ReadFile(r.path(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// shell runs script with /bin/sh -e in dir, under env only.
func shell(dir string, env []string, script string) ([]byte, error) {
	cmd := exec.Command("/bin/sh", "-e", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	return cmd.CombinedOutput()
}
