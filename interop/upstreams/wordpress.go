package upstreams

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's WordPress and the tools the harness runs it with.
const (
	wordPressRoot = "/usr/share/wordpress/"
	// WordPressAdmin is the administrator's login; WordPress.AppPassword
	// is an application password of this user.
	WordPressAdmin = "admin"
)

// MariaDB, where StartWordPress creates a database of its own: the
// server on 127.0.0.1:3306 with user root and an empty password, as
// .ci/run starts it. MariaDBEnv overrides the host and port.
const (
	MariaDBEnv     = "AIRLOCK_TEST_MARIADB"
	defaultMariaDB = "127.0.0.1:3306"
)

// WordPress is a running WordPress (Debian's wordpress package, 6.1) under
// `php -S` with interop/wordpress/router.php, over a MariaDB database of
// its own, seeded with DefaultWordPressPosts posts, and a proxy in front of
// it that counts list requests and can change the posts between pages.
//
// Its REST API is what a user points airlock at:
//
//	GET  /wp-json/wp/v2/posts?page=&per_page= (1..100, default 10)&status=&categories=&tags=&author=&orderby=&order=
//	     a JSON array; X-WP-Total and X-WP-TotalPages headers; a page past the last is
//	     400 {"code": "rest_post_invalid_page_number"} without those headers
//	GET  /wp-json/wp/v2/posts/<id>
//	POST /wp-json/wp/v2/posts/<id> {"tags": [ids]}      (replaces the post's tags with the list)
//	DELETE /wp-json/wp/v2/posts/<id>[?force=true]       (trash, or delete)
//
// Anonymous requests see published posts only; status other than publish
// is refused to them (400 rest_invalid_param, "Status is forbidden"). The
// administrator authenticates with Basic and an application password
// (WP_ENVIRONMENT_TYPE is local, so that they work over http).
type WordPress struct {
	// URL is the proxy (point airlock at it); with no fault set it
	// forwards every request and answer unchanged.
	URL string
	// DirectURL is php -S itself.
	DirectURL string
	// Database is the name of the test's own MariaDB database.
	Database string
	// User and AppPassword are the administrator's Basic credential.
	User, AppPassword string
	// Users are the ids of the seeded users, the administrator first.
	Users []int
	// Categories and Tags are the term ids of WordPressCategories and
	// WordPressTags, in their order.
	Categories, Tags []int
	// Version is WordPress's own version string.
	Version string

	mariadb string // host:port
	proxy   *wpProxy
}

var wpCheck struct {
	once     sync.Once
	skip     string
	php      string
	mysql    string
	versions string
}

// requireWordPress checks once per test binary that php (with mysqli,
// mbstring and xml), Debian's WordPress, the mysql client and MariaDB are
// there, and skips (or fails under AIRLOCK_REQUIRE_INTEROP=1) when not.
func requireWordPress(t testing.TB) {
	t.Helper()
	wpCheck.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		php, err := exec.LookPath("php")
		if err != nil {
			wpCheck.skip = "php is not on PATH; apt-get install php-cli php-mysql php-mbstring php-xml"
			return
		}
		out, err := exec.CommandContext(ctx, php, "-r",
			`foreach (["mysqli", "mbstring", "xml"] as $e) { if (!extension_loaded($e)) { echo "missing PHP extension $e"; exit(1); } } echo PHP_VERSION;`).CombinedOutput()
		if err != nil {
			wpCheck.skip = fmt.Sprintf("php cannot run WordPress (%v: %s); apt-get install php-mysql php-mbstring php-xml", err, truncate(out, 300))
			return
		}
		phpVersion := strings.TrimSpace(string(out))
		if _, err := os.Stat(wordPressRoot + "wp-settings.php"); err != nil {
			wpCheck.skip = fmt.Sprintf("Debian's WordPress is not in %s; apt-get install wordpress", wordPressRoot)
			return
		}
		mysql, err := exec.LookPath("mysql")
		if err != nil {
			wpCheck.skip = "the mysql client is not on PATH; apt-get install mariadb-client"
			return
		}
		host := mariaDBAddr()
		out, err = mysqlCommand(ctx, mysql, host, "", "SELECT VERSION()").Output()
		if err != nil {
			wpCheck.skip = fmt.Sprintf("MariaDB does not accept root without a password at %s (%v); start it (see .ci/run) or set %s", host, err, MariaDBEnv)
			return
		}
		wpCheck.versions = fmt.Sprintf("PHP %s, MariaDB %s", phpVersion, strings.TrimSpace(string(out)))
		wpCheck.php, wpCheck.mysql = php, mysql
	})
	if wpCheck.skip != "" {
		missing(t, "%s", wpCheck.skip)
	}
}

func mariaDBAddr() string {
	if s := os.Getenv(MariaDBEnv); s != "" {
		return s
	}
	return defaultMariaDB
}

// mysqlCommand runs one batch of SQL with the mysql client, as root
// without a password, over TCP, ignoring every option file: rows come out
// one a line, columns tab-separated, unescaped (--raw), without a header.
func mysqlCommand(ctx context.Context, mysql, hostPort, database, sql string) *exec.Cmd {
	host, port, ok := strings.Cut(hostPort, ":")
	if !ok {
		port = "3306"
	}
	args := []string{"--no-defaults", "--protocol=TCP", "--host=" + host, "--port=" + port, "--user=root",
		"--batch", "--raw", "--skip-column-names", "--default-character-set=utf8mb4", "--execute=" + sql}
	if database != "" {
		args = append(args, database)
	}
	return exec.CommandContext(ctx, mysql, args...)
}

// StartWordPress starts WordPress with DefaultWordPressPosts posts.
func StartWordPress(t testing.TB) *WordPress {
	t.Helper()
	return StartWordPressWith(t, DefaultWordPressPosts)
}

// StartWordPressWith creates a MariaDB database with a unique name,
// installs WordPress into it (interop/wordpress/install.php: wp_install,
// pretty permalinks, users, terms, an application password, then the
// posts by multi-row SQL), starts `php -S` on a free loopback port with
// interop/wordpress/router.php and a wp-config.php in the test's temp dir
// (nothing is written under /etc or /usr), and the proxy in front of it.
// When the test ends it stops both and drops the database.
func StartWordPressWith(t testing.TB, posts int) *WordPress {
	t.Helper()
	Enabled(t)
	requireWordPress(t)
	started := time.Now()
	dir := t.TempDir()
	w := &WordPress{mariadb: mariaDBAddr(), User: WordPressAdmin}
	w.Database = w.createDatabase(t)

	content := filepath.Join(dir, "wp-content")
	for _, sub := range []string{"plugins", "themes", "uploads"} {
		if err := os.MkdirAll(filepath.Join(content, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	configPath := filepath.Join(dir, "wp-config.php")
	if err := os.WriteFile(configPath, []byte(wpConfig(w.Database, w.mariadb, content)), 0o600); err != nil {
		t.Fatalf("write wp-config.php: %v", err)
	}
	seed := seedWordPress(posts, DefaultWordPressSeed)
	seedPath := filepath.Join(dir, "seed.json")
	b, err := json.Marshal(seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seedPath, b, 0o600); err != nil {
		t.Fatalf("write the WordPress seed: %v", err)
	}

	wpDir := filepath.Join(interopDir(t), "wordpress")
	env := []string{"AIRLOCK_WP_CONFIG=" + configPath}
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	install := exec.CommandContext(ctx, wpCheck.php, "-d", "display_errors=stderr", filepath.Join(wpDir, "install.php"), seedPath)
	install.Dir, install.Env = dir, append(os.Environ(), env...)
	var stderr bytes.Buffer
	install.Stderr = &stderr
	out, err := install.Output()
	if err != nil {
		t.Fatalf("install WordPress: %v\n%s%s", err, truncate(out, 2000), truncate(stderr.Bytes(), 2000))
	}
	var installed struct {
		UserIDs     []int  `json:"user_ids"`
		Categories  []int  `json:"categories"`
		Tags        []int  `json:"tags"`
		AppPassword string `json:"app_password"`
		Posts       int    `json:"posts"`
		Version     string `json:"wordpress"`
	}
	if err := json.Unmarshal(out, &installed); err != nil {
		t.Fatalf("install WordPress: unreadable answer %q (%v); stderr %s", truncate(out, 500), err, truncate(stderr.Bytes(), 2000))
	}
	w.Users, w.Categories, w.Tags = installed.UserIDs, installed.Categories, installed.Tags
	w.AppPassword, w.Version = installed.AppPassword, installed.Version
	installedIn := time.Since(started)

	// PHP_CLI_SERVER_WORKERS: php -S answers one request at a time
	// without it. display_errors off: a PHP warning must not land in a
	// JSON body (it goes to the log).
	direct, _ := startProcess(t, "wordpress", dir, func(port int) []string {
		return []string{wpCheck.php, "-d", "display_errors=0", "-d", "log_errors=1", "-d", "opcache.enable_cli=1",
			"-S", fmt.Sprintf("127.0.0.1:%d", port), filepath.Join(wpDir, "router.php")}
	}, answersOK("/wp-json/"), append(env, "PHP_CLI_SERVER_WORKERS=4")...)
	w.DirectURL = direct
	target, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	w.proxy = newWPProxy(target, w.deleteIDs)
	srv := httptest.NewServer(w.proxy)
	t.Cleanup(srv.Close)
	w.URL = srv.URL

	if n := len(w.PostIDs(t, "")); n != posts {
		t.Fatalf("MariaDB holds %d posts, seeded %d", n, posts)
	}
	t.Logf("WordPress %s (%s): database %s created, installed and seeded with %d posts in %.1fs, server ready in %.1fs at %s (proxy %s)",
		w.Version, wpCheck.versions, w.Database, posts, installedIn.Seconds(), time.Since(started).Seconds(), direct, w.URL)
	return w
}

// createDatabase creates a database with a unique name and drops it when
// the test ends (after the server, started later, has stopped).
func (w *WordPress) createDatabase(t testing.TB) string {
	t.Helper()
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		t.Fatal(err)
	}
	name := "airlock_wp_" + hex.EncodeToString(suffix)
	if err := w.exec(t.Context(), "", "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"); err != nil {
		t.Fatalf("create database %q: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.exec(ctx, "", "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %q: %v", name, err)
		}
	})
	return name
}

// wpConfig is the site's wp-config.php: the database, fresh keys, the
// content directory in the temp dir, and no cron, updates, mail or
// outbound HTTP. WP_HOME follows the Host header, so that the links
// WordPress writes point at whoever was asked (the proxy or php -S).
func wpConfig(database, hostPort, content string) string {
	key := func() string {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<?php\n// Written by interop/upstreams/wordpress.go for one test; deleted with its temp dir.\n")
	for _, c := range [][2]string{
		{"DB_NAME", database}, {"DB_USER", "root"}, {"DB_PASSWORD", ""}, {"DB_HOST", hostPort},
		{"DB_CHARSET", "utf8mb4"}, {"DB_COLLATE", ""},
		{"AUTH_KEY", key()}, {"SECURE_AUTH_KEY", key()}, {"LOGGED_IN_KEY", key()}, {"NONCE_KEY", key()},
		{"AUTH_SALT", key()}, {"SECURE_AUTH_SALT", key()}, {"LOGGED_IN_SALT", key()}, {"NONCE_SALT", key()},
		// Application passwords need https, or a local environment.
		{"WP_ENVIRONMENT_TYPE", "local"},
		{"WP_CONTENT_DIR", content},
	} {
		fmt.Fprintf(&b, "define(%s, %s);\n", phpString(c[0]), phpString(c[1]))
	}
	b.WriteString(`$table_prefix = 'wp_';
$airlock_host = isset($_SERVER['HTTP_HOST']) ? $_SERVER['HTTP_HOST'] : '127.0.0.1';
define('WP_HOME', 'http://' . $airlock_host);
define('WP_SITEURL', 'http://' . $airlock_host);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('WP_DEBUG', false);
if (!defined('ABSPATH')) {
	define('ABSPATH', '` + wordPressRoot + `');
}
require_once ABSPATH . 'wp-settings.php';
`)
	return b.String()
}

// phpString quotes s as a single-quoted PHP string.
func phpString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// exec runs SQL against the database (the server when database is "").
func (w *WordPress) exec(ctx context.Context, database, sql string) error {
	_, err := w.query(ctx, database, sql)
	return err
}

// query runs SQL and returns its output lines.
func (w *WordPress) query(ctx context.Context, database, sql string) ([]string, error) {
	var stderr bytes.Buffer
	cmd := mysqlCommand(ctx, wpCheck.mysql, w.mariadb, database, sql)
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

// SQL runs SQL against the site's database (tables wp_posts, wp_terms,
// wp_term_taxonomy, wp_term_relationships, …) and returns the rows, one a
// line, columns tab-separated.
func (w *WordPress) SQL(t testing.TB, sql string) []string {
	t.Helper()
	rows, err := w.query(t.Context(), w.Database, sql)
	if err != nil {
		t.Fatalf("%v\nSQL: %s", err, sql)
	}
	return rows
}

// PostIDs is the ids of the posts (post_type post, any status, trash
// included) that the SQL condition where selects ("" for all), sorted as
// strings like IDs. The condition reads wp_posts as p; HasTerm and
// StatusIn build the usual ones.
func (w *WordPress) PostIDs(t testing.TB, where string) []string {
	t.Helper()
	cond := "p.post_type = 'post'"
	if where != "" {
		cond += " AND (" + where + ")"
	}
	out := w.SQL(t, "SELECT p.ID FROM wp_posts p WHERE "+cond)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return out
}

// HasTerm is an SQL condition for PostIDs: the post p has the term (a
// term id, as WordPress's REST API names it) of the taxonomy (category or
// post_tag).
func HasTerm(taxonomy string, termID int) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM wp_term_relationships r JOIN wp_term_taxonomy x ON x.term_taxonomy_id = r.term_taxonomy_id
		WHERE r.object_id = p.ID AND x.taxonomy = '%s' AND x.term_id = %d)`, strings.ReplaceAll(taxonomy, "'", ""), termID)
}

// StatusIn is an SQL condition for PostIDs: the post's status is one of
// these.
func StatusIn(statuses ...string) string {
	quoted := make([]string, len(statuses))
	for i, s := range statuses {
		quoted[i] = "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return "p.post_status IN (" + strings.Join(quoted, ", ") + ")"
}

// Posts is every post (post_type post, any status) read with SQL, by id,
// shaped as the REST API serves it to the administrator: {"id", "status",
// "author", "title" (the raw title), "date_gmt", "categories", "tags"},
// numbers as float64, the term lists sorted by id (the API orders them by
// name).
func (w *WordPress) Posts(t testing.TB) []Record {
	t.Helper()
	terms := func(taxonomy string) string {
		return `(SELECT JSON_ARRAYAGG(x.term_id ORDER BY x.term_id) FROM wp_term_relationships r
			JOIN wp_term_taxonomy x ON x.term_taxonomy_id = r.term_taxonomy_id
			WHERE r.object_id = p.ID AND x.taxonomy = '` + taxonomy + `')`
	}
	rows := w.SQL(t, `SELECT JSON_OBJECT('id', p.ID, 'status', p.post_status, 'author', p.post_author, 'title', p.post_title,
		'date_gmt', DATE_FORMAT(p.post_date_gmt, '%Y-%m-%dT%H:%i:%s'),
		'categories', `+terms("category")+`, 'tags', `+terms("post_tag")+`)
		FROM wp_posts p WHERE p.post_type = 'post' ORDER BY p.ID`)
	out := make([]Record, 0, len(rows))
	for _, row := range rows {
		var r Record
		if err := json.Unmarshal([]byte(row), &r); err != nil {
			t.Fatalf("read a post from MariaDB: %v: %q", err, truncate([]byte(row), 300))
		}
		for _, k := range []string{"categories", "tags"} {
			if r[k] == nil {
				r[k] = []any{}
			}
		}
		out = append(out, r)
	}
	return out
}

// PostTerms is the term ids of one post in a taxonomy (category or
// post_tag), read with SQL, sorted.
func (w *WordPress) PostTerms(t testing.TB, id int, taxonomy string) []int {
	t.Helper()
	rows := w.SQL(t, fmt.Sprintf(`SELECT x.term_id FROM wp_term_relationships r JOIN wp_term_taxonomy x ON x.term_taxonomy_id = r.term_taxonomy_id
		WHERE r.object_id = %d AND x.taxonomy = '%s' ORDER BY x.term_id`, id, strings.ReplaceAll(taxonomy, "'", "")))
	out := make([]int, 0, len(rows))
	for _, row := range rows {
		n, err := strconv.Atoi(row)
		if err != nil {
			t.Fatalf("term id %q: %v", row, err)
		}
		out = append(out, n)
	}
	return out
}

// Delete deletes posts with SQL, behind WordPress's back (its rows in
// wp_posts, wp_postmeta and wp_term_relationships): the next request
// WordPress answers no longer holds them. WordPress keeps no cache across
// requests here, so nothing else needs to know.
func (w *WordPress) Delete(t testing.TB, ids ...int) {
	t.Helper()
	if err := w.deleteIDs(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
}

func (w *WordPress) deleteIDs(ctx context.Context, ids []int) error {
	if len(ids) == 0 {
		return nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.Itoa(id)
	}
	in := "(" + strings.Join(list, ",") + ")"
	err := w.exec(ctx, w.Database, "START TRANSACTION; DELETE FROM wp_term_relationships WHERE object_id IN "+in+
		"; DELETE FROM wp_postmeta WHERE post_id IN "+in+"; DELETE FROM wp_posts WHERE ID IN "+in+"; COMMIT;")
	if err != nil {
		return fmt.Errorf("delete posts %v: %w", ids, err)
	}
	return nil
}

// Trash moves a post to the trash through the REST API, as the
// administrator (DELETE without force), and returns WordPress's answer.
func (w *WordPress) Trash(t testing.TB, id int) Response {
	t.Helper()
	return w.Admin(t, http.MethodDelete, fmt.Sprintf("/wp-json/wp/v2/posts/%d", id), nil)
}

// Admin sends a request to php -S directly as the administrator (Basic,
// the application password), with body as JSON when not nil, and returns
// whatever WordPress answers.
func (w *WordPress) Admin(t testing.TB, method, pathAndQuery string, body any) Response {
	t.Helper()
	return w.do(t, method, w.DirectURL+pathAndQuery, body, w.BasicHeader())
}

// Anonymous sends a request to php -S directly without a credential.
func (w *WordPress) Anonymous(t testing.TB, method, pathAndQuery string, body any) Response {
	t.Helper()
	return w.do(t, method, w.DirectURL+pathAndQuery, body, nil)
}

// AdminViaProxy sends a request as the administrator through the proxy,
// as airlock does: the proxy counts it and its knobs act on it.
func (w *WordPress) AdminViaProxy(t testing.TB, method, pathAndQuery string, body any) Response {
	t.Helper()
	return w.do(t, method, w.URL+pathAndQuery, body, w.BasicHeader())
}

// BasicHeader is the administrator's Authorization header.
func (w *WordPress) BasicHeader() http.Header {
	return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(w.User+":"+w.AppPassword))}}
}

func (w *WordPress) do(t testing.TB, method, target string, body any, header http.Header) Response {
	t.Helper()
	hdr, b, err := call(t.Context(), method, target, header, body, http.StatusOK)
	var he *httpError
	if errors.As(err, &he) {
		return Response{Status: he.status, Header: hdr, Body: b}
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	return Response{Status: http.StatusOK, Header: hdr, Body: b}
}

// SetFaults sets the proxy's knobs at once and counts anew;
// WordPressFaults{} turns them off.
func (w *WordPress) SetFaults(f WordPressFaults) { w.proxy.set(f) }

// ProxyStats is what the proxy saw since the last SetFaults.
func (w *WordPress) ProxyStats() WordPressProxyStats { return w.proxy.stats() }
