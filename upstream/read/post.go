package read

import (
	"net/http"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// postRequest builds a read by POST (etcd's range by key: POST
// /v3/kv/range {"key": …}): get.body rendered with the id, in the
// encoding the API holds it in (base64 for a decoded id field).
func postRequest(r *upstream.Resource, id, requestID string) (transport.Request, error) {
	g := r.Config.Get
	if id == "" {
		return transport.Request{}, ErrUnsafeID
	}
	vars := template.Vars{ID: id, IDValue: r.TypedID(id)}
	if r.Decoded(r.Config.IDField) {
		enc := r.Encode(r.Config.IDField, vars.IDValue)
		vars.IDValue = enc
		if s, ok := enc.(string); ok {
			vars.ID = s
		}
	}
	body, err := vars.Render(config.NormalizeValue(g.Body))
	if err != nil {
		return transport.Request{}, err
	}
	b, err := jsonvalue.Encode(body)
	if err != nil {
		return transport.Request{}, err
	}
	return transport.Request{Method: http.MethodPost, URL: r.Upstream.ResolveURL(nil, g.Path, nil), Body: b, RequestID: requestID, Idempotent: true}, nil
}

// postItem reads the item out of a POST read's answer: an object, or a
// list of at most one (etcd's kvs). found is false for an empty list, and
// for an absent one where get.absent says that means none (proto3 JSON
// omits an empty kvs).
func postItem(r *upstream.Resource, body any) (item map[string]any, found bool, err error) {
	g := r.Config.Get
	v, ok := jsonvalue.Get(body, g.Item)
	if !ok || v == nil {
		if g.Absent == "not_found" {
			return nil, false, nil
		}
		return nil, false, transport.BadResponse("the read's answer holds nothing at get.item %q: declare get.absent: not_found if that means there is none", config.DisplayPath(g.Item))
	}
	if list, isList := v.([]any); isList {
		switch len(list) {
		case 0:
			return nil, false, nil
		case 1:
			v = list[0]
		default:
			return nil, false, transport.BadResponse("the read by id answered %d items", len(list))
		}
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return nil, false, transport.BadResponse("the item is not a JSON object")
	}
	return m, true, nil
}
