package config

import "strings"

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
	// Evaluated is the member by which an answer says how many items the
	// upstream evaluated for the page, where the page size counts those
	// rather than the items returned (DynamoDB's ScannedCount: Limit
	// counts the items read before FilterExpression drops some). The
	// end is then judged by it: a page without the object that
	// evaluated fewer than the page size, and fewer than an earlier
	// page did, ends the list; one that evaluated as many stopped at
	// the size or at the upstream's own cut (DynamoDB's 1 MB), and its
	// end is not proven.
	// Unset, the items returned are counted.
	Evaluated string `yaml:"evaluated"`
}

// continueObjectKeys are the keys the continue_object dialect reads
// beyond sharedKeys: the object's path, and ContinuationObjectConfig's.
// The object's own members are sent back, so it reads no cursor,
// continue token or end flag.
type continueObjectKeys struct {
	ContinuePath string `yaml:"continue_path"`
	// ContinueParam, when set, sends the object back whole as the value
	// of this body member of a POST list (DynamoDB's LastEvaluatedKey as
	// ExclusiveStartKey), its members any JSON at any depth; unset, each
	// member goes back as a parameter of its own (MediaWiki).
	ContinueParam            string `yaml:"continue_param"`
	ContinuationObjectConfig `yaml:",inline"`
}

// resolveContinueObject fills in the continue_object dialect's defaults.
func resolveContinueObject(p *PaginationConfig) {
	setDefault(&p.PageSizeParam, "limit")
	setDefault(&p.ContinuePath, "continue")
	setDefault(&p.Consistency, ConsistencyKeyset)
}

// checkContinueObject: a batch is merged by id, so its items are objects.
func checkContinueObject(l *errList, r *ResourceConfig, at func(k ...string) []string) {
	if r.List.ScalarItemField != "" && r.Pagination.BatchComplete != "" {
		l.add("a batch merges items by id: they must be objects", at("pagination", "batch_complete")...)
	}
	if r.Pagination.Evaluated != "" && r.Pagination.PageSizeParam == NoPageSize {
		l.add("the items read are compared with the page size asked for: set page_size_param", at("pagination", "evaluated")...)
	}
	if p := r.Pagination.ContinueParam; p != "" {
		size := r.Pagination.PageSizeParam
		if size == "" {
			size = "limit"
		}
		switch {
		case !strings.EqualFold(r.List.Method, "POST"):
			l.add("a whole continuation object is sent in a POST list's body: set list.method: POST", at("pagination", "continue_param")...)
		case p == size || (r.List.Expression != nil && p == r.List.Expression.Param):
			l.add("the member carries the continuation alone: not the page size or the filter expression too", at("pagination", "continue_param")...)
		case r.Pagination.BatchComplete != "":
			l.add("a batch follows MediaWiki's continuation, whose members go back one by one: leave out continue_param", at("pagination", "continue_param")...)
		}
	}
}
