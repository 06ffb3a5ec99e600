package selection_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// TestApprovalRequirement_Thresholds: each threshold applies the mode only
// when it triggers; a policy without thresholds always applies it; a group
// value never approved before asks for review even under mode none.
func TestApprovalRequirement_Thresholds(t *testing.T) {
	t.Parallel()
	st := openTestStore(t)
	e := &selection.Engine{Store: st, Clock: upstream.WallClock}
	ctx := context.Background()
	sel := func(env string, members int, regions ...string) *selection.Selection {
		s := &selection.Selection{ID: "sel_x", Environment: env, Summary: selection.Summary{Members: members, Groups: map[string][]upstream.Group{}}}
		for _, r := range regions {
			s.Summary.Groups["region"] = append(s.Summary.Groups["region"], upstream.Group{Value: r, Count: 1})
		}
		return s
	}
	action := func(destructive bool, p *config.ApprovalConfig) *upstream.Action {
		return &upstream.Action{Name: "act", Config: config.ActionConfig{Destructive: destructive, Approval: p}}
	}
	for _, c := range []struct {
		name   string
		sel    *selection.Selection
		act    *upstream.Action
		mode   string
		reason string
	}{
		{"no policy", sel("prod", 5000), action(true, nil), "none", ""},
		{"no threshold: always", sel("dev", 1), action(false, &config.ApprovalConfig{Mode: "client"}), "client", "the action's policy requires approval"},
		{"under the count", sel("prod", 100), action(false, &config.ApprovalConfig{Mode: "client", AboveTargets: 100}), "none", ""},
		{"over the count", sel("prod", 101), action(false, &config.ApprovalConfig{Mode: "client", AboveTargets: 100}), "client", "101 targets, more than 100"},
		{"destructive", sel("dev", 1), action(true, &config.ApprovalConfig{Mode: "operator", Destructive: true}), "operator", "the action is destructive"},
		{"not destructive", sel("dev", 1), action(false, &config.ApprovalConfig{Mode: "operator", Destructive: true}), "none", ""},
		{"in prod", sel("prod", 1), action(false, &config.ApprovalConfig{Mode: "operator", Environments: []string{"prod"}}), "operator", "the environment is prod"},
		{"in staging", sel("staging", 1), action(false, &config.ApprovalConfig{Mode: "operator", Environments: []string{"prod"}}), "none", ""},
		{"a new region under mode none", sel("dev", 1, "eu"), action(false, &config.ApprovalConfig{Mode: "none", UnknownGroup: []string{"region"}}), "operator", `region "eu" never approved before for act`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := e.ApprovalRequirement(ctx, c.sel, c.act)
			if got.Mode != c.mode || !strings.Contains(strings.Join(got.Reasons, "; "), c.reason) {
				t.Fatalf("got %s %v, want %s %q", got.Mode, got.Reasons, c.mode, c.reason)
			}
		})
	}
}

// TestDecide_RefusesExpiredAndChangedSelections: an operator cannot approve
// a selection past its expiry, or one whose digest is not the one typed.
func TestDecide_RefusesExpiredAndChangedSelections(t *testing.T) {
	t.Parallel()
	st := openTestStore(t)
	ctx := context.Background()
	now := time.Now()
	sel := &selection.Selection{ID: "sel_old", Digest: "sha256:aa", ActionDigest: "sha256:bb", State: selection.StateReady, Committable: true,
		CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}
	if err := st.CreateSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishSelection(ctx, sel); err != nil {
		t.Fatal(err)
	}
	e := &selection.Engine{Store: st, Clock: upstream.WallClock}
	if _, p := e.Decide(ctx, selection.DecisionRequest{SelectionID: "sel_old", Decision: selection.DecisionApproved, Who: "t"}); selection.ErrorCode(p) != "SELECTION_EXPIRED" {
		t.Fatalf("expired: %+v", p)
	}
	if _, p := e.Decide(ctx, selection.DecisionRequest{SelectionID: "sel_old", Digest: "sha256:other", Decision: selection.DecisionApproved, Who: "t"}); selection.ErrorCode(p) != "DIGEST_MISMATCH" {
		t.Fatalf("changed: %+v", p)
	}
	if _, p := e.Decide(ctx, selection.DecisionRequest{SelectionID: "sel_none", Decision: selection.DecisionApproved, Who: "t"}); selection.ErrorCode(p) != "SELECTION_NOT_FOUND" {
		t.Fatalf("unknown: %+v", p)
	}
}

func regionSelection(regions ...string) *selection.Selection {
	s := &selection.Selection{ID: "sel_r", Environment: "dev", Summary: selection.Summary{Members: len(regions), Groups: map[string][]upstream.Group{}}}
	for _, r := range regions {
		s.Summary.Groups["region"] = append(s.Summary.Groups["region"], upstream.Group{Value: r, Count: 1})
	}
	return s
}

var reviewNewRegions = &upstream.Action{Name: "act", Config: config.ActionConfig{Approval: &config.ApprovalConfig{Mode: "none", UnknownGroup: []string{"region"}}}}

// TestApprovedCategories_TwoProcessesApprovingAtOnceKeepBoth: two
// processes sharing one store file approve commits in different new
// regions at the same time; afterwards every one of those regions counts
// as approved before, whichever process asks.
func TestApprovedCategories_TwoProcessesApprovingAtOnceKeepBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "airlock.db")
	engines := []*selection.Engine{
		{Store: openSQLite(t, path), Clock: upstream.WallClock},
		{Store: openSQLite(t, path), Clock: upstream.WallClock},
	}
	ctx := context.Background()
	var regions []string
	var wg sync.WaitGroup
	for i := range 20 {
		region := fmt.Sprintf("r%02d", i)
		regions = append(regions, region)
		e := engines[i%2]
		wg.Go(func() {
			if err := e.RememberCategories(ctx, regionSelection(region), reviewNewRegions); err != nil {
				t.Errorf("remember %s: %v", region, err)
			}
		})
	}
	wg.Wait()
	for i, e := range engines {
		if need := e.ApprovalRequirement(ctx, regionSelection(regions...), reviewNewRegions); need.Required() {
			t.Fatalf("process %d: every region was approved, yet %s approval is asked: %v", i, need.Mode, need.Reasons)
		}
	}
	if need := engines[0].ApprovalRequirement(ctx, regionSelection("r00", "new"), reviewNewRegions); need.Mode != selection.ApprovalOperator {
		t.Fatalf("a region never approved: %s %v", need.Mode, need.Reasons)
	}
}

// forgetfulStore cannot read or record approved group values.
type forgetfulStore struct{ selection.Store }

func (forgetfulStore) ApprovedCategories(context.Context, string, string) (map[string]bool, error) {
	return nil, errors.New("database is locked")
}

func (forgetfulStore) AddApprovedCategories(context.Context, string, string, []string) error {
	return errors.New("disk I/O error")
}

// TestApprovedCategories_AStoreFailureAsksForReviewAndIsLogged: when the
// values approved before cannot be read, the commit asks an operator (it
// never counts a value as seen for want of reading), says why, and the
// log names the cause; a failure to record them is returned.
func TestApprovedCategories_AStoreFailureAsksForReviewAndIsLogged(t *testing.T) {
	var logs bytes.Buffer
	e := &selection.Engine{Store: forgetfulStore{openTestStore(t)}, Clock: upstream.WallClock, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx := context.Background()
	need := e.ApprovalRequirement(ctx, regionSelection("eu"), reviewNewRegions)
	if need.Mode != selection.ApprovalOperator || !strings.Contains(strings.Join(need.Reasons, "; "), "the region values approved before for act could not be read") {
		t.Fatalf("an unreadable memory: %s %v; want operator approval saying why", need.Mode, need.Reasons)
	}
	if !strings.Contains(logs.String(), "database is locked") {
		t.Fatalf("the log does not name the cause:\n%s", logs.String())
	}
	if err := e.RememberCategories(ctx, regionSelection("eu"), reviewNewRegions); err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("a failed record: %v; want the store's error", err)
	}
}
