package testparallel

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// TestSet_RaisesTheDefaultButNeverWhatWasAlreadySaid: without -parallel,
// Set raises the limit (unless the race detector or the heavy suite is
// on); once it was given, by the command line or an earlier Set, it
// stays.
func TestSet_RaisesTheDefaultButNeverWhatWasAlreadySaid(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(before) })
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })

	n := runtime.GOMAXPROCS(0) + 3
	Set(n)
	want := strconv.Itoa(n)
	if given || raceEnabled || os.Getenv("AIRLOCK_TEST_HEAVY") == "1" {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Fatalf("-parallel is %s after Set(%d), want %s", got, n, want)
	}
	Set(n + 5)
	if got := f.Value.String(); got != want {
		t.Fatalf("-parallel is %s after a second Set, want %s as before", got, want)
	}
}
