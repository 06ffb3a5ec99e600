package write

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/internal/upstreamtest"
	"github.com/airlock-mcp/airlock/upstream/read"
)

// TestVersionedContractFixtures_DecideAsRecorded runs every versioned
// fixture through the demo configuration's contracts: each recorded answer
// must lead to the decision it was recorded with.
func TestVersionedContractFixtures_DecideAsRecorded(t *testing.T) {
	_, rt := upstreamtest.Demo(t)
	fxs, err := fixtures.ContractFixtures()
	if err != nil {
		t.Fatal(err)
	}
	if len(fxs) < 7 {
		t.Fatalf("only %d fixtures", len(fxs))
	}
	for _, f := range fxs {
		t.Run(f.Name, func(t *testing.T) {
			d, err := DecideFixture(rt, f.Resource, f.Operation, read.RecordedResponse(f.Response.Status, f.Response.Headers, f.BodyBytes()))
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != f.Expect.Decision {
				t.Fatalf("decision %s (%v), recorded %s", d.Decision, d.Details, f.Expect.Decision)
			}
			if f.Expect.Details != nil && !slices.Equal(d.Details, f.Expect.Details) {
				t.Fatalf("details %q, recorded %q", d.Details, f.Expect.Details)
			}
		})
	}
}

// TestContractFixturesAreNeverOverwritten: SHA256SUMS pins every fixture;
// a changed answer must be a new version, and versions run 1..N.
func TestContractFixturesAreNeverOverwritten(t *testing.T) {
	fsys := fixtures.ContractFixtureFS()
	sums, err := fs.ReadFile(fsys, "SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("malformed line %q", sc.Text())
		}
		if _, dup := pinned[name]; dup {
			t.Fatalf("%s is pinned twice", name)
		}
		pinned[name] = sum
	}
	names, _ := fs.Glob(fsys, "*.json")
	versions := map[string][]int{}
	for _, n := range names {
		b, _ := fs.ReadFile(fsys, n)
		h := sha256.Sum256(b)
		want, ok := pinned[n]
		if !ok {
			t.Errorf("%s is not pinned: add it to SHA256SUMS (sha256sum %s >> SHA256SUMS)", n, n)
			continue
		}
		if hex.EncodeToString(h[:]) != want {
			t.Errorf("%s changed: recorded fixtures are never overwritten; add a new version instead", n)
		}
		res, op, v, ok := read.ParseFixtureName(n)
		if !ok {
			t.Errorf("%s is not named <resource>-<operation>-v<N>.json", n)
			continue
		}
		versions[res+"-"+op] = append(versions[res+"-"+op], v)
	}
	for name := range pinned {
		if !slices.Contains(names, name) {
			t.Errorf("%s is pinned but gone: old versions are kept", name)
		}
	}
	for key, vs := range versions {
		slices.Sort(vs)
		for i, v := range vs {
			if v != i+1 {
				t.Errorf("%s: versions %v do not run 1..N", key, vs)
				break
			}
		}
	}
}
