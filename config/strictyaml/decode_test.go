package strictyaml_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/config/strictyaml"
	"github.com/airlock-mcp/airlock/fixtures"
	"go.yaml.in/yaml/v3"
)

// FuzzDecodeConfig_AgreesWithYAML: airlock's walk decodes a document to
// what yaml's own decoder makes of it, and finds a value of the wrong
// type exactly when yaml does, so that its errors replace yaml's without
// losing or inventing any.
func FuzzDecodeConfig_AgreesWithYAML(f *testing.F) {
	f.Add(fixtures.DemoConfig("http://127.0.0.1:1"))
	f.Add([]byte("environment: x\nupstreams: {a: {base_url: 'http://h', retries: 2, timeout: 5s, credential: {env: T}}}\nresources: {r: {upstream: a, list: {path: /x, body: {a: [1, {b: c}]}}, fields: {id: ~}, default_fields: [a, [b], c]}}\n"))
	f.Add([]byte("upstreams: {a: {timeout: 1e99s, retries: many, backoff: [1]}}\nresources: {r: {limits: {max_items: {default: -1, cap: x}}}}"))
	f.Add([]byte("d: &d {timeout: 5s, retries: 1}\nupstreams: {a: {<<: *d, retries: 2}, b: {<<: [*d, {concurrency: 3}]}}"))
	f.Add([]byte("upstreams: {a: {headers: {1: x, ~: y, [z]: w}}}"))
	f.Add([]byte("upstreams: {a: {retries: !!float 1.5, first: !!str 3, concurrency: 2.0, max_body_bytes: 0x10}}"))
	f.Add([]byte("*a: &a [*a]"))
	f.Add([]byte("upstreams: {a: {credential: {env: [x], file: y, query: {q: 1}}}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 16<<10 {
			t.Skip()
		}
		var root yaml.Node
		if yaml.Unmarshal(b, &root) != nil {
			return
		}
		strictyaml.DropDuplicateKeys(&root)
		var byYAML config.Config
		yerr := root.Decode(&byYAML)
		var te *yaml.TypeError
		if yerr != nil && !errors.As(yerr, &te) {
			return // yaml gave up (aliases, an unreadable key); the walk reports it in its own words
		}
		var ours config.Config
		var typeErrs []strictyaml.Problem
		problems, _ := strictyaml.Decode(&root, &ours)
		for _, e := range problems {
			if !strings.HasPrefix(e.Msg, "unknown key") && !strings.Contains(e.Msg, "read as null") {
				typeErrs = append(typeErrs, e)
			}
		}
		switch {
		case yerr == nil && len(typeErrs) > 0:
			t.Fatalf("the walk refuses what yaml decodes: %v", typeErrs)
		case yerr != nil && len(typeErrs) == 0:
			t.Fatalf("yaml refuses what the walk decodes: %v", yerr)
		case yerr == nil && !reflect.DeepEqual(byYAML, ours):
			t.Fatalf("the walk decodes\n%+v\nwhere yaml decodes\n%+v", ours, byYAML)
		}
	})
}
