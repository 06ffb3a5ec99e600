package selection

import (
	"bytes"
	"io"
	"sort"

	"github.com/airlock-mcp/airlock/upstream"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func sortRecords(rs []Record) { sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID }) }

func ruleFor(field string) upstream.RuleConfig {
	return upstream.RuleConfig{Field: field, Op: "contains", Value: "disputed", Reason: "disputed"}
}
