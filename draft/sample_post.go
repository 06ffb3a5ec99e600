package draft

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/jsonvalue"
)

// A sample may be a POST (CouchDB's _find, a search endpoint): its body
// is the list's body, less the members that page it, and the answer and
// that body together say how it pages.

// sampleRequestBody is the sample request's method and body: a GET
// without one, or a POST of the JSON object given.
func sampleRequestBody(b []byte) (method string, body io.Reader, obj map[string]any, err error) {
	if b == nil {
		return http.MethodGet, nil, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return "", nil, nil, errors.New("the sample body must be one JSON object")
	}
	return http.MethodPost, bytes.NewReader(b), obj, nil
}

// bodyPagingKeys are a posted body's members that page it: they are the
// dialect's to send, never the list's body.
var bodyPagingKeys = append(append(append(slices.Clone(pageSizeParams), offsetParams...), cursorParams...), "bookmark", "page", "start_cursor", "search_after", "Limit", "ExclusiveStartKey")

// continuationObjects are the answer members that hand back a
// continuation object, with the body member that takes it back (DynamoDB's
// LastEvaluatedKey, sent as ExclusiveStartKey).
var continuationObjects = map[string]string{"LastEvaluatedKey": "ExclusiveStartKey"}

// dynamoScan says whether a posted answer is DynamoDB's Scan or Query
// shape (Items beside Count and ScannedCount), whose continuation,
// LastEvaluatedKey, a page that ends the table leaves out.
func dynamoScan(answer map[string]any) bool {
	_, items := answer["Items"].([]any)
	_, count := answer["Count"]
	_, scanned := answer["ScannedCount"]
	return items && count && scanned
}

// samplePostPagination drafts a POST list from its sample: the body less
// its paging members, and the dialect the answer and the body show. A
// Mango answer's bookmark is the bookmark dialect; a body paged by an
// offset (PouchDB's _find: skip and limit) is the offset dialect, its
// total the answer's or none; anything else is a TODO.
func samplePostPagination(r *resourceDraft, first sampled) {
	r.method = http.MethodPost
	keepParams(r, first.url.Query(), map[string]bool{})
	keep := map[string]any{}
	for k, v := range first.body {
		if !slices.Contains(bodyPagingKeys, k) {
			keep[k] = v
		}
	}
	if b, err := jsonvalue.Encode(keep); err == nil {
		r.body = string(b)
	}
	set := func(k, v string) { r.pagination = append(r.pagination, [2]string{k, v}) }
	keys := slices.Sorted(maps.Keys(first.body))
	sizeKey := firstKey(first.body, pageSizeParams)
	size := func(def string) {
		if sizeKey == "" {
			sizeKey = def
		}
		set("page_size_param", sizeParamValue(sizeKey))
		set("page_size", "100")
	}
	answer, _ := first.doc.(map[string]any)
	if paging := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { _, kept := keep[k]; return kept }); len(paging) > 0 {
		r.pageNote = append(r.pageNote, "the sample's body paged by "+joinNames(paging)+": the dialect sends them, the list's body keeps the rest")
	}
	bm, isStr := answer["bookmark"].(string)
	cont := ""
	for name := range continuationObjects {
		if _, isObj := answer[name].(map[string]any); isObj {
			cont = name
		}
	}
	if cont == "" && dynamoScan(answer) {
		cont = "LastEvaluatedKey"
		r.pageNote = append(r.pageNote, "the sampled page held the whole table (no LastEvaluatedKey): DynamoDB's continuation is drafted as it would come")
	}
	switch off := firstKey(first.body, offsetParams); {
	case answer != nil && cont != "":
		set("dialect", "continue_object")
		set("continue_path", quote(cont))
		set("continue_param", quote(continuationObjects[cont]))
		if _, ok := first.body["Limit"]; ok || dynamoScan(answer) {
			sizeKey = "Limit"
		}
		size("Limit")
		r.pageNote = append(r.pageNote, "the answer hands back "+cont+", an object sent back whole as "+continuationObjects[cont]+"; its absence ends the list, a page may be empty and go on")
		if _, counted := answer["ScannedCount"].(json.Number); counted {
			// Limit counts the items read, not those returned.
			set("evaluated", "ScannedCount")
			r.pageNote = append(r.pageNote, "Limit counts the items read (ScannedCount), not those returned: a page without "+cont+" ends the list only when it read fewer")
		}
	case answer != nil && isStr && bm != "":
		set("dialect", "bookmark")
		size("limit")
		r.pageNote = append(r.pageNote, "the answer hands out a bookmark (CouchDB's Mango): it goes back in the body, and only an empty page ends the list")
	case off != "":
		set("dialect", "offset")
		set("offset_param", quote(off))
		size("limit")
		if t := firstKey(answer, sampleTotalPaths); t != "" {
			set("total", quote(t))
		} else {
			set("total", config.NoTotal)
			r.pageNote = append(r.pageNote, "the body pages by "+off+" and the answer holds no total: an empty page ends the list")
		}
	default:
		set("dialect", quote(todo("one of bookmark, offset, cursor, search_after; the posted sample shows no bookmark and its body no offset")))
	}
}

// joinNames lists names for a note, "a, b and c".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := ""
	for i, n := range names[:len(names)-1] {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out + " and " + names[len(names)-1]
}
