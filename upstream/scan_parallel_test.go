package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestParallelScan_LetsGoOfEachPageOnceProcessed reads 200 pages of about
// 100 KB with four in flight and measures the live heap after page 20 and
// after page 180: a page read in parallel is let go once processed, so the
// 160 pages between cost nothing that lasts. Holding them until the plan's
// end would make a scope's whole body resident, whatever its size.
func TestParallelScan_LetsGoOfEachPageOnceProcessed(t *testing.T) {
	const pages, perPage = 200, 100
	// The offset dialect re-reads one item per page; the last page is short.
	const n = perPage + (pages-1)*(perPage-1) - 1
	pad := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var b strings.Builder
		fmt.Fprintf(&b, `{"total":%d,"items":[`, n)
		for i := off; i < min(off+limit, n); i++ {
			if i > off {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"r%06d","pad":%q}`, i, pad)
		}
		b.WriteString("]}")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(b.String()))
	}))
	t.Cleanup(srv.Close)
	rt := runtimeFor(t, []byte(fmt.Sprintf(`environment: test
upstreams:
  api: {base_url: %q}
resources:
  big:
    upstream: api
    list: {path: /items, items: items}
    pagination: {dialect: offset, page_size: %d, total: total, concurrency: 4}
    id_field: id
    fields:
      id: {type: string}
`, srv.URL, perPage)))
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var at20, at180 uint64
	scan := rt.Resources["big"].NewScan(ScanSpec{RequestID: "test", Progress: func(p ScanProgress) {
		switch p.Pages {
		case 20:
			at20 = live()
		case 180:
			at180 = live()
		}
	}})
	err := scan.Run(context.Background(), Budget{MaxPages: 1000, PagesLimitSource: "airlock", Deadline: time.Minute})
	if err != nil || scan.Outcome().Pages != pages || scan.Outcome().ItemsScanned != n {
		t.Fatalf("the scan read %d pages and %d items (%v), want %d and %d", scan.Outcome().Pages, scan.Outcome().ItemsScanned, err, pages, n)
	}
	read := uint64(160 * perPage * (len(pad) + 20))
	if at180 > at20 && at180-at20 > read/4 {
		t.Errorf("the live heap grew by %d KB over 160 pages of %d KB: processed pages are still held", (at180-at20)>>10, read>>10)
	}
}
