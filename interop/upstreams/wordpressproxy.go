package upstreams

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// WordPressFaults are the knobs of the proxy in front of php -S. It
// changes nothing WordPress says; it only acts between the pages of a
// posts list (GET /wp-json/wp/v2/posts, whose page is its page parameter,
// 1 when absent).
type WordPressFaults struct {
	// DeletePosts are deleted (with SQL, as Delete does) once WordPress
	// has answered page DeleteAfterPage of a posts list, before that
	// answer is passed on: the client reads that page as it was, and
	// every later page without them. It happens once per SetFaults.
	DeleteAfterPage int
	DeletePosts     []int
}

// WordPressProxyStats counts the proxy's requests.
type WordPressProxyStats struct {
	Requests int // every request
	// ListPages holds the page of every posts-list request, in the order
	// the answers came back.
	ListPages []int
	// TotalPages is the last X-WP-TotalPages a posts list answered.
	TotalPages int
	// PastTheEnd counts posts-list requests WordPress answered 400
	// rest_post_invalid_page_number.
	PastTheEnd int
	// Deleted counts the posts the knob deleted; Errors what went wrong
	// doing so.
	Deleted int
	Errors  []string
}

type wpProxy struct {
	rp     *httputil.ReverseProxy
	delete func(context.Context, []int) error

	mu     sync.Mutex
	faults WordPressFaults
	done   bool // the deletion ran
	count  WordPressProxyStats
}

func newWPProxy(target *url.URL, del func(context.Context, []int) error) *wpProxy {
	p := &wpProxy{delete: del}
	// The Host header is passed on unchanged, so that WordPress writes
	// its links for the proxy.
	p.rp = httputil.NewSingleHostReverseProxy(target)
	p.rp.ModifyResponse = p.modify
	return p
}

func (p *wpProxy) set(f WordPressFaults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f.DeletePosts = slices.Clone(f.DeletePosts)
	p.faults, p.done, p.count = f, false, WordPressProxyStats{}
}

func (p *wpProxy) stats() WordPressProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.count
	s.ListPages = slices.Clone(s.ListPages)
	s.Errors = slices.Clone(s.Errors)
	return s
}

func (p *wpProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.count.Requests++
	p.mu.Unlock()
	p.rp.ServeHTTP(w, r)
}

// postsListPage is the page a request asks of the posts collection, or 0
// when it asks for something else.
func postsListPage(r *http.Request) int {
	route := strings.TrimSuffix(r.URL.Path, "/")
	if route == "" || route == "/index.php" {
		route = strings.TrimSuffix(r.URL.Query().Get("rest_route"), "/")
	} else {
		route = strings.TrimPrefix(route, "/wp-json")
	}
	if r.Method != http.MethodGet || route != "/wp/v2/posts" {
		return 0
	}
	page, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || page < 1 {
		return 1
	}
	return page
}

// modify runs once WordPress has answered: it counts posts-list answers
// and runs the deletion knob, with the whole answer read first so that
// the page stays as WordPress computed it.
func (p *wpProxy) modify(resp *http.Response) error {
	page := postsListPage(resp.Request)
	if page == 0 {
		return nil
	}
	body, err := readLimited(resp)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.count.ListPages = append(p.count.ListPages, page)
	if n, err := strconv.Atoi(resp.Header.Get("X-WP-TotalPages")); err == nil {
		p.count.TotalPages = n
	}
	if resp.StatusCode == http.StatusBadRequest && bytes.Contains(body, []byte(`"rest_post_invalid_page_number"`)) {
		p.count.PastTheEnd++
	}
	f := p.faults
	run := !p.done && f.DeleteAfterPage == page && len(f.DeletePosts) > 0 && resp.StatusCode == http.StatusOK
	if run {
		p.done = true
	}
	p.mu.Unlock()
	if run {
		err := p.delete(resp.Request.Context(), f.DeletePosts)
		p.mu.Lock()
		if err != nil {
			p.count.Errors = append(p.count.Errors, err.Error())
		} else {
			p.count.Deleted += len(f.DeletePosts)
		}
		p.mu.Unlock()
	}
	return nil
}

// readLimited reads the answer's whole body (bounded) and puts it back.
func readLimited(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read WordPress's answer: %w", err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("WordPress's answer is larger than %d bytes", maxBody)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}
