package upstreams

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's Redmine (the redmine and redmine-mysql packages, 5.0) and the
// web server it runs under (thin).
const (
	redmineRoot = "/usr/share/redmine"
	// redmineGemfileGlob is where Debian's Gemfile looks for the
	// instances' database.yml to choose the database gems: the harness's
	// Gemfile looks at its own instance instead.
	redmineGemfileGlob = `Dir['/usr/share/redmine/{config,instances/*/config}/database.yml']`
)

// Redmine's custom fields as StartRedmine creates them, by id: the
// issues' JSON lists them in this order in custom_fields, so region is at
// custom_fields.0 and team at custom_fields.1, and the list filters them as
// cf_1 and cf_2.
const (
	RedmineRegionField = 1
	RedmineTeamField   = 2
)

// DefaultRedmineIssues is how many issues StartRedmine seeds.
const DefaultRedmineIssues = 1015

// RedmineTeams are the values of the team custom field, each on about as
// many issues: names that start with each character Redmine's filters read
// as an operator (^ starts with, ! not, ~ contains, * any, = equals, $ ends
// with), one holding the | that Redmine splits a filter value at, plain
// names that a misread operator would select instead, Unicode, and "" (no
// team, as Redmine stores a cleared field). Issues without a team row at
// all (JSON null) are as many again.
var RedmineTeams = []string{"^beta", "!ops", "~core", "*star", "a|b", "=eq", "$end", "beta", "ops", "core", "équipe-ü", "チーム", ""}

// RedmineRegions are the values of the region custom field.
var RedmineRegions = []string{"eu", "us", ""}

// redmineProjects are the seeded projects: id, name, identifier, public.
var redmineProjects = []struct {
	name, identifier string
	public           bool
}{{"Platform", "platform", true}, {"Billing", "billing", true}, {"Support Desk", "support", false}, {"Ünïcode", "unicode", true}}

// Redmine is a running Redmine (Debian's redmine package under thin), over
// a MariaDB database of its own, seeded with DefaultRedmineIssues issues.
//
// Its REST API (enabled, with the administrator's API key; anonymous
// requests are refused, login_required) is what a user points airlock at:
//
//	GET /issues.json?offset=&limit= (1..100; more is read as 100)&sort=id&status_id=*&…
//	    {"issues": […], "total_count": N, "offset": O, "limit": L}; without status_id only open
//	    issues are listed. A filter is a parameter (project_id, tracker_id, status_id, cf_N,
//	    updated_on, created_on) whose value starts with an operator or is read as "=": ^ starts
//	    with, ! is not, ~ contains, * any, !* none, >= and <= compare, = equals; the rest is split
//	    at every | into values (app/models/query.rb, add_short_filter).
//	GET /issues/<id>.json -> {"issue": {…}}
//	PUT /issues/<id>.json {"issue": {…}} -> 204
//
// Issues have no version field: updated_on (whole seconds, UTC) changes with
// every write.
type Redmine struct {
	// URL is thin itself.
	URL string
	// Database is the name of the test's own MariaDB database.
	Database string
	// APIKey is the administrator's API key (header X-Redmine-API-Key).
	APIKey string
	// Version is Redmine's own version (5.0.4).
	Version string
	// Projects are the project ids, Trackers and Statuses those of
	// Redmine's default data (Bug, Feature, Support; New … Rejected).
	Projects, Trackers, Statuses []int

	mariadb string
}

var rmCheck struct {
	once            sync.Once
	skip            string
	ruby, thin      string
	mysql, dump     string
	gemfile         string
	version, others string
}

// requireRedmine checks once per test binary that ruby, thin, Debian's
// Redmine with the mysql2 gem, the mysql client and MariaDB are there, and
// skips (or fails under AIRLOCK_REQUIRE_INTEROP=1) when not.
func requireRedmine(t testing.TB) {
	t.Helper()
	rmCheck.once.Do(func() {
		const install = "apt-get install --no-install-recommends redmine redmine-mysql thin"
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		gemfile, err := os.ReadFile(filepath.Join(redmineRoot, "Gemfile"))
		if err != nil {
			rmCheck.skip = fmt.Sprintf("Debian's Redmine is not in %s; %s", redmineRoot, install)
			return
		}
		if !bytes.Contains(gemfile, []byte(redmineGemfileGlob)) {
			rmCheck.skip = fmt.Sprintf("%s/Gemfile no longer finds database.yml by %s: the harness cannot give Redmine a database of its own", redmineRoot, redmineGemfileGlob)
			return
		}
		rmCheck.gemfile = string(gemfile)
		ver, err := os.ReadFile(filepath.Join(redmineRoot, "lib/redmine/version.rb"))
		m := regexp.MustCompile(`MAJOR = (\d+)\s+MINOR = (\d+)\s+TINY\s+= (\d+)`).FindSubmatch(ver)
		if err != nil || m == nil {
			rmCheck.skip = fmt.Sprintf("cannot read Redmine's version from %s/lib/redmine/version.rb", redmineRoot)
			return
		}
		rmCheck.version = fmt.Sprintf("%s.%s.%s", m[1], m[2], m[3])
		for _, tool := range []struct {
			path *string
			name string
		}{{&rmCheck.ruby, "ruby"}, {&rmCheck.thin, "thin"}, {&rmCheck.mysql, "mysql"}, {&rmCheck.dump, "mysqldump"}} {
			if *tool.path, err = exec.LookPath(tool.name); err != nil {
				rmCheck.skip = fmt.Sprintf("%s is not on PATH; %s mariadb-client", tool.name, install)
				return
			}
		}
		out, err := exec.CommandContext(ctx, rmCheck.ruby, "-e", `require "mysql2"; print RUBY_VERSION, " mysql2 ", Mysql2::VERSION`).CombinedOutput()
		if err != nil {
			rmCheck.skip = fmt.Sprintf("ruby cannot load mysql2 (%v: %s); %s", err, truncate(out, 300), install)
			return
		}
		ruby := string(out)
		host := mariaDBAddr()
		out, err = mysqlCommand(ctx, rmCheck.mysql, host, "", "SELECT VERSION()").Output()
		if err != nil {
			rmCheck.skip = fmt.Sprintf("MariaDB does not accept root without a password at %s (%v); start it (see .ci/run) or set %s", host, err, MariaDBEnv)
			return
		}
		rmCheck.others = fmt.Sprintf("Ruby %s, MariaDB %s", ruby, strings.TrimSpace(string(out)))
	})
	if rmCheck.skip != "" {
		missing(t, "%s", rmCheck.skip)
	}
}

// redmineSchema is the database as Redmine's migrations and its default
// data leave it (mysqldump's output), taken by the first StartRedmine of
// the test binary: a later one loads it instead of migrating again.
var redmineSchema struct {
	sync.Mutex
	dump []byte
}

// StartRedmine starts Redmine with DefaultRedmineIssues issues.
func StartRedmine(t testing.TB) *Redmine {
	t.Helper()
	return StartRedmineWith(t, DefaultRedmineIssues)
}

// StartRedmineWith creates a MariaDB database with a unique name, gives
// Redmine an instance directory of its own in the test's temp dir (its
// database.yml, secret, log, tmp and files; Debian's instance mechanism,
// REDMINE_INSTANCE, pointed there, and a Gemfile of its own beside it, so
// that nothing under /etc/redmine or /var/lib/redmine is read or written),
// migrates the database and loads Redmine's default data (trackers,
// statuses, priorities, roles, workflows) in one rake run (or loads the
// first run's dump), seeds projects, custom fields and issues with SQL,
// and serves it with thin on a free loopback port (started first: Rails
// boots while the database is made). When the test ends it stops thin
// and drops the database.
func StartRedmineWith(t testing.TB, issues int) *Redmine {
	t.Helper()
	Enabled(t)
	requireRedmine(t)
	started := time.Now()
	dir := t.TempDir()
	key := make([]byte, 20)
	if _, err := crand.Read(key); err != nil {
		t.Fatal(err)
	}
	rm := &Redmine{mariadb: mariaDBAddr(), APIKey: hex.EncodeToString(key), Version: rmCheck.version}
	rm.Database = rm.createDatabase(t)
	env := rm.instance(t, dir)

	// thin boots (Rails loads every class: a quarter of a minute) while
	// the database is made; it is asked nothing before the seed is in.
	thinArgs := func(port int) []string {
		return []string{rmCheck.thin, "start", "--address", "127.0.0.1", "--port", strconv.Itoa(port),
			"--environment", "production", "--rackup", filepath.Join(redmineRoot, "config.ru")}
	}
	port := freePort(t)
	thin, err := spawn(t, "redmine", dir, thinArgs(port), env)
	if err != nil {
		t.Fatalf("start thin: %v", err)
	}

	how := "loaded the first run's dump"
	redmineSchema.Lock()
	if redmineSchema.dump == nil {
		how = "migrated"
		rm.migrate(t, dir, env)
		var stderr bytes.Buffer
		host, port, _ := strings.Cut(rm.mariadb, ":")
		cmd := exec.CommandContext(t.Context(), rmCheck.dump, "--no-defaults", "--protocol=TCP", "--host="+host, "--port="+port, "--user=root",
			"--single-transaction", "--skip-dump-date", "--default-character-set=utf8mb4", rm.Database)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			redmineSchema.Unlock()
			t.Fatalf("mysqldump the migrated database: %v: %s", err, truncate(stderr.Bytes(), 1000))
		}
		redmineSchema.dump = out
	} else if err := rm.batch(t.Context(), redmineSchema.dump); err != nil {
		redmineSchema.Unlock()
		t.Fatalf("load the migrated database: %v", err)
	}
	redmineSchema.Unlock()
	migrated := time.Since(started)

	if err := rm.batch(t.Context(), []byte(redmineSeed(issues, rm.APIKey))); err != nil {
		t.Fatalf("seed Redmine: %v", err)
	}
	rm.Projects = make([]int, len(redmineProjects))
	for i := range redmineProjects {
		rm.Projects[i] = i + 1
	}
	rm.Trackers = rm.ids(t, "SELECT id FROM trackers ORDER BY position")
	rm.Statuses = rm.ids(t, "SELECT id FROM issue_statuses ORDER BY position")
	seeded := time.Since(started)

	// thin answers a request at a time; Redmine reads its instance from
	// the environment. /login answers 200 once Rails is up. A thin that
	// lost its port in the meantime exited: another is started.
	rm.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	if err := thin.waitReady(t.Context(), rm.URL, answersOK("/login")); err != nil {
		select {
		case <-thin.done:
			rm.URL, _ = startProcess(t, "redmine", dir, thinArgs, answersOK("/login"), env...)
		default:
			t.Fatalf("redmine: %v", err)
		}
	}

	if got := rm.SQL(t, "SELECT COUNT(*) FROM issues"); len(got) != 1 || got[0] != strconv.Itoa(issues) {
		t.Fatalf("MariaDB holds %v issues, seeded %d", got, issues)
	}
	resp := rm.Admin(t, http.MethodGet, "/issues.json?limit=1&status_id=*", nil)
	var page struct {
		Total int `json:"total_count"`
	}
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &page) != nil || page.Total != issues {
		t.Fatalf("Redmine answers %d %q to its administrator; want 200 with total_count %d", resp.Status, truncate(resp.Body, 300), issues)
	}
	t.Logf("Redmine %s (%s): database %s %s in %.1fs, seeded with %d issues at %.1fs, thin ready in %.1fs at %s",
		rm.Version, rmCheck.others, rm.Database, how, migrated.Seconds(), issues, seeded.Seconds(), time.Since(started).Seconds(), rm.URL)
	return rm
}

// createDatabase creates a database with a unique name and drops it when
// the test ends (after thin, started later, has stopped).
func (rm *Redmine) createDatabase(t testing.TB) string {
	t.Helper()
	suffix := make([]byte, 6)
	if _, err := crand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	name := "airlock_redmine_" + hex.EncodeToString(suffix)
	if err := rm.exec(t.Context(), "", "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("create database %q: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rm.exec(ctx, "", "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %q: %v", name, err)
		}
	})
	return name
}

// instance writes Redmine's instance directory under dir and returns the
// environment every Redmine process of the test runs with. Debian's
// Redmine finds an instance at /usr/share/redmine/instances/<name>
// (a link to /var/lib/redmine): the name climbs out of it to dir, a path
// that reads the same whether the link is followed or not.
func (rm *Redmine) instance(t testing.TB, dir string) []string {
	t.Helper()
	inst := filepath.Join(dir, "instance")
	for _, sub := range []string{"config", "log", "tmp", "files", "public/plugin_assets"} {
		if err := os.MkdirAll(filepath.Join(inst, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	host, port, ok := strings.Cut(rm.mariadb, ":")
	if !ok {
		port = "3306"
	}
	// The session's time zone is UTC, as the process's: Redmine writes
	// and reads times in local time (default_timezone :local).
	dbYML := fmt.Sprintf("production:\n  adapter: mysql2\n  database: %q\n  host: %q\n  port: %s\n  username: root\n  password: \"\"\n  encoding: utf8mb4\n  variables:\n    time_zone: \"+00:00\"\n",
		rm.Database, host, port)
	secret := make([]byte, 32)
	if _, err := crand.Read(secret); err != nil {
		t.Fatal(err)
	}
	gemfile := strings.Replace(rmCheck.gemfile, redmineGemfileGlob, fmt.Sprintf("Dir[%q]", filepath.Join(inst, "config", "database.yml")), 1)
	// rake's own task between the migrations and the default data: the
	// models read their columns before the tables existed.
	rakeTask := "namespace :airlock do\n  task reset_columns: :environment do\n    ActiveRecord::Base.connection.schema_cache.clear!\n    ActiveRecord::Base.descendants.each(&:reset_column_information)\n  end\nend\n"
	for name, content := range map[string]string{
		"instance/config/database.yml":   dbYML,
		"instance/config/secret_key.txt": hex.EncodeToString(secret),
		"Gemfile":                        gemfile,
		"rakelib/airlock.rake":           rakeTask,
	} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
	return []string{
		"RAILS_ENV=production", "TZ=UTC", "REDMINE_LANG=en",
		"BUNDLE_GEMFILE=" + filepath.Join(dir, "Gemfile"),
		"REDMINE_INSTANCE=" + strings.Repeat("../", 8) + strings.TrimPrefix(inst, "/"),
		// Rails dumps the schema after migrating: into dir, not db/.
		"SCHEMA=" + filepath.Join(dir, "schema.rb"),
	}
}

// migrate runs Redmine's migrations and loads its default data, in one
// rake run.
func (rm *Redmine) migrate(t testing.TB, dir string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rmCheck.ruby, filepath.Join(redmineRoot, "bin/rake"), "-f", filepath.Join(redmineRoot, "Rakefile"),
		"-R", filepath.Join(dir, "rakelib"), "db:migrate", "airlock:reset_columns", "redmine:load_default_data")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("Default configuration data loaded.")) {
		t.Fatalf("migrate Redmine and load its default data: %v\n%s", err, tail(out, 3000))
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// redmineIssue is one seeded issue. Team and Region are nil where the
// issue has no value row at all.
type redmineIssue struct {
	id, project, tracker, status, priority int
	subject                                string
	team, region                           *string
	created, updated                       time.Time
}

// redmineIssues draws the issues, ids 1..n, deterministically: projects,
// trackers and statuses evenly, teams evenly over RedmineTeams and none,
// created over 2024 and 2025 (whole seconds, some sharing one), updated a
// few days to months later.
func redmineIssues(n int) []redmineIssue {
	rng := rand.New(rand.NewPCG(20261206, 36))
	start := time.Date(2024, 1, 1, 8, 0, 0, 0, time.UTC)
	out := make([]redmineIssue, n)
	for i := range out {
		is := &out[i]
		is.id = i + 1
		is.project = 1 + rng.IntN(len(redmineProjects))
		is.tracker = 1 + rng.IntN(3)
		is.status = 1 + rng.IntN(6)
		is.priority = 1 + rng.IntN(5)
		if k := rng.IntN(len(RedmineTeams) + 1); k < len(RedmineTeams) {
			is.team = &RedmineTeams[k]
		}
		if k := rng.IntN(len(RedmineRegions) + 1); k < len(RedmineRegions) {
			is.region = &RedmineRegions[k]
		}
		// About 17 hours apart, on whole hours for a tenth of them, so
		// that some share an instant with another.
		is.created = start.Add(time.Duration(i) * 17 * time.Hour).Add(time.Duration(rng.IntN(3600)) * time.Second)
		if rng.IntN(10) == 0 {
			is.created = is.created.Truncate(24 * time.Hour)
		}
		is.updated = is.created.Add(time.Duration(rng.IntN(90*24)) * time.Hour)
		is.subject = fmt.Sprintf("Issue %d: %s", is.id, []string{"login fails", "invoice totals off", "«quoted» title", "50% slower", "a_b\\c", "emoji 🚀"}[i%6])
	}
	return out
}

// redmineSeed is the SQL that turns the migrated database into the test's
// Redmine: the REST API on, logins required, the administrator's API key,
// the projects with the issue tracker and every tracker, the custom
// fields region (1) and team (2) for every project and tracker, and the
// issues with their custom values.
func redmineSeed(n int, apiKey string) string {
	var b strings.Builder
	b.WriteString("SET time_zone = '+00:00';\nSET NAMES utf8mb4;\nSTART TRANSACTION;\n")
	b.WriteString("INSERT INTO settings (name, value, updated_on) VALUES ('rest_api_enabled', '1', UTC_TIMESTAMP()), ('login_required', '1', UTC_TIMESTAMP());\n")
	fmt.Fprintf(&b, "INSERT INTO tokens (user_id, action, value, created_on, updated_on) VALUES (1, 'api', %s, UTC_TIMESTAMP(), UTC_TIMESTAMP());\n", sqlString(apiKey))
	for i, p := range redmineProjects {
		id := i + 1
		fmt.Fprintf(&b, "INSERT INTO projects (id, name, identifier, is_public, status, lft, rgt, created_on, updated_on) VALUES (%d, %s, %s, %t, 1, %d, %d, UTC_TIMESTAMP(), UTC_TIMESTAMP());\n",
			id, sqlString(p.name), sqlString(p.identifier), p.public, 2*id-1, 2*id)
		fmt.Fprintf(&b, "INSERT INTO projects_trackers (project_id, tracker_id) SELECT %d, id FROM trackers;\n", id)
		fmt.Fprintf(&b, "INSERT INTO enabled_modules (project_id, name) VALUES (%d, 'issue_tracking');\n", id)
	}
	for _, cf := range []struct {
		id   int
		name string
	}{{RedmineRegionField, "region"}, {RedmineTeamField, "team"}} {
		fmt.Fprintf(&b, "INSERT INTO custom_fields (id, type, name, field_format, is_for_all, is_filter, position, searchable, visible, editable, default_value) VALUES (%d, 'IssueCustomField', %s, 'string', 1, 1, %d, 1, 1, 1, '');\n",
			cf.id, sqlString(cf.name), cf.id)
		fmt.Fprintf(&b, "INSERT INTO custom_fields_trackers (custom_field_id, tracker_id) SELECT %d, id FROM trackers;\n", cf.id)
	}
	const at = "2006-01-02 15:04:05"
	issues := redmineIssues(n)
	for start := 0; start < len(issues); start += 250 {
		chunk := issues[start:min(start+250, len(issues))]
		b.WriteString("INSERT INTO issues (id, tracker_id, project_id, subject, status_id, priority_id, author_id, created_on, updated_on, closed_on, root_id, lft, rgt, is_private, done_ratio, lock_version) VALUES\n")
		for i, is := range chunk {
			closed := "NULL"
			if is.status >= 5 { // Closed, Rejected in the default data
				closed = sqlString(is.updated.Format(at))
			}
			sep := ",\n"
			if i == len(chunk)-1 {
				sep = ";\n"
			}
			fmt.Fprintf(&b, "(%d, %d, %d, %s, %d, %d, 1, %s, %s, %s, %d, 1, 2, 0, 0, 0)%s", is.id, is.tracker, is.project, sqlString(is.subject),
				is.status, is.priority, sqlString(is.created.Format(at)), sqlString(is.updated.Format(at)), closed, is.id, sep)
		}
		var values []string
		for _, is := range chunk {
			for _, cv := range []struct {
				field int
				v     *string
			}{{RedmineRegionField, is.region}, {RedmineTeamField, is.team}} {
				if cv.v != nil {
					values = append(values, fmt.Sprintf("('Issue', %d, %d, %s)", is.id, cv.field, sqlString(*cv.v)))
				}
			}
		}
		if len(values) > 0 {
			b.WriteString("INSERT INTO custom_values (customized_type, customized_id, custom_field_id, value) VALUES\n" + strings.Join(values, ",\n") + ";\n")
		}
	}
	b.WriteString("COMMIT;\n")
	return b.String()
}

// sqlString quotes s as a MariaDB string literal (backslashes and quotes
// escaped).
func sqlString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`, "\x00", `\0`).Replace(s) + "'"
}

// exec runs SQL against the database (the server when database is "").
func (rm *Redmine) exec(ctx context.Context, database, sql string) error {
	_, err := rm.query(ctx, database, sql)
	return err
}

// query runs SQL, its times in UTC, and returns its output lines.
func (rm *Redmine) query(ctx context.Context, database, sql string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := mysqlCommand(ctx, rmCheck.mysql, rm.mariadb, database, "SET time_zone = '+00:00'; "+sql)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("mysql: %w: %s", err, truncate(stderr.Bytes(), 1000))
	}
	text := strings.TrimRight(string(out), "\n")
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}

// batch runs a script of SQL (too long for one argument) from standard
// input against the test's database.
func (rm *Redmine) batch(ctx context.Context, script []byte) error {
	host, port, ok := strings.Cut(rm.mariadb, ":")
	if !ok {
		port = "3306"
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, rmCheck.mysql, "--no-defaults", "--protocol=TCP", "--host="+host, "--port="+port, "--user=root",
		"--batch", "--default-character-set=utf8mb4", rm.Database)
	cmd.Stdin, cmd.Stderr = bytes.NewReader(script), &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mysql: %w: %s", err, truncate(stderr.Bytes(), 1000))
	}
	return nil
}

func (rm *Redmine) ids(t testing.TB, sql string) []int {
	t.Helper()
	var out []int
	for _, row := range rm.SQL(t, sql) {
		n, err := strconv.Atoi(row)
		if err != nil {
			t.Fatalf("%q: %v", row, err)
		}
		out = append(out, n)
	}
	return out
}

// SQL runs SQL against Redmine's database (tables issues, custom_values,
// projects, trackers, issue_statuses, …), its times in UTC, and returns
// the rows, one a line, columns tab-separated.
func (rm *Redmine) SQL(t testing.TB, sql string) []string {
	t.Helper()
	rows, err := rm.query(t.Context(), rm.Database, sql)
	if err != nil {
		t.Fatalf("%v\nSQL: %s", err, sql)
	}
	return rows
}

// Issues is every issue read with SQL, by id, shaped as airlock's
// configuration names them: {"id", "project", "tracker", "status",
// "priority", "subject", "team", "region", "created_on", "updated_on"},
// numbers as float64, times as RFC 3339 in UTC, team and region null where
// the issue has no value row ("" where it has an empty one).
func (rm *Redmine) Issues(t testing.TB) []Record {
	t.Helper()
	cf := func(id int) string {
		return fmt.Sprintf("(SELECT v.value FROM custom_values v WHERE v.customized_type = 'Issue' AND v.customized_id = i.id AND v.custom_field_id = %d)", id)
	}
	rows := rm.SQL(t, `SELECT JSON_OBJECT('id', i.id, 'project', i.project_id, 'tracker', i.tracker_id, 'status', i.status_id,
		'priority', i.priority_id, 'subject', i.subject, 'team', `+cf(RedmineTeamField)+`, 'region', `+cf(RedmineRegionField)+`,
		'created_on', DATE_FORMAT(i.created_on, '%Y-%m-%dT%H:%i:%sZ'), 'updated_on', DATE_FORMAT(i.updated_on, '%Y-%m-%dT%H:%i:%sZ'))
		FROM issues i ORDER BY i.id`)
	out := make([]Record, 0, len(rows))
	for _, row := range rows {
		var r Record
		if err := json.Unmarshal([]byte(row), &r); err != nil {
			t.Fatalf("read an issue from MariaDB: %v: %q", err, truncate([]byte(row), 300))
		}
		out = append(out, r)
	}
	return out
}

// Admin sends a request to Redmine as the administrator (its API key),
// with body as JSON when not nil, and returns whatever Redmine answers.
func (rm *Redmine) Admin(t testing.TB, method, pathAndQuery string, body any) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), method, rm.URL+pathAndQuery, http.Header{"X-Redmine-Api-Key": {rm.APIKey}}, body, http.StatusOK)
	var he *httpError
	if errors.As(err, &he) {
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, pathAndQuery, err)
	}
	return Response{Status: http.StatusOK, Header: hdr, Body: b}
}
