package config

import (
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/fixtures"
)

// FuzzParseConfig: any bytes given as a configuration are parsed without
// a panic, and a refusal says where: every error names a path and a
// message.
func FuzzParseConfig(f *testing.F) {
	f.Add(fixtures.DemoConfig("http://127.0.0.1:1"))
	f.Add([]byte("environment: x\nupstreams: {a: {base_url: 'http://h', credential: {env: T}}}\nresources: {r: {upstream: a, list: {path: /x}, pagination: {dialect: page}, id_field: id, fields: {id: {type: string, sensitive: true, queryable: true}}}}\n"))
	f.Add([]byte("environment: [\n"))
	f.Add([]byte("upstreams: {a: {timeout: 1e99s, retries: 99}}\nresources: {r: {limits: {max_items: {default: -1, cap: -2}}}}"))
	f.Add([]byte("*a: &a [*a]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 16<<10 {
			t.Skip()
		}
		cfg, err := Parse(b)
		if err == nil {
			if cfg == nil {
				t.Fatal("no configuration and no error")
			}
			return
		}
		ces, ok := err.(Errors)
		if !ok || len(ces) == 0 {
			t.Fatalf("want Errors, got %T %v", err, err)
		}
		for _, e := range ces {
			if e.Msg == "" || e.Path == "" {
				t.Fatalf("an error without a path or message: %+v", e)
			}
			if strings.Contains(e.Msg, "cannot unmarshal") || strings.Contains(e.Msg, "config.") {
				t.Fatalf("an error in the YAML decoder's words, naming a Go type: %+v", e)
			}
		}
	})
}
