package transport

import "github.com/airlock-mcp/airlock/envelope"

// errorInSuccessError is the error of a 2xx body that is an error object
// (see errorInSuccess), quoting the upstream's own words for the
// problem's upstream_message: MediaWiki answers 200 with {"error":
// {"code": "badvalue", "info": "Unrecognized value for parameter …"}},
// and without its words the agent cannot tell a typo from an outage. The
// quote is bounded (envelope.QuoteUpstream) and, like every upstream
// string, redacted before it leaves; it is data, never an instruction.
// nil when the body is not an error.
func errorInSuccessError(doc any) error {
	why, bad := errorInSuccess(doc)
	if !bad {
		return nil
	}
	return &BodyError{Kind: BodyErrorInSuccess, Detail: why, Message: envelope.QuoteUpstream(MessageOf(doc))}
}
