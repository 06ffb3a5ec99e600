package upstreams

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The accounts that StartDRF and StartPostGraphile seed: the same rows on
// both servers, from one seed.

// Default size and seed of the accounts both servers hold.
const (
	DefaultAccounts = 1500
	DefaultSeed     = 20261203
)

// CommaTeam is the team whose name holds a comma (and an ampersand): a
// value that a comma-joined list parameter cannot carry intact.
const CommaTeam = "R&D, Labs"

// AccountTeams are the seeded teams. About a quarter of the accounts are in
// CommaTeam, the rest evenly in the other four.
var AccountTeams = []string{"payments", "platform", "team-infra", "support", CommaTeam}

// SeedOptions choose how many accounts a server holds and the seed that
// draws them. Zero values mean DefaultAccounts and DefaultSeed.
type SeedOptions struct {
	Accounts int
	Seed     uint64
}

func (o SeedOptions) withDefaults() SeedOptions {
	if o.Accounts <= 0 {
		o.Accounts = DefaultAccounts
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	return o
}

// seedAccount is one seeded account. Owner is nil for NULL; about 16% of
// the accounts have a NULL owner and about 14% an empty one, "" (no owner,
// written another way).
type seedAccount struct {
	ID        int
	Name      string
	Status    string // active, disabled or archived
	Team      string
	Owner     *string
	Version   int
	UpdatedAt time.Time
}

// seedRealAccounts draws the accounts, ids 1..n, deterministically from
// the options. About 60% are active, 25% disabled, 15% archived.
func seedRealAccounts(o SeedOptions) []seedAccount {
	o = o.withDefaults()
	rng := rand.New(rand.NewPCG(o.Seed, 2))
	people := []string{"ada", "bea", "cyd", "dov", "eli", "fay", "gus", "hal", "ines", "jon", "kai", "lia"}
	epoch := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	out := make([]seedAccount, 0, o.Accounts)
	for i := 1; i <= o.Accounts; i++ {
		a := seedAccount{
			ID:        i,
			Name:      fmt.Sprintf("%s-%s-%04d", people[rng.IntN(len(people))], people[rng.IntN(len(people))], i),
			Status:    "active",
			Version:   1 + rng.IntN(6),
			UpdatedAt: epoch.Add(time.Duration(i) * 37 * time.Minute),
		}
		switch x := rng.IntN(100); {
		case x >= 85:
			a.Status = "archived"
		case x >= 60:
			a.Status = "disabled"
		}
		if x := rng.IntN(100); x < 24 {
			a.Team = CommaTeam
		} else {
			a.Team = AccountTeams[x%4]
		}
		switch x := rng.IntN(100); {
		case x < 16:
			// NULL
		case x < 30:
			empty := ""
			a.Owner = &empty
		default:
			owner := people[rng.IntN(len(people))] + "@example.com"
			a.Owner = &owner
		}
		out = append(out, a)
	}
	return out
}

// ownerValue is the account's owner as JSON decodes it: nil for NULL.
func (a seedAccount) ownerValue() any {
	if a.Owner == nil {
		return nil
	}
	return *a.Owner
}
