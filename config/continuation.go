package config

// DialectContinueObject continues a list with a whole object the answer
// carries, every member of which goes back into the next request
// (MediaWiki's continue: {apcontinue: "…", continue: "-||"}, and with a
// generator several members at once: gcmcontinue, clcontinue). The end is
// an answer without the object, proven as an absent continue token is:
// once the object was seen on the scan, or a probe showed the upstream
// sends it.
const DialectContinueObject = "continue_object"

// ContinuationObjectConfig is what the continue_object dialect reads
// beyond continue_path (the object's path, default continue) and
// page_size_param (default limit). It is inlined in PaginationConfig.
type ContinuationObjectConfig struct {
	// BatchComplete is the member by which an answer says its batch is
	// whole (MediaWiki's batchcomplete). A generator with a property
	// (generator=categorymembers&prop=categories) answers a batch of
	// pages over several requests, each page again with the next part of
	// its property: until an answer carries this member, the items are
	// merged by id (their lists joined) into one page.
	BatchComplete string `yaml:"batch_complete"`
	// EmptyWithoutItems reads an answer that holds no items array at all
	// as an empty page: MediaWiki leaves out query altogether when a
	// generator yields nothing ({"batchcomplete": true}). Otherwise such
	// an answer breaks the configured shape.
	EmptyWithoutItems bool `yaml:"empty_without_items"`
}

// resolveContinueObject fills in the continue_object dialect's defaults.
func resolveContinueObject(p *PaginationConfig) {
	if p.PageSizeParam == "" {
		p.PageSizeParam = "limit"
	}
	if p.ContinuePath == "" {
		p.ContinuePath = "continue"
	}
	if p.Consistency == "" {
		p.Consistency = ConsistencyKeyset
	}
}

// validateContinueObject checks what only the continue_object dialect
// reads, and the keys of other dialects it does not.
func validateContinueObject(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	pg := r.Pagination
	if pg.Dialect != DialectContinueObject {
		if pg.BatchComplete != "" {
			l.add("only the continue_object dialect merges batches", at("pagination", "batch_complete")...)
		}
		if pg.EmptyWithoutItems {
			l.add("only the continue_object dialect reads an answer without items as empty", at("pagination", "empty_without_items")...)
		}
		return
	}
	for key, v := range map[string]string{"cursor_param": pg.CursorParam, "next_cursor": pg.NextCursor, "has_more": pg.HasMore,
		"continue_param": pg.ContinueParam, "resource_version": pg.ResourceVersion} {
		if v != "" {
			l.add("the continue_object dialect sends the object's own members back: "+key+" does not apply", at("pagination", key)...)
		}
	}
	if r.List.ScalarItemField != "" && pg.BatchComplete != "" {
		l.add("a batch merges items by id: they must be objects", at("pagination", "batch_complete")...)
	}
}
