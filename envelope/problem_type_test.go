package envelope

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestProblemType_IsAStableIdentifierNotAnAddress: every problem's type is
// an absolute URI that names no host (nothing to fetch, nothing that moves
// with where airlock is published), ends in the code's heading in
// docs/errors.md, and passes the envelope schema's "format": "uri" with
// formats asserted (as strict clients validate).
func TestProblemType_IsAStableIdentifierNotAnAddress(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	if err := c.AddResource("mem://envelope.json", bytes.NewReader(Schema())); err != nil {
		t.Fatal(err)
	}
	strict, err := c.Compile("mem://envelope.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Codes() {
		if c.Kind != KindProblem {
			continue
		}
		p := NewProblem(ProblemCode(c.Code), "")
		u, err := url.Parse(p.Type)
		if err != nil || u.Scheme != "urn" || u.Host != "" || p.Type != "urn:airlock:problem:"+strings.ToLower(c.Code) {
			t.Errorf("%s: type %q is not urn:airlock:problem:%s", c.Code, p.Type, strings.ToLower(c.Code))
		}
		env := ErrorEnvelope(p)
		env.Finish()
		doc, err := DecodeJSON(env.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		if err := strict.Validate(doc); err != nil {
			t.Errorf("%s: the schema refuses its problem: %v", c.Code, err)
		}
	}
}
