package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
)

// pageBody is one list page holding synthetic subscriptions up to about
// size bytes, as the cursor dialect reads it.
func pageBody(size int) ([]byte, int) {
	var b bytes.Buffer
	b.Grow(size + 4096)
	b.WriteString(`{"has_more":false,"data":[`)
	n := 0
	for b.Len() < size {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		rec, _ := json.Marshal(fixtures.SubscriptionAt(n))
		b.Write(rec)
	}
	b.WriteString("]}")
	return b.Bytes(), n
}

// pageFile writes a page of about size bytes (pageBody) to a file and
// returns its path, its size and its number of items. The benchmark serves
// it from there (sendfile: no copy in the process) so that the heap holds
// only what reading it costs: a page held in the heap would count in the
// collector's goal, which lets garbage grow to the live heap's size, and
// so add about its own size to the figures.
func pageFile(tb testing.TB, size int) (path string, n, items int) {
	body, items := pageBody(size)
	path = filepath.Join(tb.TempDir(), "page.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path, len(body), items
}

// procKB reads a field of /proc/self/status, in kB.
func procKB(tb testing.TB, field string) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// heapPeak samples the heap's objects until stop is called and returns
// the largest figure seen.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak
	}
}

type discard struct{ n int }

func (d *discard) Add(*Item) error { d.n++; return nil }

// BenchmarkPageMemory reports what reading one page of 32 MB costs in
// memory, against the page's bytes: rss-ratio, the growth of the
// process's peak resident set (reset before the page) over the page's
// size, and heap-ratio, the peak of the heap's objects above the
// baseline over the page's size (sampled every 0.5 ms). The page is
// generated before the baseline is taken and served from a file, with
// its Content-Length. counts reads it for counts only; items hands every
// record to a sink that keeps nothing, as a listing's sink sees them.
func BenchmarkPageMemory(b *testing.B) {
	const size = 32 << 20
	page, bodyLen, n := pageFile(b, size)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(page)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/json")
		http.ServeContent(w, r, "", time.Time{}, f)
	}))
	b.Cleanup(srv.Close)
	yaml := fmt.Sprintf(`environment: bench
upstreams:
  api:
    base_url: %q
    max_body_bytes: %d
    timeout: 60s
resources:
  big:
    upstream: api
    list: {path: /page, items: data}
    pagination: {dialect: cursor, has_more: has_more, page_size: %d}
    id_field: id
    fields:
      id: {type: string}
      status: {type: string}
      region: {type: string}
      amount_due: {type: integer}
`, srv.URL, 2*size, min(n, 10000))
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		b.Fatal(err)
	}
	rt, err := Initialize(context.Background(), cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	r := rt.Resources["big"]
	for _, mode := range []string{"counts", "items"} {
		b.Run(mode, func(b *testing.B) {
			var rss, heap []float64
			b.StopTimer()
			for range b.N {
				sink := &discard{}
				spec := ScanSpec{RequestID: "bench"}
				if mode == "items" {
					spec.Sink = sink
				}
				runtime.GC()
				debug.FreeOSMemory()
				peakReset := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
				if !peakReset {
					b.Skip("the peak resident set cannot be reset here (/proc/self/clear_refs)")
				}
				s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
				metrics.Read(s)
				before := procKB(b, "VmRSS")
				stop := heapPeak()
				b.StartTimer()
				scan := r.NewScan(spec)
				err := scan.Run(context.Background(), Budget{MaxPages: 1, PagesLimitSource: "airlock", Deadline: time.Minute})
				b.StopTimer()
				peak := stop()
				if err != nil || scan.Outcome().ItemsScanned != n || (mode == "items" && sink.n != n) {
					b.Fatalf("the page was not read whole: %v, %d of %d items, %d to the sink", err, scan.Outcome().ItemsScanned, n, sink.n)
				}
				rss = append(rss, float64(procKB(b, "VmHWM")-before)*1024/float64(bodyLen))
				heap = append(heap, float64(peak-s[0].Value.Uint64())/float64(bodyLen))
				runtime.KeepAlive(scan)
			}
			b.ReportMetric(mean(rss), "rss-ratio")
			b.ReportMetric(mean(heap), "heap-ratio")
			b.ReportMetric(float64(bodyLen)/(1<<20), "page-MB")
		})
	}
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
