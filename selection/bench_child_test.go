package selection_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkPreviewMillion's own figures come from processes of their own:
// the test binary started again with benchChildEnv naming the phase to
// measure ("scan" or "preview") and benchChildURLEnv the fixture API the
// benchmark serves. Such a process holds what an airlock process holds
// (its runtime, a store, the scan or the preview) and never the upstream's
// million records, which stay in the benchmark's process.
const (
	benchChildEnv    = "AIRLOCK_BENCH_CHILD"
	benchChildURLEnv = "AIRLOCK_BENCH_CHILD_URL"
	// benchChildHeapEnv, when it names a file, makes each measured process
	// write heap profiles to it, suffixed with the phase (see
	// sampleMemory).
	benchChildHeapEnv = "AIRLOCK_BENCH_HEAPPROFILE"
	// benchChildMemLimitEnv, when set, is the GOMEMLIMIT the measured
	// processes run with (the Go runtime's soft memory limit, which it reads
	// from the environment by itself), the benchmark's own process keeping
	// none.
	benchChildMemLimitEnv = "AIRLOCK_BENCH_CHILD_GOMEMLIMIT"
	benchChildPrefix      = "airlock-bench-child: "
)

// childFigures is what a measured process reports.
type childFigures struct {
	// Wall and CPU are the phase's time and the process's CPU time during
	// it (user and system, every thread; the fixture is elsewhere).
	Wall, CPU time.Duration
	// PeakKB is the process's peak RSS over its whole life (VmHWM).
	PeakKB int
	// PeakHeap and PeakGo are the largest live heap (heap objects) and the
	// largest memory the Go runtime had mapped, sampled every 2 ms.
	PeakHeap, PeakGo uint64
}

// TestBenchChild is not a test: it is the measured process of
// BenchmarkPreviewMillion's own figures and skips unless that benchmark
// started it.
func TestBenchChild(t *testing.T) {
	phase := os.Getenv(benchChildEnv)
	if phase == "" {
		t.Skip("the measured process of BenchmarkPreviewMillion, started by it")
	}
	x := newBenchRuntime(t, os.Getenv(benchChildURLEnv))
	// Both phases open a store, as a server does at start-up, so that the
	// two processes differ by the preview's work only.
	store := benchStore(t)
	profile := os.Getenv(benchChildHeapEnv)
	if profile != "" {
		profile += "." + phase
	}
	stop := sampleMemory(profile)
	start, cpu := time.Now(), cpuTime(t)
	switch phase {
	case "scan":
		x.bareScan(t, benchMillion)
	case "preview":
		x.preview(t, store, benchMillion)
	default:
		t.Fatalf("%s=%q: want scan or preview", benchChildEnv, phase)
	}
	f := childFigures{Wall: time.Since(start), CPU: cpuTime(t) - cpu}
	f.PeakHeap, f.PeakGo = stop()
	f.PeakKB = procStatusKB(t, "VmHWM")
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", benchChildPrefix, out)
}

// sampleMemory samples the runtime's memory every 2 ms until the returned
// function is called, which returns the largest live heap and the largest
// mapped total seen. With a path, it also collects every 100 ms and writes
// a heap profile there whenever the heap left after a collection is the
// largest yet: what is held at the peak, without the garbage. Profiling
// moves the figures; it is for finding what to cut, not for measuring.
func sampleMemory(profile string) func() (heap, total uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	var (
		mu                  sync.Mutex
		peakHeap, peakTotal uint64
		profiled            uint64
		reads               int
	)
	done, stopped := make(chan struct{}), make(chan struct{})
	read := func() {
		metrics.Read(samples)
		h, tot := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		mu.Lock()
		peakHeap, peakTotal = max(peakHeap, h), max(peakTotal, tot)
		mu.Unlock()
		if reads++; profile != "" && reads%50 == 0 {
			runtime.GC()
			metrics.Read(samples)
			if live := samples[0].Value.Uint64(); live > profiled {
				profiled = live
				if f, err := os.Create(profile); err == nil {
					_ = pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}
	}
	go func() {
		defer close(stopped)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				read()
				return
			case <-tick.C:
				read()
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peakHeap, peakTotal
	}
}

// runChild measures phase in a process of its own (see TestBenchChild)
// against the benchmark's fixture API.
func (x *benchAPI) runChild(b *testing.B, phase string) childFigures {
	b.Helper()
	cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^TestBenchChild$", "-test.count=1", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+phase, benchChildURLEnv+"="+x.url)
	if limit := os.Getenv(benchChildMemLimitEnv); limit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+limit)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("measured %s process: %v\n%s%s", phase, err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), benchChildPrefix); ok {
			var f childFigures
			if err := json.Unmarshal([]byte(rest), &f); err != nil {
				b.Fatalf("measured %s process: %q: %v", phase, rest, err)
			}
			return f
		}
	}
	b.Fatalf("measured %s process reported nothing:\n%s%s", phase, out, stderr.Bytes())
	return childFigures{}
}
