package write

import (
	"bytes"
	"fmt"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/template"
	"github.com/airlock-mcp/airlock/jsonvalue"
	"github.com/airlock-mcp/airlock/upstream"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// MemberOutcome is what a 2xx answer's declared outcome member
// (request.outcome) says of a per-target write.
type MemberOutcome int

// Member outcomes.
const (
	// MemberNone: the action declares no outcome member; the answer is
	// judged as any other.
	MemberNone MemberOutcome = iota
	// MemberApplied: the member holds a value declared applied.
	MemberApplied
	// MemberConflict: the member holds a value declared conflict (etcd's
	// txn succeeded: false): the API refused the write because its
	// condition failed, and applied nothing.
	MemberConflict
	// MemberUnknown: the member is missing (with no declared meaning for
	// its absence) or holds another value: whether the write applied is
	// not said, and a re-read decides.
	MemberUnknown
)

// MemberVerdict reads a 2xx answer's outcome member.
func MemberVerdict(a *upstream.Action, resp *transport.Response) MemberOutcome {
	rq := a.Config.Request
	if rq == nil || rq.Outcome == nil || resp == nil {
		return MemberNone
	}
	o := rq.Outcome
	if len(bytes.TrimSpace(resp.Body)) == 0 {
		return MemberUnknown
	}
	// An error object behind the 2xx is no answer about the write.
	doc, err := transport.DecodeJSONBody(resp, true)
	if err != nil {
		return MemberUnknown
	}
	v, ok := jsonvalue.Get(doc, o.Path)
	if !ok {
		// An absence means the declared value (proto3 omits a false)
		// only in an answer that is one: an object with other members
		// (etcd's header). An empty object, null, a list or a word says
		// nothing of the write.
		if m, isObject := doc.(map[string]any); o.Absent == nil || !isObject || len(m) == 0 {
			return MemberUnknown
		}
		v = config.NormalizeValue(o.Absent)
	}
	if among(v, o.Applied) {
		return MemberApplied
	}
	if among(v, o.Conflict) {
		return MemberConflict
	}
	return MemberUnknown
}

// among compares a value with declared ones as JSON scalars (true and
// "true" differ).
func among(v any, list []any) bool {
	for _, w := range list {
		if jsonvalue.Equal(v, config.NormalizeValue(w)) {
			return true
		}
	}
	return false
}

// encodeDecoded writes the values of fields the API encodes (decode:
// base64) back in its encoding, for a request's templates: the id, and
// before, after and restore values. Parameters stay as given: an effect
// that sets a decoded field from one renders it through after.
func encodeDecoded(r *upstream.Resource, vars template.Vars) template.Vars {
	if r.Decoded(r.Config.IDField) {
		enc := r.Encode(r.Config.IDField, vars.ID)
		if r.Config.ItemEncoding != "" {
			// A typed encoding wraps the id in its type ({"S": "…"}): a
			// template that is exactly {{id}} takes the wrapped value, a
			// path or a text the plain one.
			enc = r.Encode(r.Config.IDField, r.TypedID(vars.ID))
		} else {
			vars.ID = fmt.Sprint(enc)
		}
		vars.IDValue = enc
	}
	if r.Config.ItemEncoding != "" && r.Config.VersionField != "" && vars.Version != "" {
		v := vars.VersionValue
		if v == nil {
			v = vars.Version
		}
		vars.VersionValue = r.Encode(r.Config.VersionField, v)
	}
	encode := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = r.Encode(k, v)
		}
		return out
	}
	vars.Before, vars.After, vars.Restore = encode(vars.Before), encode(vars.After), encode(vars.Restore)
	return vars
}
