package selection

import (
	"bytes"
	"io"
	"sort"

	"github.com/airlock-mcp/airlock/config"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func sortRecords(rs []Record) { sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID }) }

func ruleFor(field string) config.RuleConfig {
	return config.RuleConfig{Field: field, Op: "contains", Value: "disputed", Reason: "disputed"}
}
