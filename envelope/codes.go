package envelope

import "sort"

// Kind classifies a stable code.
type Kind string

// The kinds of stable codes.
const (
	KindReason     Kind = "reason"
	KindWarning    Kind = "warning"
	KindProblem    Kind = "problem"
	KindFieldError Kind = "field_error"
	KindBlocker    Kind = "blocker"
)

// Code describes one stable code. Codes never change meaning once published;
// docs/codes.md is rendered from this registry and a test keeps them equal.
type Code struct {
	Code string
	Kind Kind
	// Message is the fixed text that accompanies the code in a reason,
	// warning or field error. It never contains caller or upstream text.
	Message string
	// Meaning says what the code means for the caller, Recovery what to do.
	Meaning  string
	Recovery string
	// Retryable is the problem's retryable member; for reasons it says
	// whether repeating the call later (not unchanged, immediately) can help.
	Retryable bool
	// Continuation is the continuation kind a reason offers by default.
	Continuation string
	// Problems only: HTTP status, title and the next_action template.
	Status     int
	Title      string
	NextAction string
}

// The kinds of code are distinct types, so that a code of one kind given
// where another is expected is a compile error, not a panic.
type (
	// ReasonCode is an incomplete reason's code.
	ReasonCode string
	// WarningCode is a warning's code.
	WarningCode string
	// ProblemCode is a problem's code.
	ProblemCode string
	// BlockerCode says why a selection is not committable (besides the
	// scan's incomplete reasons).
	BlockerCode string
	// FieldCode is the code of one entry of a problem's errors[].
	FieldCode string
)

// Incomplete reason codes.
const (
	MorePagesAvailable         ReasonCode = "MORE_PAGES_AVAILABLE"
	ResultLimitReached         ReasonCode = "RESULT_LIMIT_REACHED"
	TimeBudgetExceeded         ReasonCode = "TIME_BUDGET_EXCEEDED"
	SourceUnavailable          ReasonCode = "SOURCE_UNAVAILABLE"
	VisibilityRestricted       ReasonCode = "VISIBILITY_RESTRICTED"
	CursorExpired              ReasonCode = "CURSOR_EXPIRED"
	RateLimited                ReasonCode = "RATE_LIMITED"
	UpstreamReportedIncomplete ReasonCode = "UPSTREAM_REPORTED_INCOMPLETE"
	InconsistentSnapshot       ReasonCode = "INCONSISTENT_SNAPSHOT"
	ContractViolation          ReasonCode = "CONTRACT_VIOLATION"
	EndNotProven               ReasonCode = "END_NOT_PROVEN"
	ConflictingEvidence        ReasonCode = "CONFLICTING_EVIDENCE"
	OperationRunning           ReasonCode = "OPERATION_RUNNING"
	TargetsUnsettled           ReasonCode = "TARGETS_UNSETTLED"
	// SearchMatchesUnverified: the scope holds an upstream search whose
	// matches airlock cannot re-check.
	SearchMatchesUnverified ReasonCode = "SEARCH_MATCHES_UNVERIFIED"
	// SignalUnreadable: a page held a declared signal in a form that
	// cannot be read.
	SignalUnreadable ReasonCode = "SIGNAL_UNREADABLE"
	// UpstreamClaimUnverified: the count is the upstream's own total,
	// read on a first page and asked for (search_all's count: claimed);
	// airlock has not counted the records.
	UpstreamClaimUnverified ReasonCode = "UPSTREAM_CLAIM_UNVERIFIED"
)

// Warning codes.
const (
	WarnNoSnapshot              WarningCode = "NO_SNAPSHOT"
	WarnStaleIndex              WarningCode = "STALE_INDEX"
	WarnPartialFieldSet         WarningCode = "PARTIAL_FIELD_SET"
	WarnDefaultScopeApplied     WarningCode = "DEFAULT_SCOPE_APPLIED"
	WarnEstimatedTotal          WarningCode = "ESTIMATED_TOTAL"
	WarnDeprecatedField         WarningCode = "DEPRECATED_FIELD"
	WarnValueNormalized         WarningCode = "VALUE_NORMALIZED"
	WarnUnknownEnumValue        WarningCode = "UNKNOWN_ENUM_VALUE"
	WarnFieldDrift              WarningCode = "FIELD_DRIFT"
	WarnDeclarationContradicted WarningCode = "DECLARATION_CONTRADICTED"
	WarnAnsweredFromMemory      WarningCode = "ANSWERED_FROM_MEMORY"
	WarnNullLikeValues          WarningCode = "NULL_LIKE_VALUES"
	// WarnNotConditional: the action's writes are checked by a re-read,
	// not made conditional by the upstream.
	WarnNotConditional WarningCode = "NOT_CONDITIONAL"
	// WarnClaimUnavailable: the upstream's claim was asked for and cannot
	// be given; the count was verified instead.
	WarnClaimUnavailable WarningCode = "CLAIM_UNAVAILABLE"
)

// Problem codes.
const (
	ProblemInvalidArguments    ProblemCode = "INVALID_ARGUMENTS"
	ProblemUpstreamAuth        ProblemCode = "UPSTREAM_UNAUTHORIZED"
	ProblemUpstreamForbidden   ProblemCode = "UPSTREAM_FORBIDDEN"
	ProblemUpstreamRejected    ProblemCode = "UPSTREAM_REJECTED_REQUEST"
	ProblemUpstreamNotFound    ProblemCode = "UPSTREAM_NOT_FOUND"
	ProblemUpstreamBadResponse ProblemCode = "UPSTREAM_BAD_RESPONSE"
	ProblemInternal            ProblemCode = "INTERNAL_ERROR"
	ProblemStoreUnavailable    ProblemCode = "STORE_UNAVAILABLE"
	ProblemUpstreamUnavailable ProblemCode = "UPSTREAM_UNAVAILABLE"
	ProblemSelectionNotFound   ProblemCode = "SELECTION_NOT_FOUND"
	ProblemSelectionExpired    ProblemCode = "SELECTION_EXPIRED"
	ProblemSelectionStale      ProblemCode = "SELECTION_STALE"
	ProblemDigestMismatch      ProblemCode = "DIGEST_MISMATCH"
	ProblemActionMismatch      ProblemCode = "ACTION_MISMATCH"
	ProblemNotCommittable      ProblemCode = "SELECTION_NOT_COMMITTABLE"
	ProblemAlreadyCommitted    ProblemCode = "ALREADY_COMMITTED"
	ProblemOperationNotFound   ProblemCode = "OPERATION_NOT_FOUND"

	ProblemUpstreamConflict       ProblemCode = "UPSTREAM_CONFLICT"
	ProblemUpstreamRateLimited    ProblemCode = "UPSTREAM_RATE_LIMITED"
	ProblemUpstreamServerError    ProblemCode = "UPSTREAM_SERVER_ERROR"
	ProblemUpstreamTimeout        ProblemCode = "UPSTREAM_TIMEOUT"
	ProblemUpstreamConnection     ProblemCode = "UPSTREAM_CONNECTION_FAILED"
	ProblemUpstreamErrorInSuccess ProblemCode = "UPSTREAM_ERROR_IN_SUCCESS"
	ProblemUpstreamTooLarge       ProblemCode = "UPSTREAM_RESPONSE_TOO_LARGE"
	ProblemUpstreamContentType    ProblemCode = "UPSTREAM_CONTENT_TYPE_CHANGED"
	ProblemUpstreamContract       ProblemCode = "UPSTREAM_CONTRACT_VIOLATION"
	ProblemUpstreamGraphQL        ProblemCode = "UPSTREAM_GRAPHQL_ERRORS"
	// ProblemWriteUnconfirmed: a write's answer is not the target's own
	// record showing the change; a re-read decides.
	ProblemWriteUnconfirmed ProblemCode = "UPSTREAM_WRITE_UNCONFIRMED"

	ProblemApprovalRequired      ProblemCode = "APPROVAL_REQUIRED"
	ProblemApprovalRejected      ProblemCode = "APPROVAL_REJECTED"
	ProblemApprovalDeclined      ProblemCode = "APPROVAL_DECLINED"
	ProblemApprovalCancelled     ProblemCode = "APPROVAL_CANCELLED"
	ProblemApprovalDecided       ProblemCode = "APPROVAL_ALREADY_DECIDED"
	ProblemApprovalMismatch      ProblemCode = "APPROVAL_MISMATCH"
	ProblemApprovalExpired       ProblemCode = "APPROVAL_EXPIRED"
	ProblemClientApprovalMissing ProblemCode = "CLIENT_APPROVAL_UNAVAILABLE"
	ProblemElicitationForged     ProblemCode = "ELICITATION_STATE_INVALID"
	ProblemElicitationReplayed   ProblemCode = "ELICITATION_STATE_REPLAYED"
	ProblemElicitationMisrouted  ProblemCode = "ELICITATION_ANSWER_MISROUTED"

	ProblemCompensationUnavailable ProblemCode = "COMPENSATION_UNAVAILABLE"

	ProblemTokenClientRejected      ProblemCode = "TOKEN_CLIENT_REJECTED"
	ProblemTokenRequestRejected     ProblemCode = "TOKEN_REQUEST_REJECTED"
	ProblemTokenEndpointFailed      ProblemCode = "TOKEN_ENDPOINT_FAILED"
	ProblemTokenEndpointTimeout     ProblemCode = "TOKEN_ENDPOINT_TIMEOUT"
	ProblemTokenEndpointUnreachable ProblemCode = "TOKEN_ENDPOINT_UNREACHABLE"
	ProblemTokenResponseInvalid     ProblemCode = "TOKEN_RESPONSE_INVALID"

	ProblemReviewAccessDenied ProblemCode = "REVIEW_ACCESS_DENIED"
	ProblemReviewFormInvalid  ProblemCode = "REVIEW_FORM_INVALID"

	ProblemInvalidToken        ProblemCode = "INVALID_TOKEN"
	ProblemInsufficientScope   ProblemCode = "INSUFFICIENT_SCOPE"
	ProblemPrincipalNotAllowed ProblemCode = "PRINCIPAL_NOT_ALLOWED"
	ProblemApprovalByRequester ProblemCode = "APPROVAL_BY_REQUESTER"
	ProblemApproverNotAllowed  ProblemCode = "APPROVER_NOT_ALLOWED"
)

// Blocker codes (why a selection is not committable, besides the scan's
// incomplete reasons).
const (
	BlockerAmbiguous  BlockerCode = "AMBIGUOUS_RECORDS"
	BlockerMaxTargets BlockerCode = "MAX_TARGETS_EXCEEDED"
)

// Field error codes (the code member of a problem's errors[] entries).
const (
	FieldRequired         FieldCode = "required"
	FieldType             FieldCode = "type"
	FieldUnknownArgument  FieldCode = "unknown_argument"
	FieldUnknownResource  FieldCode = "unknown_resource"
	FieldUnknownFilter    FieldCode = "unknown_filter"
	FieldUnknownField     FieldCode = "unknown_field"
	FieldSensitive        FieldCode = "sensitive_field"
	FieldSensitiveQuery   FieldCode = "sensitive_query"
	FieldOutOfRange       FieldCode = "out_of_range"
	FieldOverCap          FieldCode = "over_cap"
	FieldEnum             FieldCode = "enum"
	FieldFormat           FieldCode = "format"
	FieldCursorTampered   FieldCode = "cursor_tampered"
	FieldCursorMismatch   FieldCode = "cursor_mismatch"
	FieldInvalid          FieldCode = "invalid"
	FieldUnknownAction    FieldCode = "unknown_action"
	FieldUpstreamRejected FieldCode = "upstream_rejected"
	// FieldPartitionRequired: the resource is read one partition at a
	// time (a DynamoDB Query) and the filter that names it is missing or
	// not one value.
	FieldPartitionRequired FieldCode = "partition_required"
	// FieldOneSortCondition: a keyed read takes one condition on its sort
	// key (one filter, or a gte and an lte together), and the search gave
	// two others.
	FieldOneSortCondition FieldCode = "one_sort_condition"
)

var registry = []Code{
	// Incomplete reasons.
	{Code: string(MorePagesAvailable), Kind: KindReason, Continuation: ContinueNextCursor, Retryable: true,
		Message:  "more matching items are available through continuation.cursor",
		Meaning:  "the scan is not finished or not every match was delivered; the rest is reachable through the cursor over the same frozen scan",
		Recovery: "call the same tool with the same arguments and continuation.cursor"},
	{Code: string(ResultLimitReached), Kind: KindReason, Continuation: ContinueNextCursor, Retryable: true,
		Message:  "a result limit stopped the scan or the delivery before matches ran out",
		Meaning:  "a limit (limit_source: upstream, airlock or caller) stopped the scan or the delivery before matches ran out",
		Recovery: "continue with the cursor, raise the caller's budget within the cap, or narrow the filter when the upstream caps results"},
	{Code: string(TimeBudgetExceeded), Kind: KindReason, Continuation: ContinueNextCursor, Retryable: true,
		Message:  "the deadline stopped the scan before the planned work was done",
		Meaning:  "the deadline stopped the scan; the work done is in coverage",
		Recovery: "continue with the cursor, or call again with a larger deadline_ms"},
	{Code: string(SourceUnavailable), Kind: KindReason, Continuation: ContinueRetryAfter, Retryable: true,
		Message:  "a source did not answer; its records are missing from this answer",
		Meaning:  "the named source or partition did not answer; the other sources' items are returned",
		Recovery: "wait, then continue with the cursor to retry the unavailable source"},
	{Code: string(VisibilityRestricted), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "the credential cannot see part of the requested domain; hidden records are not counted",
		Meaning:  "the upstream reported that the configured credential sees a restricted view; absence in this answer proves nothing about hidden records",
		Recovery: "do not treat absence as proof; ask an operator to run the query with a credential that sees the whole domain"},
	{Code: string(CursorExpired), Kind: KindReason, Continuation: ContinueRestart, Retryable: true,
		Message:  "the continuation became invalid; the scan was not restarted or merged",
		Meaning:  "the upstream or airlock continuation expired; the items returned so far cannot be combined with a new scan",
		Recovery: "start a new scan without a cursor and use only its result"},
	{Code: string(RateLimited), Kind: KindReason, Continuation: ContinueRetryAfter, Retryable: true,
		Message:  "an upstream quota stopped the scan",
		Meaning:  "the upstream rate limit stopped the scan; retry_after_seconds says when it may continue",
		Recovery: "wait at least retry_after_seconds, then continue with the cursor"},
	{Code: string(UpstreamReportedIncomplete), Kind: KindReason, Continuation: ContinueNarrowQuery, Retryable: false,
		Message:  "the upstream reported that its own answer is incomplete",
		Meaning:  "the upstream said so itself (signal: incomplete_results, timed_out, unreachable, total_gte, or graphql_errors: a GraphQL answer carried errors beside its data, quoted in upstream_message)",
		Recovery: "narrow the filter so the upstream can answer completely"},
	{Code: string(InconsistentSnapshot), Kind: KindReason, Continuation: ContinueRestart, Retryable: true,
		Message:  "the collection changed during the scan in a way that may hide records",
		Meaning:  "the scan saw the total change, an id twice, a page boundary shift or the snapshot change between pages (signal)",
		Recovery: "start a new scan; if the collection keeps changing, narrow the filter"},
	{Code: string(ContractViolation), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "records broke the decision-field contract and were withheld",
		Meaning:  "records whose decision fields broke the configured contract were withheld (field, rule, count, sample_id); rule duplicate_member is a record that names a member twice, read by neither value",
		Recovery: "report the drift to the operator; do not act on the withheld part of the scope"},
	{Code: string(EndNotProven), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "the upstream gave no proof that the list ended; records after the last page read may exist",
		Meaning:  "a source's last page carried no end signal the scan could verify (signal: next_signal_not_seen, next_signal_missing: a whole page without its continuation that a recheck one item smaller did not settle, more_on_empty_page, more_without_continuation, repeated_page, probe_failed, continuation_refused, batch_incomplete: a continuation object's list ended on an answer without its declared batch marker): the list may go on",
		Recovery: "do not treat absence as proof; an operator should check the resource's pagination with airlock probe"},

	{Code: string(SignalUnreadable), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "a page held a declared signal in a form that cannot be read; what it would have said is unknown",
		Meaning:  "a signal the configuration declares (the items, a cursor, a next URL, an end flag, a total, a count of pages, a remaining count, a snapshot, a point in time) was on a page in another form than it takes (a wrong type, an object where a string belongs, a value a header holds twice); member names it and page the source's page it was on: a signal that cannot be read is never taken for an absent one, and the list may go on or hold other records than counted",
		Recovery: "do not treat absence or counts as proof; report the member to an operator, who can check the resource with airlock probe"},

	{Code: string(SearchMatchesUnverified), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "the filter holds an upstream search whose matches airlock cannot re-check; what it did not return is not proven absent",
		Meaning:  "a filter of the scope is a search the upstream judges alone (scope.search names it: MediaWiki's srsearch, GitHub's q, Lucene): the items returned are the upstream's claim, and a record it did not return, or an empty answer, proves nothing about absence",
		Recovery: "treat the items as the upstream's matches, never as all there are; to prove a record absent, filter on fields airlock checks (a filter without search) or read the record by id"},

	{Code: string(UpstreamClaimUnverified), Kind: KindReason, Continuation: ContinueNextCursor, Retryable: true,
		Message:  "data.total_matched is the upstream's own total for the query as sent, read on its first page; airlock has not counted the records",
		Meaning:  "search_all was asked for the upstream's claim (count: claimed) and answered it from the first page: data.total_relation is claimed, data.upstream_claim names the total's member and estimates the scan that would verify it, and coverage counts only what was read; an upstream's total can lag, cap or miscount",
		Recovery: "use the number as the upstream's word, never as proof; to verify it, call search_all again with the same arguments and continuation.cursor, which counts every record and says whether the claim held (data.upstream_claim.status)"},

	{Code: string(ConflictingEvidence), Kind: KindReason, Continuation: ContinueNone, Retryable: false,
		Message:  "two signals from the upstream contradict each other; neither was believed",
		Meaning:  "the upstream's answers disagree with each other or with the configuration (signal names both sides: filter_not_applied_as_sent, with filter, sent, seen, count and sample_id, when the upstream returned records for a filter that airlock's own check rejects; end_flag_vs_continuation, an end flag that says last beside a continuation; total_vs_items, more records than the upstream's own total; total_vs_total_pages, the last page by the upstream's page count short of its total; total_pages_vs_page, records on a page past that count, or none before it): the part of the scope the contradiction touches is unknown",
		Recovery: "do not treat absence or counts as proof; report it to an operator, who can check the configuration with airlock probe"},

	{Code: string(OperationRunning), Kind: KindReason, Continuation: ContinueRetryAfter, Retryable: true,
		Message:  "the operation is still running; its counts are a snapshot",
		Meaning:  "a commit returned before every target had an outcome (the wait budget ran out); the operation keeps running",
		Recovery: "wait retry_after_seconds, then call get_operation with the operation_id; never commit again"},

	{Code: string(TargetsUnsettled), Kind: KindReason, Continuation: ContinueNone, Retryable: true,
		Message:  "some targets have no final outcome: pending ones were never sent, unknown ones were sent and not observed",
		Meaning:  "the operation is not running and count targets are pending or unknown; an unknown write may have applied",
		Recovery: "call commit_bulk_action with the same arguments and resume: true to re-read the unknown targets and send the pending ones; never treat them as done or as untouched"},

	// Warnings.
	{Code: string(WarnNoSnapshot), Kind: KindWarning,
		Message:  "the upstream has no snapshot: records changed during the scan may be missed or seen in a newer state",
		Meaning:  "the scan covered the scope without a snapshot; records created or changed while it ran may be absent or newer",
		Recovery: "re-read targets before acting; airlock does this at commit time"},
	{Code: string(WarnStaleIndex), Kind: KindWarning,
		Message:  "the upstream answered from an index older than the configured freshness",
		Meaning:  "the upstream's index lags its source (revision says when it was built)",
		Recovery: "check the authoritative source before acting on fresh changes"},
	{Code: string(WarnPartialFieldSet), Kind: KindWarning,
		Message:  "some items lack fields that were requested; the upstream omitted them",
		Meaning:  "the listed fields were requested but some items came without them",
		Recovery: "do not read a missing field as null; request the item individually if needed"},
	{Code: string(WarnDefaultScopeApplied), Kind: KindWarning,
		Message:  "a default scope from the configuration was applied",
		Meaning:  "the resource's configured default filter narrowed the scope (fields names it)",
		Recovery: "pass the field explicitly in filter to choose another scope"},
	{Code: string(WarnEstimatedTotal), Kind: KindWarning,
		Message:  "the upstream's total is an estimate",
		Meaning:  "a total reported by the upstream is an estimate, not a count",
		Recovery: "use coverage.total_matched with total_relation for claims"},
	{Code: string(WarnDeprecatedField), Kind: KindWarning,
		Message:  "a deprecated field or alias was used",
		Meaning:  "the listed field is deprecated or was read through a temporary alias",
		Recovery: "move to the field's current name before the alias ends"},
	{Code: string(WarnValueNormalized), Kind: KindWarning,
		Message:  "values were normalized to the declared form",
		Meaning:  "values of the listed fields arrived in another form (case, whitespace) and were normalized",
		Recovery: "none needed; compare against the normalized values"},

	{Code: string(WarnUnknownEnumValue), Kind: KindWarning,
		Message:  "some items carry a value outside a field's declared set; the field drives no decision here",
		Meaning:  "a non-decision field (fields) has a value its contract does not list: the upstream added a value",
		Recovery: "read the value as unknown; report it so that the contract can be updated"},
	{Code: string(WarnFieldDrift), Kind: KindWarning,
		Message:  "some items break the contract of fields that drive no decision here",
		Meaning:  "non-decision fields (fields) are missing, null or of another type than declared",
		Recovery: "do not rely on the listed fields; report the drift"},
	{Code: string(WarnDeclarationContradicted), Kind: KindWarning,
		Message:  "the upstream contradicted something the configuration declares about it; the declaration was not relied on",
		Meaning:  "a configured declaration (fields: result_cap, total) disagreed with what the upstream returned; airlock ignored it for this answer",
		Recovery: "none needed for this answer; report it so that the configuration can be corrected"},
	{Code: string(WarnAnsweredFromMemory), Kind: KindWarning,
		Message:  "airlock answered an identical call from memory: the upstream asked to wait and was not called again",
		Meaning:  "the answer is the one given at revision to an identical call; the upstream is not called again until continuation.retry_after_seconds have passed",
		Recovery: "wait retry_after_seconds before calling again; the cursor, when given, continues the same scan"},
	{Code: string(WarnNotConditional), Kind: KindWarning,
		Message:  "the action's writes are not conditional: a re-read checks each target just before its write, and a change another writer makes in between is overwritten",
		Meaning:  "the upstream offers no condition the action can send (If-Match, a version, a compare): the precondition is checked by re-reading each target right before its write, which leaves a window in which another writer's change is lost",
		Recovery: "approve only if no one else changes these records meanwhile; an operator can make the write conditional where the API offers a version (conditional: if_match or version)"},
	{Code: string(WarnClaimUnavailable), Kind: KindWarning,
		Message:  "the upstream's claim was asked for and cannot be given; airlock counted the records instead",
		Meaning:  "count: claimed was asked, and the upstream's total cannot stand for the query as asked (signal: filter_applied_by_airlock, fields naming filters airlock applies alone, which the upstream's total does not count; group_by, fields naming them, which a total cannot split; no_declared_total, the configuration declares no total; total_absent or total_unreadable, member and page naming the first page's total, missing, or in a form that cannot be read or beyond 2^53−1; total_vs_items, a first page holding more records than its own total; first_page_unread, a source whose first page was not read): the answer is the verified count, within the budget, as without count",
		Recovery: "none needed: read total_matched with total_relation as in any answer; a count from one request needs every filter sent upstream and a total on the first page"},
	{Code: string(WarnNullLikeValues), Kind: KindWarning,
		Message:  "a filter asked for null, and the field holds values that may mean 'no value' where the configuration does not declare them (null_values)",
		Meaning:  "the scan read records whose filtered field holds an empty string or a word such as none, null or - (values, count): airlock matched only real nulls, so those records are not in the answer",
		Recovery: "if those values mean 'no value', ask an operator to declare them in the field's null_values (airlock probe finds them); meanwhile filter on them explicitly"},

	// Problems.
	{Code: string(ProblemInvalidArguments), Kind: KindProblem, Status: 400, Title: "Invalid arguments", Retryable: false,
		Meaning:    "one or more arguments are invalid; errors[] names every bad field",
		Recovery:   "fix every field listed in errors[] and call again",
		NextAction: "Fix every field listed in errors[] (see each entry's message and example), then call the tool again. Do not resend the same arguments."},
	{Code: string(ProblemUpstreamAuth), Kind: KindProblem, Status: 502, Title: "Upstream rejected the credential", Retryable: false,
		Meaning:    "the upstream answered 401: the configured credential is missing, expired or wrong",
		Recovery:   "stop; an operator must fix the credential in airlock's configuration",
		NextAction: "Stop and tell the user that the upstream credential was rejected. Retrying will not help; an operator must fix the credential."},
	{Code: string(ProblemUpstreamForbidden), Kind: KindProblem, Status: 502, Title: "Upstream refused access", Retryable: false,
		Meaning:    "the upstream answered 403: the credential lacks permission for this resource",
		Recovery:   "stop; an operator must grant the permission or use another credential",
		NextAction: "Stop and tell the user that the credential lacks permission for this resource. Retrying will not help."},
	{Code: string(ProblemUpstreamRejected), Kind: KindProblem, Status: 502, Title: "Upstream rejected the request", Retryable: false,
		Meaning:    "the upstream answered 400 or 422 to a request airlock built from the arguments",
		Recovery:   "change the arguments named in errors[], or report a configuration problem when errors[] is empty",
		NextAction: "Change the arguments named in errors[] and call again. If errors[] is empty, stop and report the request_id to an operator."},
	{Code: string(ProblemUpstreamNotFound), Kind: KindProblem, Status: 502, Title: "Upstream resource not found", Retryable: false,
		Meaning:    "the upstream answered 404 for the configured list endpoint",
		Recovery:   "stop; the configuration points at an endpoint that does not exist",
		NextAction: "Stop and report the request_id to an operator: the configured endpoint does not exist."},
	{Code: string(ProblemUpstreamBadResponse), Kind: KindProblem, Status: 502, Title: "Upstream response not understood", Retryable: false,
		Meaning:    "the upstream answered with a body airlock could not read as the configured shape",
		Recovery:   "stop; report the request_id to an operator",
		NextAction: "Stop and report the request_id to an operator: the upstream's response did not match its configured shape."},
	{Code: string(ProblemInternal), Kind: KindProblem, Status: 500, Title: "Internal error", Retryable: false,
		Meaning:    "airlock failed in a way it did not expect; nothing was written",
		Recovery:   "report the request_id to an operator",
		NextAction: "Stop and report the request_id to an operator."},

	{Code: string(ProblemStoreUnavailable), Kind: KindProblem, Status: 503, Title: "airlock's store unavailable", Retryable: true,
		Meaning:    "airlock could not reach its own store (its database is restarting or unreachable); nothing was written by this call, and operations already running resume once it answers",
		Recovery:   "wait retry_after_seconds, then call again with the same arguments",
		NextAction: "Wait {retry_after_seconds} seconds, then call the tool again with the same arguments. Nothing was written by this call."},
	{Code: string(ProblemUpstreamUnavailable), Kind: KindProblem, Status: 503, Title: "Upstream unavailable", Retryable: true,
		Meaning:    "the upstream answered 503 (maintenance or overload); nothing was changed by this request",
		Recovery:   "wait retry_after_seconds (or 10 seconds when absent), then call again",
		NextAction: "Wait {retry_after_seconds} seconds, then call the tool again with the same arguments. Do not call sooner."},
	{Code: string(ProblemUpstreamConflict), Kind: KindProblem, Status: 409, Title: "Upstream target changed", Retryable: false,
		Meaning:    "the upstream answered 409 or 412 to a conditional write: the target changed since it was read",
		Recovery:   "re-read the target (preview again); the write was not applied",
		NextAction: "Do not repeat the write. Call preview_selection again to see the target's current state."},
	{Code: string(ProblemUpstreamRateLimited), Kind: KindProblem, Status: 429, Title: "Upstream rate limit", Retryable: true,
		Meaning:    "the upstream's quota is exhausted; airlock will not call it again until retry_after_seconds have passed",
		Recovery:   "wait retry_after_seconds, then call again",
		NextAction: "Wait {retry_after_seconds} seconds before calling any tool on this upstream again. Calling sooner is answered by airlock without reaching the upstream."},
	{Code: string(ProblemUpstreamServerError), Kind: KindProblem, Status: 502, Title: "Upstream server error", Retryable: true,
		Meaning:    "the upstream failed with a 5xx other than 503; airlock already retried what was safe to retry",
		Recovery:   "wait a little, then call again once; report the request_id if it persists",
		NextAction: "Wait {retry_after_seconds} seconds, then call again once. If it fails again, stop and report the request_id to an operator."},
	{Code: string(ProblemUpstreamTimeout), Kind: KindProblem, Status: 504, Title: "Upstream timed out", Retryable: true,
		Meaning:    "the upstream did not answer in time; for a write, whether it applied is in state_changed",
		Recovery:   "wait, then call again; a write with state_changed unknown is reconciled by airlock, never re-sent blindly",
		NextAction: "Wait {retry_after_seconds} seconds, then call again. Never repeat a write whose state_changed is unknown: read get_operation instead."},
	{Code: string(ProblemUpstreamConnection), Kind: KindProblem, Status: 502, Title: "Upstream unreachable", Retryable: true,
		Meaning:    "the connection to the upstream failed or was reset",
		Recovery:   "wait, then call again",
		NextAction: "Wait {retry_after_seconds} seconds, then call again. If it keeps failing, stop and report the request_id to an operator."},
	{Code: string(ProblemUpstreamErrorInSuccess), Kind: KindProblem, Status: 502, Title: "Upstream error behind a success status", Retryable: false,
		Meaning:    "the upstream answered 2xx but its body is an error object (ok false, an error member, errors true); airlock never treats it as success",
		Recovery:   "stop; report the request_id to an operator",
		NextAction: "Do not treat this as a success and do not repeat it. Stop and report the request_id to an operator."},
	{Code: string(ProblemUpstreamTooLarge), Kind: KindProblem, Status: 502, Title: "Upstream response too large", Retryable: false,
		Meaning:    "the upstream's body was larger than max_body_bytes",
		Recovery:   "narrow the request (smaller page size or filter), or raise max_body_bytes in the configuration (a page being read holds about three times its size in memory: docs/benchmarks.md)",
		NextAction: "Narrow the request with a more specific filter. If that is not possible, report the request_id to an operator."},
	{Code: string(ProblemUpstreamContract), Kind: KindProblem, Status: 502, Title: "Upstream answer broke its contract", Retryable: false,
		Meaning:    "a write's answer broke the action's declared response contract (a field missing, renamed, of another type, or an invariant broken); the operation stopped at that answer",
		Recovery:   "stop; an operator must compare the upstream with the contract (airlock contract --live)",
		NextAction: "Do not retry. Stop and tell the user the upstream changed its answers; report the request_id to an operator."},
	{Code: string(ProblemUpstreamGraphQL), Kind: KindProblem, Status: 502, Title: "Upstream GraphQL errors", Retryable: false,
		Meaning:    "the upstream's GraphQL answer carried errors and no data for the list (the configured query or its variables were refused); upstream_message quotes the errors",
		Recovery:   "stop; an operator must fix the resource's query (airlock probe shows the errors)",
		NextAction: "Do not retry. Stop and report the request_id to an operator: the upstream refused the configured query."},
	{Code: string(ProblemWriteUnconfirmed), Kind: KindProblem, Status: 502, Title: "Write not confirmed by the target's record", Retryable: false,
		Meaning:    "a write's answer is not the target's own record showing the change (an empty body, 204, {}, a bare status, another record, an echo the action declares is no evidence with verify: reread, a record with fields outside the effect changed): the target is unknown until a re-read shows the change applied and nothing else moved",
		Recovery:   "read the operation with get_operation: airlock re-reads such targets itself; an unknown one may have applied, so never treat it as done or as untouched",
		NextAction: "Do not commit again. Read the operation with get_operation: airlock re-reads the target to settle its outcome."},
	{Code: string(ProblemUpstreamContentType), Kind: KindProblem, Status: 502, Title: "Upstream content type changed", Retryable: false,
		Meaning:    "the upstream answered with a content type other than JSON (often a login, proxy or maintenance page)",
		Recovery:   "stop; an operator must check the upstream",
		NextAction: "Stop and report the request_id to an operator: the upstream is not answering with JSON."},
	{Code: string(ProblemSelectionNotFound), Kind: KindProblem, Status: 404, Title: "Selection not found", Retryable: false,
		Meaning:    "no selection has this id",
		Recovery:   "call preview_selection to create one",
		NextAction: "Call preview_selection again to build a selection, then use the selection_id and digest it returns."},
	{Code: string(ProblemSelectionExpired), Kind: KindProblem, Status: 410, Title: "Selection expired", Retryable: false,
		Meaning:    "the selection's expires_at has passed; it can no longer be committed or approved",
		Recovery:   "preview again",
		NextAction: "Call preview_selection again with the same arguments, review the new selection, and commit the new selection_id with its digest."},
	{Code: string(ProblemSelectionStale), Kind: KindProblem, Status: 409, Title: "Selection is stale", Retryable: false,
		Meaning:    "the action's configuration changed since the preview, so the preview no longer describes what the commit would do",
		Recovery:   "preview again",
		NextAction: "Call preview_selection again: the action's definition changed since this selection was previewed."},
	{Code: string(ProblemDigestMismatch), Kind: KindProblem, Status: 409, Title: "Digest does not match", Retryable: false,
		Meaning:    "expected_digest is not the selection's digest: the commit does not name what was previewed",
		Recovery:   "use the digest returned by preview_selection for this selection_id, or preview again",
		NextAction: "Use exactly the digest that preview_selection returned for this selection_id. If you do not have it, call preview_selection again."},
	{Code: string(ProblemActionMismatch), Kind: KindProblem, Status: 409, Title: "Action differs from the preview", Retryable: false,
		Meaning:    "the action (type or params) is not the one previewed with this selection",
		Recovery:   "commit the previewed action, or preview the new action",
		NextAction: "Send the same action (type and params) that was previewed, or call preview_selection again with the new action."},
	{Code: string(ProblemNotCommittable), Kind: KindProblem, Status: 409, Title: "Selection is not committable", Retryable: false,
		Meaning:    "the selection has blockers (an incomplete scan, ambiguous records, too many targets); errors[] lists them",
		Recovery:   "resolve the blockers (complete the scan, exclude or name the ambiguous records) and preview again",
		NextAction: "Do not commit. Resolve the blockers listed in the selection's committable_reasons, then call preview_selection again."},
	{Code: string(ProblemAlreadyCommitted), Kind: KindProblem, Status: 409, Title: "Already committed", Retryable: false,
		Meaning:    "this selection and action were committed under another idempotency key",
		Recovery:   "read the existing operation with get_operation",
		NextAction: "Do not commit again. Call get_operation with the operation_id in detail to read the existing operation."},
	{Code: string(ProblemOperationNotFound), Kind: KindProblem, Status: 404, Title: "Operation not found", Retryable: false,
		Meaning:    "no operation has this id",
		Recovery:   "use the operation_id returned by commit_bulk_action",
		NextAction: "Use the operation_id that commit_bulk_action returned."},

	{Code: string(ProblemApprovalRequired), Kind: KindProblem, Status: 403, Title: "Approval required", Retryable: false,
		Meaning:    "the action's policy requires a person to approve this selection and action before it is committed",
		Recovery:   "ask the user to approve it (detail says how: through the client or by an operator); never approve it yourself",
		NextAction: "Do not retry. Show the user the selection's manifest, effect and exclusions, and ask them to approve it as the detail says; then commit again."},
	{Code: string(ProblemApprovalRejected), Kind: KindProblem, Status: 403, Title: "Approval rejected", Retryable: false,
		Meaning:    "a person rejected this selection and action",
		Recovery:   "do not commit it; preview a different selection if the user asks for one",
		NextAction: "Do not commit this selection. Tell the user it was rejected and ask what they want instead."},
	{Code: string(ProblemApprovalDeclined), Kind: KindProblem, Status: 403, Title: "Approval declined", Retryable: false,
		Meaning:    "the user declined the approval request shown by the client",
		Recovery:   "do not commit; ask the user what to change",
		NextAction: "Do not commit. Ask the user what they want to change in the selection or the action."},
	{Code: string(ProblemApprovalCancelled), Kind: KindProblem, Status: 403, Title: "Approval cancelled", Retryable: false,
		Meaning:    "the user dismissed the approval request without deciding",
		Recovery:   "ask the user whether to ask again",
		NextAction: "Do not commit. Ask the user whether they want to be asked again."},
	{Code: string(ProblemApprovalDecided), Kind: KindProblem, Status: 409, Title: "Already decided", Retryable: false,
		Meaning:    "this selection and action already have a decision (an approval not yet used, or a rejection)",
		Recovery:   "commit with the existing approval, or preview again for a new decision",
		NextAction: "Do not decide again. Commit with the existing approval, or preview again if the decision was a rejection."},
	{Code: string(ProblemApprovalMismatch), Kind: KindProblem, Status: 409, Title: "Approval does not match", Retryable: false,
		Meaning:    "the approval named is for another selection, digest or action, or was used already: an approval is single-use and never valid for a different action on the same targets",
		Recovery:   "get an approval of this exact selection and action",
		NextAction: "Do not reuse approvals. Ask the user to approve this exact selection and action."},
	{Code: string(ProblemApprovalExpired), Kind: KindProblem, Status: 410, Title: "Approval expired", Retryable: false,
		Meaning:    "the approval's short validity has passed",
		Recovery:   "ask the user to approve again",
		NextAction: "Ask the user to approve the selection again, then commit."},
	{Code: string(ProblemReviewAccessDenied), Kind: KindProblem, Status: 403, Title: "Review page access denied", Retryable: false,
		Meaning:    "the review page serves loopback clients on a loopback host name, or anyone presenting the configured review token; this request was neither",
		Recovery:   "open the page on the machine airlock runs on (127.0.0.1), or with the token the operator configured",
		NextAction: "Do not retry. Ask the operator to open the review page themselves."},
	{Code: string(ProblemReviewFormInvalid), Kind: KindProblem, Status: 403, Title: "Review form not accepted", Retryable: false,
		Meaning:    "the decision did not come from the review page airlock served to this browser: its anti-forgery token or origin is missing or wrong",
		Recovery:   "reload the selection's review page and decide from it",
		NextAction: "Do not retry. Ask the operator to reload the review page and decide from it."},
	{Code: string(ProblemInvalidToken), Kind: KindProblem, Status: 401, Title: "Access token not accepted", Retryable: false,
		Meaning:    "the HTTP transport requires a bearer token: the configured static token, or an OAuth access token of the configured issuer for this server, unexpired and signed by a key the issuer publishes; the request had none or one that failed a check (detail says which)",
		Recovery:   "send the static token, or get a new access token for this server (the WWW-Authenticate header's resource_metadata names the authorization server), as Authorization: Bearer",
		NextAction: "Do not retry with the same token. The MCP client must obtain a new access token for this server, then connect again."},
	{Code: string(ProblemInsufficientScope), Kind: KindProblem, Status: 403, Title: "Scope too small for this tool", Retryable: false,
		Meaning:    "the access token's scopes do not include the tool called: airlock:read gives the read tools, airlock:write adds preview_selection and commit_bulk_action",
		Recovery:   "use a token with the scope named in the WWW-Authenticate header, or only the tools tools/list offers",
		NextAction: "Do not retry this tool with the same token. Use only the tools that tools/list offers, or ask the user for a token with the scope named in the answer."},
	{Code: string(ProblemPrincipalNotAllowed), Kind: KindProblem, Status: 403, Title: "Action restricted to other principals", Retryable: false,
		Meaning:    "the action's configuration restricts who may preview and commit it to named groups or scopes, and the authenticated principal holds none of them",
		Recovery:   "someone holding one of the action's groups or scopes must preview and commit it",
		NextAction: "Do not retry. Tell the user this action is restricted to other people; someone allowed to run it must preview and commit it."},
	{Code: string(ProblemApprovalByRequester), Kind: KindProblem, Status: 403, Title: "Approver asked for the write", Retryable: false,
		Meaning:    "the action's approval policy wants four eyes: the principal who previewed the selection cannot approve it",
		Recovery:   "another principal approves it: another person through their own MCP client, or an operator (airlock approve, the review page)",
		NextAction: "Do not retry as the same user. Ask another person to approve this selection, then commit again."},
	{Code: string(ProblemApproverNotAllowed), Kind: KindProblem, Status: 403, Title: "Approver not allowed", Retryable: false,
		Meaning:    "the action's approval policy restricts who may approve to named groups or scopes, and the principal deciding holds none of them",
		Recovery:   "someone holding one of the policy's approver groups or scopes approves it",
		NextAction: "Do not retry as the same user. Ask someone allowed to approve this action to approve the selection, then commit again."},
	{Code: string(ProblemClientApprovalMissing), Kind: KindProblem, Status: 403, Title: "The client cannot ask the user", Retryable: false,
		Meaning:    "the action requires approval through the MCP client, and the client could not put the request to the user: it cannot show one (no elicitation), or the request it declared it could show was not delivered or not answered in time; airlock never answers yes on a person's behalf",
		Recovery:   "an operator approves it outside the conversation: airlock approve SELECTION_ID or the review page",
		NextAction: "Tell the user this commit needs approval and their client could not ask them; ask an operator to run airlock approve with the selection_id, then commit again."},
	{Code: string(ProblemElicitationForged), Kind: KindProblem, Status: 400, Title: "Approval state not issued by airlock", Retryable: false,
		Meaning:    "the approval round trip's state failed its integrity check: it was altered or made up, belongs to another selection, or is answered by another principal than the one asked",
		Recovery:   "commit again without a state to be asked properly",
		NextAction: "Call commit_bulk_action again with the same arguments and no request state; airlock will ask the user."},
	{Code: string(ProblemElicitationMisrouted), Kind: KindProblem, Status: 421, Title: "The approval answer reached another replica", Retryable: false,
		Meaning:    "the client answered airlock's approval request (elicitation/create, protocol versions before 2026-07-28), but the answer reached another airlock replica than the one that asked: the load balancer does not route this client's session by its Mcp-Session-Id header, which those protocol versions need; nothing was approved or written",
		Recovery:   "the operator routes clients of protocol versions before 2026-07-28 by the Mcp-Session-Id header (sticky sessions), the client moves to protocol 2026-07-28 (which needs none), or an operator approves with airlock approve SELECTION_ID",
		NextAction: "Do not retry unchanged. Tell the user their approval reached another airlock replica than the one that asked; ask an operator to enable sticky sessions by the Mcp-Session-Id header, or to run airlock approve with the selection_id, then commit again."},
	{Code: string(ProblemElicitationReplayed), Kind: KindProblem, Status: 409, Title: "Approval state already used", Retryable: false,
		Meaning:    "the approval round trip's state was answered already; a decision is never replayed",
		Recovery:   "commit again to be asked again",
		NextAction: "Call commit_bulk_action again with the same arguments and no request state; airlock will ask the user again."},

	{Code: string(ProblemCompensationUnavailable), Kind: KindProblem, Status: 409, Title: "No compensation possible", Retryable: false,
		Meaning:    "the operation cannot be compensated: its action has no configured compensation, it is still running or a dry run, or nothing succeeded",
		Recovery:   "read the operation; an operator may configure a compensating action",
		NextAction: "Do not retry. Read the operation with get_operation and tell the user why it cannot be undone automatically."},

	{Code: string(ProblemTokenClientRejected), Kind: KindProblem, Status: 502, Title: "Authorization server refused airlock's client", Retryable: false,
		Meaning:    "the authorization server refused the OAuth client credentials in airlock's configuration (invalid_client, unauthorized_client, or 401): the client id or secret is wrong, expired or revoked, or the client may not use the client credentials grant; nothing reached the API",
		Recovery:   "stop; an operator fixes the client id or secret in airlock's configuration, or the client's registration at the authorization server",
		NextAction: "Stop and tell the user that airlock could not get an access token: the authorization server refused its client credentials. Retrying will not help; an operator must fix the client id or secret."},
	{Code: string(ProblemTokenRequestRejected), Kind: KindProblem, Status: 502, Title: "Authorization server refused the token request", Retryable: false,
		Meaning:    "the authorization server accepted airlock's client but refused what it asked for (invalid_scope, invalid_target, invalid_request or another 4xx): the scopes, audience or resource in airlock's configuration are not granted to the client; nothing reached the API",
		Recovery:   "stop; an operator fixes the scopes, audience or resource in airlock's configuration, or grants them to the client at the authorization server",
		NextAction: "Stop and tell the user that airlock could not get an access token: the authorization server refused the scopes or resource it asked for. Retrying will not help; an operator must fix the configuration."},
	{Code: string(ProblemTokenEndpointFailed), Kind: KindProblem, Status: 502, Title: "Authorization server failed", Retryable: true,
		Meaning:    "the authorization server failed to issue an access token (a 5xx, a 429 or another unexpected status): the fault is the authorization server's, not airlock's configuration; nothing reached the API",
		Recovery:   "wait retry_after_seconds, then call again; report it to the authorization server's operator if it persists",
		NextAction: "Wait {retry_after_seconds} seconds, then call the tool again with the same arguments. If it keeps failing, stop and report the request_id to an operator."},
	{Code: string(ProblemTokenEndpointTimeout), Kind: KindProblem, Status: 504, Title: "Authorization server timed out", Retryable: true,
		Meaning:    "the authorization server did not answer the token request within the upstream's timeout; nothing reached the API",
		Recovery:   "wait, then call again; an operator checks the authorization server if it persists",
		NextAction: "Wait {retry_after_seconds} seconds, then call the tool again with the same arguments. If it keeps failing, stop and report the request_id to an operator."},
	{Code: string(ProblemTokenEndpointUnreachable), Kind: KindProblem, Status: 502, Title: "Authorization server unreachable", Retryable: true,
		Meaning:    "the connection to the authorization server's token endpoint failed (refused, DNS, TLS); nothing reached the API",
		Recovery:   "wait, then call again; an operator checks token_url and the network if it persists",
		NextAction: "Wait {retry_after_seconds} seconds, then call the tool again. If it keeps failing, stop and report the request_id to an operator: the token endpoint may be misconfigured."},
	{Code: string(ProblemTokenResponseInvalid), Kind: KindProblem, Status: 502, Title: "Token response not understood", Retryable: false,
		Meaning:    "the token endpoint answered with a success status but not with a usable token (not JSON, no access_token, or a token type other than Bearer): token_url may point at something other than a token endpoint; nothing reached the API",
		Recovery:   "stop; an operator checks token_url in airlock's configuration and the authorization server",
		NextAction: "Stop and report the request_id to an operator: the token endpoint did not answer with an access token airlock can use."},

	// Blockers.
	{Code: string(BlockerAmbiguous), Kind: KindBlocker,
		Message:  "records have a decision field missing or unreadable; they are neither in nor out",
		Meaning:  "count records could not be classified (a filter, exclusion, precondition or effect field is missing or unreadable)",
		Recovery: "exclude them with an explicit rule, fix the upstream or the contract, or name the intended ids"},
	{Code: string(BlockerMaxTargets), Kind: KindBlocker,
		Message:  "the selection has more members than the action's max_targets",
		Meaning:  "count members exceed limit (max_targets, a guard, never an authorization)",
		Recovery: "narrow the filter or add exclusions"},

	// Field errors.
	{Code: string(FieldRequired), Kind: KindFieldError, Message: "this field is required", Meaning: "a required argument is missing", Recovery: "provide it"},
	{Code: string(FieldType), Kind: KindFieldError, Message: "this field has the wrong type", Meaning: "the value has the wrong JSON type", Recovery: "send the type shown in the example"},
	{Code: string(FieldUnknownArgument), Kind: KindFieldError, Message: "this argument is not accepted by the tool", Meaning: "the tool has no such argument", Recovery: "remove it"},
	{Code: string(FieldUnknownResource), Kind: KindFieldError, Message: "no resource with this name is configured", Meaning: "the resource is not in the configuration", Recovery: "call describe_resources and use one of its names"},
	{Code: string(FieldUnknownFilter), Kind: KindFieldError, Message: "this filter is not declared for the resource", Meaning: "the resource does not declare the filter", Recovery: "use a filter listed by describe_resources"},
	{Code: string(FieldUnknownField), Kind: KindFieldError, Message: "this field is not declared for the resource", Meaning: "the resource does not declare the field", Recovery: "use a field listed by describe_resources"},
	{Code: string(FieldSensitive), Kind: KindFieldError, Message: "this field is sensitive and never leaves airlock", Meaning: "the field is marked sensitive in the configuration", Recovery: "remove it"},
	{Code: string(FieldSensitiveQuery), Kind: KindFieldError, Message: "this field is sensitive: airlock answers no query whose counts or membership would reveal its values", Meaning: "a filter, exclusion rule or group names a field marked sensitive (and not queryable) in the configuration", Recovery: "remove the condition on it; an operator may mark the field queryable"},
	{Code: string(FieldOutOfRange), Kind: KindFieldError, Message: "this value is out of range", Meaning: "the number is below the minimum or above the maximum", Recovery: "use a value within the range in the example"},
	{Code: string(FieldOverCap), Kind: KindFieldError, Message: "this budget exceeds the configured hard cap", Meaning: "the budget is above the cap from the configuration", Recovery: "use at most the cap (describe_resources lists it)"},
	{Code: string(FieldEnum), Kind: KindFieldError, Message: "this value is not one of the allowed values", Meaning: "the value is not in the allowed set", Recovery: "use one of the allowed values"},
	{Code: string(FieldFormat), Kind: KindFieldError, Message: "this value does not have the expected format", Meaning: "the value does not match the expected format", Recovery: "follow the example"},
	{Code: string(FieldCursorTampered), Kind: KindFieldError, Message: "this cursor was not issued by airlock or was altered", Meaning: "the cursor failed its integrity check", Recovery: "use the cursor exactly as returned, or start without one"},
	{Code: string(FieldCursorMismatch), Kind: KindFieldError, Message: "this cursor belongs to another query", Meaning: "the cursor was issued for other arguments", Recovery: "send the same resource, filter, fields and group_by as the call that returned the cursor"},
	{Code: string(FieldInvalid), Kind: KindFieldError, Message: "this value is not valid here", Meaning: "the value breaks a rule of the tool", Recovery: "follow the example"},
	{Code: string(FieldUpstreamRejected), Kind: KindFieldError, Message: "the upstream rejected the value sent for this field", Meaning: "the upstream named this field in its validation errors", Recovery: "change the value (see describe_resources for the field's type and the action's parameters)"},
	{Code: string(FieldUnknownAction), Kind: KindFieldError, Message: "no action with this type is configured for the resource", Meaning: "the action type is not in the configuration", Recovery: "call describe_resources and use one of the resource's actions"},
	{Code: string(FieldPartitionRequired), Kind: KindFieldError, Message: "this resource is read one partition at a time: give this filter one value", Meaning: "the resource's list is a keyed query (a DynamoDB Query) that reads the one partition this filter names", Recovery: "give the filter one value (describe_resources marks it required); to search across partitions, use a resource that scans"},
	{Code: string(FieldOneSortCondition), Kind: KindFieldError, Message: "the sort key takes one condition per search (a gte and an lte filter together make one, a range): give only one of its filters", Meaning: "a keyed query (a DynamoDB Query) takes at most one condition on its sort key: one filter, or a lower and an upper bound given inclusively", Recovery: "keep one of the sort key's filters and search again"},
}

var byCode = func() map[string]Code {
	m := make(map[string]Code, len(registry))
	for _, c := range registry {
		if _, dup := m[c.Code]; dup {
			panic("envelope: duplicate code " + c.Code)
		}
		m[c.Code] = c
	}
	return m
}()

// Lookup returns the registered code.
func Lookup[C ~string](code C) (Code, bool) {
	c, ok := byCode[string(code)]
	return c, ok
}

// Codes returns a copy of the registry, sorted by kind then code.
func Codes() []Code {
	out := append([]Code(nil), registry...)
	order := map[Kind]int{KindReason: 0, KindWarning: 1, KindProblem: 2, KindBlocker: 3, KindFieldError: 4}
	sort.SliceStable(out, func(i, j int) bool {
		if order[out[i].Kind] != order[out[j].Kind] {
			return order[out[i].Kind] < order[out[j].Kind]
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// anyCode is every kind of code; its type says its kind.
type anyCode interface {
	ReasonCode | WarningCode | ProblemCode | BlockerCode | FieldCode
}

func kindOf[C anyCode](code C) Kind {
	switch any(code).(type) {
	case ReasonCode:
		return KindReason
	case WarningCode:
		return KindWarning
	case ProblemCode:
		return KindProblem
	case BlockerCode:
		return KindBlocker
	}
	return KindFieldError
}

// mustLookup returns the registered code of code's kind, and panics on an
// unregistered one: a typo is a bug, not a runtime condition.
func mustLookup[C anyCode](code C) Code {
	kind := kindOf(code)
	c, ok := byCode[string(code)]
	if !ok || c.Kind != kind {
		panic("envelope: unregistered " + string(kind) + " code " + string(code))
	}
	return c
}

// NewReason returns a reason with the code's fixed message. It panics on an
// unregistered code: a typo is a bug, not a runtime condition.
func NewReason(code ReasonCode) Reason {
	return Reason{Code: code, Message: mustLookup(code).Message}
}

// NewBlocker returns a blocker with the code's fixed message. A blocker
// travels as a reason (a selection's blockers are its scan's incomplete
// reasons and these).
func NewBlocker(code BlockerCode) Reason {
	return Reason{Code: ReasonCode(code), Message: mustLookup(code).Message}
}

// NewWarning returns a warning with the code's fixed message.
func NewWarning(code WarningCode, source string) Warning {
	return Warning{Code: code, Message: mustLookup(code).Message, Source: source}
}
