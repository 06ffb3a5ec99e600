package tools

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream"
)

// search_all's count argument: how the count is established.
const (
	// countVerified (the default) counts every matching record.
	countVerified = "verified"
	// countClaimed answers the count from the first page with the
	// upstream's own total, labeled as its claim, and hands out a cursor
	// that verifies it.
	countClaimed = "claimed"
)

// Claim statuses: what the records counted so far say of the claim.
const (
	claimUnverified   = "unverified"
	claimConfirmed    = "confirmed"
	claimContradicted = "contradicted"
)

// Why a claim was not given before any request (CLAIM_UNAVAILABLE's
// signal); the others come from upstream.Scan.Claim.
const (
	claimLocalFilter = "filter_applied_by_airlock"
	claimGroupBy     = "group_by"
	claimNoTotal     = "no_declared_total"
)

// upstreamClaim is the upstream's own total for the query as sent, as
// search_all hands it out: in the answer that gives it, and in every answer
// that continues its cursor, so that the count verified can be set beside
// it. It travels in the cursor, signed.
type upstreamClaim struct {
	Total int `json:"total"`
	// Member is where the total was read (a body path or a header).
	Member string `json:"member"`
	// VerifyPages and VerifyItems estimate the whole scan that verifies
	// the claim, from the total and the page size.
	VerifyPages int `json:"verify_pages,omitempty"`
	VerifyItems int `json:"verify_items"`
	// Status says what the records counted so far say of the claim:
	// unverified (not every record counted yet), confirmed (every record
	// counted, as many as claimed), contradicted (the count reached the
	// list's proven end, or passed the claim, with another number).
	Status string `json:"status"`
}

func (upstreamClaim) schema(s *jsonschema.Schema) {
	prop(s, "total").Minimum = jsonschema.Ptr(0.0)
	enum(prop(s, "status"), claimUnverified, claimConfirmed, claimContradicted)
}

func newClaim(c upstream.Claim) *upstreamClaim {
	return &upstreamClaim{Total: c.Total, Member: c.Member, VerifyPages: c.Pages, VerifyItems: c.Items, Status: claimUnverified}
}

// claimRefused says why the upstream's total cannot be the claim for this
// query before any request is made: a filter airlock applies alone (the
// upstream's total does not count the query as asked), groups (a total
// does not split), or no total in the configuration. nil: it may be.
func claimRefused(r *upstream.Resource, filter map[string]any, groupBy []string) *envelope.Warning {
	w := envelope.NewWarning(envelope.WarnClaimUnavailable, r.Name)
	switch local := r.LocalFilters(filter); {
	case len(local) > 0:
		w.Signal, w.Fields = claimLocalFilter, local
	case len(groupBy) > 0:
		w.Signal, w.Fields = claimGroupBy, append([]string(nil), groupBy...)
	case r.TotalMember() == "":
		w.Signal = claimNoTotal
	default:
		return nil
	}
	return &w
}

// claimMissing is CLAIM_UNAVAILABLE for a first page whose total cannot
// stand as the claim: the member and the page it was (not) on.
func claimMissing(r *upstream.Resource, whyNot, source string) envelope.Warning {
	if source == "" {
		source = r.Name
	}
	w := envelope.NewWarning(envelope.WarnClaimUnavailable, source)
	w.Signal = whyNot
	if whyNot != upstream.ClaimFirstPageUnread {
		w.Member, w.Page = r.TotalMember(), envelope.Ptr(1)
	}
	return w
}

// claimStatus is what the outcome says of the claim: confirmed when the
// scan counted every record and found as many; contradicted when it found
// more, or reached every source's proven end with another number;
// otherwise unverified.
func claimStatus(c *upstreamClaim, out upstream.Outcome) string {
	if out.Matched > c.Total {
		return claimContradicted
	}
	ended := len(out.Sources) > 0
	for _, src := range out.Sources {
		ended = ended && src.End == envelope.EndProven
	}
	switch {
	case out.ScanComplete && out.Matched == c.Total:
		return claimConfirmed
	case (out.ScanComplete || ended) && out.Matched != c.Total:
		return claimContradicted
	}
	return claimUnverified
}

// claimGiven reports whether the scan stopped at the upstream's claim
// (UPSTREAM_CLAIM_UNVERIFIED): the answer gives the claim as its count.
func claimGiven(out upstream.Outcome) bool {
	return slices.ContainsFunc(out.Reasons, func(rs envelope.Reason) bool { return rs.Code == envelope.UpstreamClaimUnverified })
}
