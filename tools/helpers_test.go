package tools

import "context"

// canaryToken is the suite's credential: no tool result may ever contain
// it.
const canaryToken = "cnry-3f9a1c7e-demo-credential"

// bareDeps are the tools without a configuration or a store: their specs
// and schemas.
func bareDeps() *Deps {
	d, err := New(context.Background(), Config{})
	if err != nil {
		panic(err)
	}
	return d
}

// firstDuplicate is the first id ids holds twice ("" when none).
func firstDuplicate(ids []string) string {
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			return id
		}
		seen[id] = true
	}
	return ""
}
