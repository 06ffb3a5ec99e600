package config

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-mcp/airlock/config/strictyaml"
)

// Forms first proven on etcd's v3 JSON gateway (POST /v3/kv/range and
// /v3/kv/txn) and SAP CAP's OData V4: continuations derived from the last
// item, members proto3 JSON omits when they hold their zero value, a
// snapshot read from the first page, field values the API encodes,
// re-reads by POST and writes whose target is named in the body.

// SnapshotConfig is a value read from a list's first page and sent with
// every later page, so that the whole list is read at one point in time
// (etcd: header.revision sent as revision). Without Param, the value only
// labels the snapshot the upstream's continuation carries (Kubernetes'
// resourceVersion): a later page that names another is
// INCONSISTENT_SNAPSHOT. With Param, the consistency is snapshot. A
// refusal of it is the resource's expiry (etcd answers a compacted
// revision 400 "required revision has been compacted"), CURSOR_EXPIRED
// with a restart.
type SnapshotConfig struct {
	From  string `yaml:"from"`
	Param string `yaml:"param"`
}

// OutcomeConfig decides a per-target write's outcome from its answer's
// body: a 2xx whose member at Path is among Applied succeeded (and is then
// checked as any success is); among Conflict, the API refused the write
// because its condition failed (etcd's txn answers 200 with succeeded
// false), and nothing was applied. Any other value, or an absent member
// without Absent, is not a success: the outcome is unknown until re-read.
// Absent is the value an absent member stands for (proto3 JSON omits
// false).
type OutcomeConfig struct {
	Path     string `yaml:"path"`
	Applied  []any  `yaml:"applied"`
	Conflict []any  `yaml:"conflict"`
	Absent   any    `yaml:"absent"`
}

// Cursor exclusivity (pagination.cursor_exclusive).
const (
	// CursorNulSuffix sends the smallest key after the last one: its
	// bytes and a NUL byte (etcd's range key is inclusive).
	CursorNulSuffix = "nul_suffix"
)

// Field decodings (fields.NAME.decode).
const DecodeBase64 = "base64"

// Item encodings (item_encoding).
const EncodingDynamoDB = "dynamodb"

// validateReach checks the forms above on a resource.
func validateReach(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	for i, p := range pg.AbsentMeansZero {
		rp := ResolvePagination(pg)
		if p == "" || (p != rp.HasMore && p != rp.IsLast && p != r.List.Items) {
			l.add("a member whose absence means its zero value: the end flag (has_more, is_last) or the items", at("pagination", "absent_means_zero", fmt.Sprint(i))...)
		}
	}
	if s := pg.Snapshot; s != nil {
		if s.From == "" {
			l.add("required: the path, in the first page's answer, of the snapshot's value (header.revision)", at("pagination", "snapshot", "from")...)
		}
		if k, ok := DialectKindOf(pg.Dialect); s.Param != "" && ok && !k.SendsSnapshot {
			l.add("a snapshot is sent with a continuation airlock builds (cursor, continue, graphql, search_after): a next link or a numbered page carries its own", at("pagination", "snapshot", "param")...)
		}
	}
	switch r.ItemEncoding {
	case "", EncodingDynamoDB:
	default:
		l.add("use dynamodb (each attribute a typed AttributeValue), or leave it out", at("item_encoding")...)
	}
	for name, f := range r.Fields {
		if f != nil && f.Set != "" {
			switch {
			case r.ItemEncoding != EncodingDynamoDB:
				l.add("a set type is DynamoDB's: item_encoding: dynamodb", at("fields", name, "set")...)
			case f.Set != "SS" && f.Set != "NS" && f.Set != "BS":
				l.add("use SS, NS or BS", at("fields", name, "set")...)
			case f.Type != "array":
				l.add("a set is written from a list: type array", at("fields", name, "set")...)
			}
		}
		if f != nil && f.Decode != "" && r.ItemEncoding != "" {
			l.add("the item encoding decodes every field: leave out decode", at("fields", name, "decode")...)
			continue
		}
		if f == nil || f.Decode == "" {
			continue
		}
		switch {
		case f.Decode != DecodeBase64:
			l.add("use base64 (RFC 4648, with padding)", at("fields", name, "decode")...)
		case f.Type != "string":
			l.add("a decoded value is text: type string", at("fields", name, "decode")...)
		case f.Normalize != "" || f.Layout != "" || len(f.NullValues) > 0:
			l.add("a decoded field is compared as decoded: leave out normalize, layout and null_values", at("fields", name, "decode")...)
		}
	}
	if g := r.Get; g != nil && strings.EqualFold(g.Method, http.MethodPost) {
		if g.Item == "" {
			l.add("required: where the answer holds the item, or a list of at most one (kvs)", at("get", "item")...)
		}
		if !slices.Contains(templateRefs(strictyaml.JSONValue(g.Body)), "id") {
			l.add("a POST read names the item in its body: {{id}}", at("get", "body")...)
		}
	}
	if g := r.Get; g != nil {
		switch strings.ToUpper(g.Method) {
		case "", http.MethodGet, http.MethodPost:
		default:
			l.add("must be GET or POST", at("get", "method")...)
		}
		if g.Absent != "" && g.Absent != "not_found" {
			l.add("use not_found (an answer without the item says there is none)", at("get", "absent")...)
		}
		if g.Body != nil && !strings.EqualFold(g.Method, http.MethodPost) {
			l.add("a body is sent by a POST read (get.method: POST)", at("get", "body")...)
		}
	}
}

// PostGet reports whether a resource reads one item by POST with a body
// (etcd's range by key).
func PostGet(g *GetConfig) bool {
	return g != nil && g.GraphQL == "" && strings.EqualFold(g.Method, http.MethodPost)
}

// bodyKeyed reports whether a per-target request names its target in its
// body (etcd's txn: the key is in the body), not in its path.
func bodyKeyed(rq *WriteRequestConfig) bool {
	return rq.GraphQL == "" && !strings.Contains(rq.Path, "{{id}}") && slices.Contains(templateRefs(strictyaml.JSONValue(rq.Body)), "id")
}

// validateOutcome checks a per-target request's outcome member.
func validateOutcome(l *errList, rq *WriteRequestConfig, at func(k ...string) []string) {
	o := rq.Outcome
	if o == nil {
		return
	}
	if o.Path == "" {
		l.add("required: the answer's member that says whether the write applied (succeeded)", at("request", "outcome", "path")...)
	}
	if len(o.Applied) == 0 {
		l.add("required: the values that say the write applied ([true])", at("request", "outcome", "applied")...)
	}
	for _, c := range o.Conflict {
		for _, a := range o.Applied {
			if fmt.Sprint(c) == fmt.Sprint(a) {
				l.add(fmt.Sprintf("%v says both applied and conflict", c), at("request", "outcome", "conflict")...)
			}
		}
	}
	if rq.GraphQL != "" {
		l.add("a GraphQL mutation's answer is judged by its errors and user_errors", at("request", "outcome")...)
	}
}
