package upstreams

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// PocketBaseAccounts is how many accounts StartPocketBase seeds.
const PocketBaseAccounts = 2500

// PocketBase superuser used by the harness and, through its token, by
// airlock.
const (
	pbEmail    = "interop@example.com"
	pbPassword = "interop-password-1"
	pbBatch    = 250
)

// PocketBase is a running PocketBase v0.36.8 (interop/pocketbase, an
// unmodified server) with an "accounts" base collection whose list, view
// and update rules are superuser-only. Token is a superuser token, sent as
// the whole Authorization header value.
type PocketBase struct {
	URL   string
	Token string
}

var pbBuild struct {
	once sync.Once
	dir  string
	bin  string
	skip string // a missing prerequisite (no go, no module download)
	err  error  // a failed build
}

// pocketBaseBinary builds interop/pocketbase once per test binary (go's
// build cache makes later builds cheap) and returns its path.
func pocketBaseBinary(t testing.TB) string {
	t.Helper()
	pbBuild.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			pbBuild.skip = "go is not on PATH"
			return
		}
		src := filepath.Join(interopDir(t), "pocketbase")
		env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		// Listing the dependencies downloads them: a failure here is the
		// network or the module proxy, not PocketBase.
		// Not the first test's context: the build serves every test.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		list := exec.CommandContext(ctx, goTool, "list", "-deps", ".")
		list.Dir, list.Env, list.Stderr = src, env, &stderr
		if err := list.Run(); err != nil {
			pbBuild.skip = fmt.Sprintf("the PocketBase module could not be downloaded (%v): %s", err, truncate(stderr.Bytes(), 1500))
			return
		}
		pbBuild.dir, err = os.MkdirTemp("", "airlock-pocketbase-")
		if err != nil {
			pbBuild.err = fmt.Errorf("make a build directory: %w", err)
			return
		}
		bin := filepath.Join(pbBuild.dir, "pocketbase")
		started := time.Now()
		build := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".")
		build.Dir, build.Env = src, env
		if out, err := build.CombinedOutput(); err != nil {
			pbBuild.err = fmt.Errorf("go build interop/pocketbase: %w\n%s", err, out)
			return
		}
		pbBuild.bin = bin
		t.Logf("PocketBase v0.36.8: built in %.1fs", time.Since(started).Seconds())
	})
	switch {
	case pbBuild.skip != "":
		missing(t, "%s", pbBuild.skip)
	case pbBuild.err != nil:
		t.Fatal(pbBuild.err)
	}
	return pbBuild.bin
}

// Cleanup removes what the package built for this test binary (the
// PocketBase executable). Call it from TestMain after m.Run.
func Cleanup() {
	if pbBuild.dir != "" {
		_ = os.RemoveAll(pbBuild.dir)
	}
}

// StartPocketBase builds PocketBase (once per test binary), creates a
// superuser, starts the server on a free loopback port with its data in the
// test's temp dir, creates the accounts collection through the API and
// seeds it through the batch API. It stops the server when the test ends.
func StartPocketBase(t testing.TB) *PocketBase {
	t.Helper()
	Enabled(t)
	bin := pocketBaseBinary(t)
	started := time.Now()
	data := filepath.Join(t.TempDir(), "pb_data")
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "superuser", "upsert", pbEmail, pbPassword, "--dir", data, "--dev=false").CombinedOutput(); err != nil {
		t.Fatalf("pocketbase superuser upsert: %v\n%s", err, out)
	}
	base, _ := startProcess(t, "pocketbase", filepath.Dir(data), func(port int) []string {
		return []string{bin, "serve", "--http", fmt.Sprintf("127.0.0.1:%d", port), "--dir", data, "--dev=false"}
	}, answersOK("/api/health"))
	pb := &PocketBase{URL: base}
	pb.Token = pb.authenticate(t)
	pb.createAccounts(t)
	batch := pb.seed(t, seedPocketBaseAccounts(PocketBaseAccounts))
	if n := len(pb.Accounts(t)); n != PocketBaseAccounts {
		t.Fatalf("PocketBase holds %d accounts, seeded %d", n, PocketBaseAccounts)
	}
	t.Logf("PocketBase v0.36.8: started and seeded %d accounts (%s) in %.1fs at %s", PocketBaseAccounts, batch, time.Since(started).Seconds(), base)
	return pb
}

// Get sends GET pathAndQuery to PocketBase with the superuser token, or
// without any credential when anonymous is set.
func (pb *PocketBase) Get(t testing.TB, pathAndQuery string, anonymous bool) Response {
	t.Helper()
	if anonymous {
		return get(t, pb.URL+pathAndQuery, nil)
	}
	return get(t, pb.URL+pathAndQuery, pb.header())
}

func (pb *PocketBase) header() http.Header {
	return http.Header{"Authorization": {pb.Token}}
}

func (pb *PocketBase) authenticate(t testing.TB) string {
	t.Helper()
	_, b, err := call(t.Context(), http.MethodPost, pb.URL+"/api/collections/_superusers/auth-with-password", nil,
		map[string]any{"identity": pbEmail, "password": pbPassword}, http.StatusOK)
	if err != nil {
		t.Fatalf("PocketBase superuser authentication: %v", err)
	}
	var res struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &res); err != nil || res.Token == "" {
		t.Fatalf("PocketBase authentication answered no token: %v: %s", err, truncate(b, 300))
	}
	return res.Token
}

// createAccounts creates the collection as its admin UI would: text
// fields, a number, a json field and the created/updated autodates.
func (pb *PocketBase) createAccounts(t testing.TB) {
	t.Helper()
	text := func(name string) map[string]any { return map[string]any{"name": name, "type": "text"} }
	coll := map[string]any{
		"name": "accounts",
		"type": "base",
		"fields": []any{
			text("name"), text("status"), text("team"), text("owner"), text("email"),
			map[string]any{"name": "version", "type": "number", "onlyInt": true},
			map[string]any{"name": "tags", "type": "json"},
			map[string]any{"name": "created", "type": "autodate", "onCreate": true},
			map[string]any{"name": "updated", "type": "autodate", "onCreate": true, "onUpdate": true},
		},
	}
	if _, _, err := call(t.Context(), http.MethodPost, pb.URL+"/api/collections", pb.header(), coll, http.StatusOK); err != nil {
		t.Fatalf("create the PocketBase accounts collection: %v", err)
	}
}

// seed inserts the records through the batch API, enabling it first; when
// the server refuses batches it inserts them one by one, eight at a time.
// It says which way it took.
func (pb *PocketBase) seed(t testing.TB, recs []map[string]any) string {
	t.Helper()
	ctx := t.Context()
	settings := map[string]any{"batch": map[string]any{"enabled": true, "maxRequests": pbBatch, "timeout": 30}}
	if _, _, err := call(ctx, http.MethodPatch, pb.URL+"/api/settings", pb.header(), settings, http.StatusOK); err == nil {
		for start := 0; start < len(recs); start += pbBatch {
			var reqs []any
			for _, r := range recs[start:min(start+pbBatch, len(recs))] {
				reqs = append(reqs, map[string]any{"method": http.MethodPost, "url": "/api/collections/accounts/records", "body": r})
			}
			_, _, err := call(ctx, http.MethodPost, pb.URL+"/api/batch", pb.header(), map[string]any{"requests": reqs}, http.StatusOK)
			refused := start == 0 && (isHTTPStatus(err, http.StatusForbidden) || isHTTPStatus(err, http.StatusBadRequest))
			switch {
			case refused:
				start = len(recs) // fall back to single inserts
			case err != nil:
				t.Fatalf("seed PocketBase through its batch API: %v", err)
			case start+pbBatch >= len(recs):
				return fmt.Sprintf("batch API, %d per batch", pbBatch)
			}
		}
	}
	err := parallel(len(recs), 8, func(i int) error {
		_, _, err := call(ctx, http.MethodPost, pb.URL+"/api/collections/accounts/records", pb.header(), recs[i], http.StatusOK)
		return err
	})
	if err != nil {
		t.Fatalf("seed PocketBase one record at a time: %v", err)
	}
	return "one request per record"
}

// Accounts is every account PocketBase holds, read in pages of 1000 (its
// maximum) sorted by id; the pages must add up to the total it reports.
func (pb *PocketBase) Accounts(t testing.TB) []Record {
	t.Helper()
	var all []Record
	for page := 1; ; page++ {
		q := url.Values{"page": {fmt.Sprint(page)}, "perPage": {"1000"}, "sort": {"id"}}
		_, b, err := call(t.Context(), http.MethodGet, pb.URL+"/api/collections/accounts/records?"+q.Encode(), pb.header(), nil, http.StatusOK)
		if err != nil {
			t.Fatalf("read PocketBase's accounts: %v", err)
		}
		var res struct {
			Items      []Record `json:"items"`
			TotalItems int      `json:"totalItems"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("decode PocketBase's accounts: %v", err)
		}
		all = append(all, res.Items...)
		if len(res.Items) == 0 || len(all) >= res.TotalItems {
			if len(all) != res.TotalItems {
				t.Fatalf("PocketBase's pages hold %d accounts, its total says %d", len(all), res.TotalItems)
			}
			return all
		}
	}
}

// seedPocketBaseAccounts adapts the json-server accounts to PocketBase:
// 15-character ids of [a-z0-9], and no null or missing owner (PocketBase
// stores a missing text as ""), and no updated_at (the autodate writes it).
func seedPocketBaseAccounts(n int) []map[string]any {
	recs := seedAccounts(n)
	for i, r := range recs {
		r["id"] = fmt.Sprintf("acc%012d", i+1)
		if o, _ := r["owner"].(string); o == "" {
			delete(r, "owner")
		}
		delete(r, "updated_at")
	}
	return recs
}
