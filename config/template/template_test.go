package template

import (
	"slices"
	"testing"
)

// What check reads of a template is what Render reads: the same
// references, in order, the same text left over, the same names with a
// value.
func TestRefsStripAndHas_ReadTemplatesAsRenderDoes(t *testing.T) {
	s := "{{ before.status }}/{{id}}-{{Nope}}{{params.n}}"
	if got := Refs(s); !slices.Equal(got, []string{"before.status", "id", "params.n"}) {
		t.Errorf("Refs(%q) = %q", s, got)
	}
	if got := Strip(s); got != "/-{{Nope}}" {
		t.Errorf("Strip(%q) = %q", s, got)
	}
	v := Vars{ID: "7", Params: map[string]any{"n": 1}}
	for ref, want := range map[string]bool{"id": true, "params.n": true, "before.status": false, "version": false, "targets": false} {
		if got := v.Has(ref); got != want {
			t.Errorf("Has(%q) = %v, want %v", ref, got, want)
		}
		_, err := v.Render("{{" + ref + "}}")
		if (err == nil) != want {
			t.Errorf("Render({{%s}}) error %v, but Has says %v", ref, err, want)
		}
	}
}
