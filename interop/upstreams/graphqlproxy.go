package upstreams

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
)

// GraphQLFaults are the knobs of the proxy in front of PostGraphile. It
// fakes the network peer: PostGraphile itself is never changed.
//
// Pages are counted per scan: a request without a cursor is page 1, and a
// request whose cursor is the endCursor that page n answered is page n+1.
// A cursor the proxy never saw answered is page 0, which no knob chooses.
type GraphQLFaults struct {
	// ExpireCursors answers every request whose variables carry a
	// non-empty cursor with 200 {"errors":[{"message":"cursor expired"}],
	// "data":null}, without asking PostGraphile.
	ExpireCursors bool
	// ExpirePages answers "cursor expired" on these pages only (2 and
	// later: page 1 carries no cursor), as when a cursor expires in the
	// middle of a scan.
	ExpirePages []int
	// CursorVariable names the cursor variable; "" means "after".
	CursorVariable string
	// ErrorPages adds {"message": PartialErrorMessage, "path": [<the
	// connection's field>]} to the errors of these pages' answers, beside
	// their good data: a partial answer.
	ErrorPages []int
	// DropPageInfoPages removes pageInfo from the connection in these
	// pages' answers.
	DropPageInfoPages []int
}

// PartialErrorMessage is the message of the error that ErrorPages adds.
const PartialErrorMessage = "some accounts could not be read"

// GraphQLProxyStats counts the proxy's requests and the faults it injected.
type GraphQLProxyStats struct {
	Requests        int // every request received
	Expired         int // answered "cursor expired"
	Errored         int // answers given an added error
	DroppedPageInfo int // answers whose pageInfo was removed
}

type graphQLProxy struct {
	target string

	mu     sync.Mutex
	faults GraphQLFaults
	count  GraphQLProxyStats
	pages  map[string]int // endCursor answered → the page it leads to
}

// maxGraphQLRequest bounds a request body the proxy reads.
const maxGraphQLRequest = 8 << 20

func (p *graphQLProxy) set(f GraphQLFaults) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.CursorVariable == "" {
		f.CursorVariable = "after"
	}
	f.ExpirePages = slices.Clone(f.ExpirePages)
	f.ErrorPages = slices.Clone(f.ErrorPages)
	f.DropPageInfoPages = slices.Clone(f.DropPageInfoPages)
	p.faults, p.count = f, GraphQLProxyStats{}
}

func (p *graphQLProxy) stats() GraphQLProxyStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

func (p *graphQLProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxGraphQLRequest+1))
	if err != nil || len(body) > maxGraphQLRequest {
		http.Error(w, "request body unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	var req struct {
		Variables map[string]any `json:"variables"`
	}
	_ = json.Unmarshal(body, &req) // not a single JSON request: forward untouched

	p.mu.Lock()
	p.count.Requests++
	f := p.faults
	if f.CursorVariable == "" {
		f.CursorVariable = "after"
	}
	cursor, _ := req.Variables[f.CursorVariable].(string)
	page := 1
	if cursor != "" {
		page = p.pages[cursor] // 0 when never answered
	}
	expire := cursor != "" && (f.ExpireCursors || slices.Contains(f.ExpirePages, page))
	if expire {
		p.count.Expired++
	}
	p.mu.Unlock()

	if expire {
		writeJSON(w, http.StatusOK, []byte(`{"errors":[{"message":"cursor expired"}],"data":null}`))
		return
	}
	status, header, answer, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "the proxy could not reach PostGraphile: "+err.Error(), http.StatusBadGateway)
		return
	}
	if status == http.StatusOK {
		answer = p.alter(answer, page, f)
	}
	for _, k := range []string{"Content-Type", "Cache-Control", "Vary"} {
		if v := header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	writeJSON(w, status, answer)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// forward sends the request to PostGraphile with the same method, path,
// query, body and headers, under the caller's context.
func (p *graphQLProxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for _, k := range []string{"Content-Type", "Accept", "Authorization"} {
		if v := r.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, b, nil
}

// alter records the page each endCursor of the answer leads to and applies
// the faults chosen for this page. An answer it cannot read as a GraphQL
// result, or one it need not change, goes back byte for byte.
func (p *graphQLProxy) alter(answer []byte, page int, f GraphQLFaults) []byte {
	v, err := decodeJSON(answer)
	if err != nil {
		return answer
	}
	res, _ := v.(map[string]any)
	data, _ := res["data"].(map[string]any)
	var connections []string
	for field, c := range data {
		conn, _ := c.(map[string]any)
		if _, ok := conn["pageInfo"]; !ok {
			continue
		}
		connections = append(connections, field)
		info, _ := conn["pageInfo"].(map[string]any)
		if end, _ := info["endCursor"].(string); end != "" && page > 0 {
			p.mu.Lock()
			p.pages[end] = page + 1
			p.mu.Unlock()
		}
	}
	if len(connections) == 0 {
		return answer
	}
	slices.Sort(connections)
	changed := false
	if slices.Contains(f.DropPageInfoPages, page) {
		for _, field := range connections {
			delete(data[field].(map[string]any), "pageInfo")
		}
		changed = true
		p.mu.Lock()
		p.count.DroppedPageInfo++
		p.mu.Unlock()
	}
	if slices.Contains(f.ErrorPages, page) {
		errs, _ := res["errors"].([]any)
		res["errors"] = append(errs, map[string]any{"message": PartialErrorMessage, "path": []any{connections[0]}})
		changed = true
		p.mu.Lock()
		p.count.Errored++
		p.mu.Unlock()
	}
	if !changed {
		return answer
	}
	out, err := json.Marshal(res)
	if err != nil {
		return answer
	}
	return out
}

// decodeJSON decodes b keeping numbers as json.Number, so that a body
// re-encoded after a change keeps every number exactly.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
