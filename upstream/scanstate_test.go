package upstream

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// xorSealer is a toy StateSealer: what it seals does not read as the
// plaintext, and another key does not open it.
type xorSealer byte

func (k xorSealer) Seal(plain []byte, label string) string {
	out := []byte(label + ":")
	for _, c := range plain {
		out = append(out, c^byte(k))
	}
	return string(out)
}

func (k xorSealer) Open(sealed, label string) ([]byte, error) {
	body, ok := strings.CutPrefix(sealed, label+":")
	if !ok {
		return nil, errors.New("not sealed for this label")
	}
	out := []byte(body)
	for i := range out {
		out[i] ^= byte(k)
	}
	if !bytes.HasPrefix(out, []byte("{")) {
		return nil, errors.New("another key")
	}
	return out, nil
}

// TestScanState_SealsTheUpstreamsContinuations: a saved scan keeps the
// next link it continues from only sealed; resumed with the same sealer
// (in another process) it continues through that link, and with another
// key it is refused by an error that quotes none of the link.
func TestScanState_SealsTheUpstreamsContinuations(t *testing.T) {
	s := &scripted{fn: func(n int, r *http.Request, _ map[string]any) (int, any) {
		if r.URL.Query().Get("cursor") == "" {
			return 200, map[string]any{"results": []any{map[string]any{"id": "a"}, map[string]any{"id": "a2"}}, "next": "/things?cursor=c2VjcmV0LWN1cnNvcg%3D%3D"}
		}
		return 200, map[string]any{"results": []any{map[string]any{"id": "b"}}, "next": nil}
	}}
	r := runtimeFor(t, listConfig(serve(t, s), `  things:
    upstream: api
    list: {path: /things, items: results}
    pagination: {dialect: next_url}
    id_field: id
    fields: {id: {type: string}}
`)).Resources["things"]
	sink := &collect{}
	scan := r.NewScan(ScanSpec{Sink: sink, RequestID: "test"})
	if err := scan.Run(context.Background(), Budget{MaxPages: 1, PagesLimitSource: "caller", Deadline: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := scan.State(nil); err == nil {
		t.Fatal("a state was saved without a sealer")
	}
	state, err := scan.State(xorSealer(0x5a))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(state, []byte("c2VjcmV0")) || bytes.Contains(state, []byte("/things")) {
		t.Fatalf("the state shows the next link: %s", state)
	}
	if _, err := r.ResumeScan(ScanSpec{Sink: sink, RequestID: "test"}, state, xorSealer(0x33)); err == nil || strings.Contains(err.Error(), "c2VjcmV0") || strings.Contains(err.Error(), "/things") {
		t.Fatalf("resumed under another key: %v", err)
	}
	resumed, err := r.ResumeScan(ScanSpec{Sink: sink, RequestID: "test"}, state, xorSealer(0x5a))
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.Run(context.Background(), Budget{MaxPages: 10, PagesLimitSource: "caller", Deadline: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if !resumed.Outcome().ScanComplete || strings.Join(sink.ids, ",") != "a,a2,b" || !strings.Contains(s.urls[len(s.urls)-1], "cursor=c2VjcmV0LWN1cnNvcg%3D%3D") {
		t.Fatalf("ids %v, requests %v", sink.ids, s.urls)
	}
}

// TestSavedPage_KeepsEveryMemberOfThePageState: a scan resumed by another
// process stands exactly where this one stopped. Every member of
// pageState, set to a value other than its zero, comes back from the
// stored form; a member added later without a stored twin fails here.
func TestSavedPage_KeepsEveryMemberOfThePageState(t *testing.T) {
	var st dialect.State
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Int:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i+1) << 60)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			if f.Type() != reflect.TypeFor[[]uint64]() {
				t.Fatalf("pageState.%s has a slice type (%s) this test cannot fill", v.Type().Field(i).Name, f.Type())
			}
			f.Set(reflect.ValueOf([]uint64{uint64(i+1) << 60, 7}))
		case reflect.Pointer:
			switch f.Type() {
			case reflect.TypeFor[*url.URL]():
				f.Set(reflect.ValueOf(&url.URL{Scheme: "https", Host: "api.example.com", Path: "/items", RawQuery: "page=2"}))
			case reflect.TypeFor[*dialect.State]():
				// The request to recheck: a state of its own.
				f.Set(reflect.ValueOf(&dialect.State{Cursor: "recheck", Offset: 40, Started: true, Snapshot: "rv-9"}))
			default:
				n := i + 100
				f.Set(reflect.ValueOf(&n))
			}
		default:
			t.Fatalf("pageState.%s has a kind (%s) this test cannot fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	saved, err := savePage(st, xorSealer(7))
	if err != nil {
		t.Fatal(err)
	}
	back, err := saved.state(xorSealer(7))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Fatalf("stored and read back:\n%+v\nwant\n%+v", back, st)
	}
}
