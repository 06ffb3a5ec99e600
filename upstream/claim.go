package upstream

import (
	"slices"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/upstream/dialect"
)

// Claim is the upstream's own word on how many records the query as sent
// selects: the totals each source's first page stated, summed. It is what
// the upstream says, never what airlock counted.
type Claim struct {
	Total int
	// Member is where the total was read: a body path, or a header.
	Member string
	// Pages and Items estimate the scan that would verify the claim: the
	// pages of the configured size it takes to read Total items (0 when the
	// list has no page size of its own).
	Pages, Items int
}

// Why a claim cannot be given (see Scan.Claim).
const (
	// ClaimTotalAbsent: a source's first page carried no total.
	ClaimTotalAbsent = "total_absent"
	// ClaimTotalUnreadable: a source's first page held its total in a
	// form that cannot be read (SIGNAL_UNREADABLE names it).
	ClaimTotalUnreadable = "total_unreadable"
	// ClaimTotalVsItems: a source's first page held more records than its
	// own total.
	ClaimTotalVsItems = "total_vs_items"
	// ClaimFirstPageUnread: a source's first page was not read (a budget,
	// an outage or a rate limit stopped it first).
	ClaimFirstPageUnread = "first_page_unread"
)

// TotalMember names where the resource's total is read: the header or
// the body path; "" when the resource declares none.
func (r *Resource) TotalMember() string {
	p := r.Pagination
	switch {
	case p.TotalHeader != "":
		return p.TotalHeader
	case p.Total != "":
		return p.Total
	}
	return ""
}

// LocalFilters names the filters airlock applies alone: those whose value
// cannot be sent upstream in a form the configuration declares. The
// upstream's total does not count the query as asked when there is one.
func (r *Resource) LocalFilters(filter map[string]any) []string {
	var out []string
	for name, v := range filter {
		if !r.FilterForm(name, r.Config.Filters[name], v).Sent {
			out = append(out, "filter."+name)
		}
	}
	slices.Sort(out)
	return out
}

// maxClaim is the largest total that stands as a claim: 2^53−1.
const maxClaim = 1<<53 - 1

// firstTotal is a source's first page's total as a claim: the total, or
// why it cannot stand as one.
type firstTotal struct {
	total  *int
	whyNot string
}

// firstTotalOf reads a first page's total as a claim.
func firstTotalOf(r *Resource, pg dialect.Page) firstTotal {
	member := r.TotalMember()
	switch {
	case member != "" && slices.Contains(pg.Doubts, member):
		return firstTotal{whyNot: ClaimTotalUnreadable}
	case pg.Total == nil:
		return firstTotal{whyNot: ClaimTotalAbsent}
	case *pg.Total > maxClaim:
		// Beyond what every client reads exactly (I-JSON): a count no
		// client could take as the same number.
		return firstTotal{whyNot: ClaimTotalUnreadable}
	case pg.Next.TotalUntrusted:
		return firstTotal{whyNot: ClaimTotalVsItems}
	}
	return firstTotal{total: envelope.Ptr(*pg.Total)}
}

// stopForClaim stops a source after its first page when the run reads
// claims (Budget.FirstPages) and that page stated one; a source whose
// first page stated none goes on counting.
func (s *Scan) stopForClaim(src *sourceScan) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.budget.FirstPages || src.first.total == nil {
		return false
	}
	src.status, src.claimStop = srcCutPages, true
	return true
}

// Claim returns the upstream's claim: the first-page totals of every
// source in scope, summed, or, when one of them cannot stand as a claim,
// why not (one of the Claim* signals) and the source it concerns.
func (s *Scan) Claim() (c Claim, whyNot, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked()
}

func (s *Scan) claimLocked() (c Claim, whyNot, source string) {
	c.Member = s.r.TotalMember()
	size := s.r.Pagination.PageSize
	for _, src := range s.srcs {
		switch {
		case src.status == srcOutOfScope:
			continue
		case src.pages == 0:
			return Claim{}, ClaimFirstPageUnread, src.cfg.Name
		case src.first.total == nil:
			return Claim{}, src.first.whyNot, src.cfg.Name
		}
		t := *src.first.total
		c.Total += t
		if size > 0 {
			c.Pages += max((t+size-1)/size, 1)
		}
	}
	if c.Total > maxClaim {
		return Claim{}, ClaimTotalUnreadable, ""
	}
	c.Items = c.Total
	return c, "", ""
}

// claimCutLocked reports whether the last run stopped a source after its
// first page for the claim (Budget.FirstPages) and the claim stands: what
// that source leaves unread is the claim's to verify, not a budget's cut.
func (s *Scan) claimCutLocked() bool {
	if !s.budget.FirstPages {
		return false
	}
	stopped := false
	for _, src := range s.srcs {
		stopped = stopped || (src.claimStop && src.status == srcCutPages)
	}
	if !stopped {
		return false
	}
	_, whyNot, _ := s.claimLocked()
	return whyNot == ""
}
