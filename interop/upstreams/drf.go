package upstreams

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the DRF server's SQLite file, read for truth
)

// drfPython is Debian's Python, for which Debian's python3-django (3.2),
// python3-djangorestframework (3.14) and python3-django-filters (23.1) are
// installed. The python3 on PATH may be another build without them.
const drfPython = "/usr/bin/python3"

// DRF is a running Django REST Framework 3.14 server (interop/drf) holding
// the seeded accounts in a SQLite file in the test's temp dir. It serves
// them three ways, with the same django-filter FilterSet and no credential:
//
//	/api/page/accounts/    PageNumberPagination: ?page=&page_size= (max 1000, default 100),
//	                       {"count", "next", "previous", "results"}; a page past the end is 404 {"detail": "Invalid page."}
//	/api/offset/accounts/  LimitOffsetPagination: ?limit= (max 1000, default 100)&offset=,
//	                       {"count", "next", "previous", "results"}
//	/api/cursor/accounts/  CursorPagination by id: ?page_size= (max 1000, default 100) and an opaque
//	                       ?cursor= inside "next"; {"next", "previous", "results"}, no count;
//	                       a malformed cursor is 404 {"detail": "Invalid cursor"}
//
// A size above the maximum is silently capped. The filters: status, team,
// owner (exact), status__in and team__in (a comma list, split on every
// comma, escaped or not; of a repeated parameter only the last counts),
// owner__isnull (true/false/1/0). An empty value, an owner__isnull it
// cannot read or an unknown parameter filters nothing. Under each prefix,
// accounts/<id>/ answers GET
// and PATCH (status, team and owner are writable; every PATCH bumps version
// and sets updated_at); a missing id is 404 {"detail": "Not found."} and
// a bad value 400 {"field": ["message"]}.
//
// An account is {"id": 1, "name", "status", "team", "owner": null|""|"x",
// "version": 3, "updated_at": "2026-01-05T09:37:00Z"}.
type DRF struct {
	URL    string
	DBPath string
}

var drfCheck struct {
	once     sync.Once
	skip     string
	versions string
}

// requireDRF checks once per test binary that Debian's Python imports
// Django, DRF and django-filter.
func requireDRF(t testing.TB) string {
	t.Helper()
	drfCheck.once.Do(func() {
		if _, err := os.Stat(drfPython); err != nil {
			drfCheck.skip = fmt.Sprintf("%s is missing", drfPython)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, drfPython, "-E", "-s", "-c",
			"import django, rest_framework, django_filters; print('Django %s, DRF %s, django-filter %s' % (django.get_version(), rest_framework.VERSION, django_filters.__version__))").CombinedOutput()
		if err != nil {
			drfCheck.skip = fmt.Sprintf("%s cannot import django, rest_framework and django_filters (%v: %s); apt-get install python3-django python3-djangorestframework python3-django-filters",
				drfPython, err, strings.TrimSpace(string(truncate(out, 500))))
			return
		}
		drfCheck.versions = strings.TrimSpace(string(out))
	})
	if drfCheck.skip != "" {
		missing(t, "%s", drfCheck.skip)
	}
	return drfCheck.versions
}

// StartDRF starts the DRF server with DefaultAccounts accounts.
func StartDRF(t testing.TB) *DRF {
	t.Helper()
	return StartDRFWith(t, SeedOptions{})
}

// StartDRFWith starts the DRF server on a free loopback port with the
// accounts the options draw, and stops it when the test ends. It skips
// (or fails under AIRLOCK_REQUIRE_INTEROP=1) when Debian's Python lacks
// Django, DRF or django-filter.
func StartDRFWith(t testing.TB, opts SeedOptions) *DRF {
	t.Helper()
	Enabled(t)
	versions := requireDRF(t)
	opts = opts.withDefaults()
	started := time.Now()
	dir := t.TempDir()
	seed := filepath.Join(dir, "accounts.json")
	rows := []map[string]any{}
	for _, a := range seedRealAccounts(opts) {
		rows = append(rows, map[string]any{
			"id": a.ID, "name": a.Name, "status": a.Status, "team": a.Team, "owner": a.ownerValue(),
			"version": a.Version, "updated_at": a.UpdatedAt.Format(time.RFC3339),
		})
	}
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seed, b, 0o600); err != nil {
		t.Fatalf("write the DRF seed: %v", err)
	}
	serve := filepath.Join(interopDir(t), "drf", "serve.py")
	var db string
	// -B: no __pycache__ in the checkout; -E -s: no PYTHON* variables or
	// user site-packages, only Debian's modules.
	base, _ := startProcess(t, "drf", dir, func(port int) []string {
		db = filepath.Join(dir, fmt.Sprintf("accounts-%d.sqlite3", port))
		return []string{drfPython, "-B", "-E", "-s", serve, "--db", db, "--seed", seed, "--port", strconv.Itoa(port)}
	}, answersOK("/api/page/accounts/?page_size=1"))
	d := &DRF{URL: base, DBPath: db}
	if n := len(d.Accounts(t)); n != opts.Accounts {
		t.Fatalf("the DRF server holds %d accounts, seeded %d", n, opts.Accounts)
	}
	t.Logf("DRF server (%s): started and seeded %d accounts in %.1fs at %s", versions, opts.Accounts, time.Since(started).Seconds(), base)
	return d
}

// Get sends GET pathAndQuery to the server.
func (d *DRF) Get(t testing.TB, pathAndQuery string) Response {
	t.Helper()
	return get(t, d.URL+pathAndQuery, nil)
}

// Patch sends PATCH /api/page/accounts/<id>/ with fields as its JSON body
// and returns whatever the server answers.
func (d *DRF) Patch(t testing.TB, id int, fields map[string]any) Response {
	t.Helper()
	return send(t, http.MethodPatch, fmt.Sprintf("%s/api/page/accounts/%d/", d.URL, id), fields)
}

// DRFFaults are the DRF server's fault knobs.
type DRFFaults struct {
	// ExpireCursors makes the cursor route refuse every cursor issued
	// before this call (each call that sets it starts anew), and, with
	// MaxAge, every cursor older than MaxAge. Cursors issued later work.
	ExpireCursors bool
	// ExpiredStatus is how an expired cursor is answered: 410 (the
	// default) with {"detail": "cursor expired"}, or 400 with
	// {"detail": "Cursor expired"}.
	ExpiredStatus int
	// MaxAge, when positive, also expires cursors older than it (measured
	// by the server's clock); a nanosecond expires every cursor at its
	// first use.
	MaxAge time.Duration
}

// SetFaults sets every knob at once; DRFFaults{} turns them off. By hand:
// POST /api/_faults/ {"expire_cursors": true, "expired_status": 410 or
// 400, "max_age_seconds": seconds or null}; GET /api/_faults/ answers them.
func (d *DRF) SetFaults(t testing.TB, f DRFFaults) {
	t.Helper()
	status := f.ExpiredStatus
	if status == 0 {
		status = http.StatusGone
	}
	body := map[string]any{"expire_cursors": f.ExpireCursors, "expired_status": status, "max_age_seconds": nil}
	if f.MaxAge > 0 {
		body["max_age_seconds"] = f.MaxAge.Seconds()
	}
	if _, _, err := call(t.Context(), http.MethodPost, d.URL+"/api/_faults/", nil, body, http.StatusOK); err != nil {
		t.Fatalf("set the DRF server's faults: %v", err)
	}
}

// Accounts is every account in the server's SQLite file, by id, as the
// API would serve it (numbers as float64).
func (d *DRF) Accounts(t testing.TB) []Record {
	t.Helper()
	return d.query(t, "")
}

// Account is one account from the SQLite file (false when there is none).
func (d *DRF) Account(t testing.TB, id int) (Record, bool) {
	t.Helper()
	recs := d.query(t, "WHERE id = ?", id)
	if len(recs) == 0 {
		return nil, false
	}
	return recs[0], true
}

// query reads accounts straight from the SQLite file, sharing nothing with
// the server but the file.
func (d *DRF) query(t testing.TB, where string, args ...any) []Record {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+d.DBPath+"?_pragma=busy_timeout(30000)")
	if err != nil {
		t.Fatalf("open the DRF database: %v", err)
	}
	defer db.Close()
	// updated_at as text: Django stores "2026-01-05 09:37:00[.ffffff]"
	// in UTC, which the API writes as "2026-01-05T09:37:00[.ffffff]Z".
	rows, err := db.QueryContext(t.Context(), `SELECT id, name, status, team, owner, version, CAST(updated_at AS TEXT)
		FROM accounts_account `+where+` ORDER BY id`, args...)
	if err != nil {
		t.Fatalf("read the DRF database: %v", err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		var (
			id, version               int64
			name, status, team, stamp string
			owner                     sql.NullString
		)
		if err := rows.Scan(&id, &name, &status, &team, &owner, &version, &stamp); err != nil {
			t.Fatalf("read the DRF database: %v", err)
		}
		r := Record{"id": float64(id), "name": name, "status": status, "team": team, "owner": nil,
			"version": float64(version), "updated_at": strings.Replace(stamp, " ", "T", 1) + "Z"}
		if owner.Valid {
			r["owner"] = owner.String
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read the DRF database: %v", err)
	}
	return out
}
