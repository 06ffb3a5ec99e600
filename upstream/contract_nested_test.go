package upstream

import (
	"testing"

	"github.com/airlock-mcp/airlock/config"
)

// TestInitialize_AnObjectFieldBesideAFieldInsideItCompiles: a resource
// that declares metadata (an object) and metadata_uid at metadata.uid
// (Kubernetes' id) starts, in either order of their names.
func TestInitialize_AnObjectFieldBesideAFieldInsideItCompiles(t *testing.T) {
	for _, fields := range []string{
		`{metadata: {type: object}, metadata_uid: {path: metadata.uid, type: string}}`,
		`{a_uid: {path: metadata.uid, type: string}, metadata: {type: object}}`,
	} {
		cfg, err := config.Parse([]byte(`environment: test
upstreams: {api: {base_url: "https://api.example.com"}}
resources:
  pods:
    upstream: api
    list: {path: /api/v1/pods, items: items}
    pagination: {dialect: continue}
    id_field: ` + map[bool]string{true: "metadata_uid", false: "a_uid"}[fields[1] == 'm'] + `
    fields: ` + fields + `
`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Initialize(t.Context(), cfg, Options{WithoutCredentials: true}); err != nil {
			t.Errorf("%s: %v", fields, err)
		}
	}
}
