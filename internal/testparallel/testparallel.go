// Package testparallel sets how many parallel tests a suite runs at once
// when -parallel does not say. The testing package's default is the number
// of CPUs, which leaves them idle while tests wait (for an upstream's
// latency, a lease's expiry, a child process), as most of airlock's tests
// do. It is for tests only, and never overrides what the command line
// asked for.
package testparallel

import (
	"flag"
	"os"
	"runtime"
	"strconv"
)

// Set lets up to n parallel tests run at once, unless -parallel was given,
// the race detector is on, or the heavy suite runs (AIRLOCK_TEST_HEAVY=1):
// there the tests compute far more, and their own timeouts must hold.
// TestMain calls it before m.Run.
func Set(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || raceEnabled || os.Getenv("AIRLOCK_TEST_HEAVY") == "1" || n <= runtime.GOMAXPROCS(0) {
		return
	}
	_ = flag.Set("test.parallel", strconv.Itoa(n))
}
