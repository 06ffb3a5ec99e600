package upstreams

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Debian's MediaWiki (the mediawiki package, 1.39) and where it is.
const mediaWikiRoot = "/usr/share/mediawiki"

// MediaWiki bot credentials and seed.
const (
	// MediaWikiAdmin is the administrator; the bot password is his, for
	// the application MediaWikiBotApp: its login name is Admin@airlock.
	MediaWikiAdmin  = "Admin"
	MediaWikiBotApp = "airlock"
	// MediaWikiOther is a second user, who edits a page between a preview
	// and its commit.
	MediaWikiOther = "Other"
	// MediaWikiPages is how many pages the seed imports (besides the
	// Main Page), across namespaces 0, 2 and 4.
	MediaWikiPages = 2000
	// MediaWikiEditable is the category of the pages the write test edits.
	MediaWikiEditable = "Editable"
)

// MediaWikiCategories are the seed's categories: every page is in
// i%4 of them; titles with a comma, quotes and unicode.
var MediaWikiCategories = []string{"Alpha", "Beta", "Gamma, Delta", "Ünïcode Кат", `Quote "Q"`}

// MediaWiki is a running MediaWiki under `php -S` over SQLite in a
// directory of its own (in /dev/shm when there is one: SQLite's syncs on
// a disk make the import four times slower), with a private
// LocalSettings.php (MW_CONFIG_FILE: nothing under /etc or /var/lib is
// read or written), seeded with MediaWikiPages pages and a bot password.
//
// Its Action API is what airlock is pointed at: GET/POST /api.php.
type MediaWiki struct {
	URL string
	// Dir holds LocalSettings.php and the SQLite files.
	Dir string
	// BotUser and BotPassword are the bot password's login.
	BotUser, BotPassword string
	Version              string
	php                  string
}

var mwCheck struct {
	once sync.Once
	skip string
	php  string
}

func requireMediaWiki(t testing.TB) {
	t.Helper()
	mwCheck.once.Do(func() {
		php, err := exec.LookPath("php")
		if err != nil {
			mwCheck.skip = "php is not on PATH; apt-get install php-cli php-sqlite3 php-intl php-mbstring php-xml"
			return
		}
		out, err := exec.Command(php, "-r", `foreach (["sqlite3", "pdo_sqlite", "intl", "mbstring", "xml"] as $e) { if (!extension_loaded($e)) { echo "missing PHP extension $e"; exit(1); } }`).CombinedOutput()
		if err != nil {
			mwCheck.skip = fmt.Sprintf("php cannot run MediaWiki (%s); apt-get install php-sqlite3 php-intl php-mbstring php-xml", truncate(out, 200))
			return
		}
		if _, err := os.Stat(filepath.Join(mediaWikiRoot, "api.php")); err != nil {
			mwCheck.skip = "Debian's MediaWiki is not in " + mediaWikiRoot + "; apt-get install mediawiki"
			return
		}
		mwCheck.php = php
	})
	if mwCheck.skip != "" {
		missing(t, "%s", mwCheck.skip)
	}
}

// StartMediaWiki installs, seeds and serves a MediaWiki for the test.
func StartMediaWiki(t testing.TB) *MediaWiki {
	t.Helper()
	Enabled(t)
	requireMediaWiki(t)
	parent := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parent = "/dev/shm"
	}
	dir, err := os.MkdirTemp(parent, "airlock-mediawiki-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	m := &MediaWiki{Dir: dir, BotUser: MediaWikiAdmin + "@" + MediaWikiBotApp, BotPassword: "airlockbotpassword0123456789abcd", php: mwCheck.php}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m.maintenance(t, "install.php", "--dbtype", "sqlite", "--dbpath", data, "--dbname", "wiki", "--server", "http://127.0.0.1",
		"--scriptpath", "", "--pass", "AdminPassw0rd!Long-enough", "--confpath", dir, "--lang", "en", "--skins", "", "Airlock Wiki", MediaWikiAdmin)
	ls := filepath.Join(dir, "LocalSettings.php")
	extra := `
# airlock's test harness: the server is whatever php -S was started on.
if ( isset( $_SERVER['HTTP_HOST'] ) ) { $wgServer = "http://" . $_SERVER['HTTP_HOST']; }
$wgEnableBotPasswords = true;
$wgJobRunRate = 0;
`
	f, err := os.OpenFile(ls, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(extra)
	f.Close()
	dump := filepath.Join(dir, "seed.xml")
	if err := os.WriteFile(dump, []byte(mediaWikiDump(MediaWikiPages)), 0o644); err != nil {
		t.Fatal(err)
	}
	m.maintenance(t, "importDump.php", dump)
	m.maintenance(t, "rebuildtextindex.php")
	m.maintenance(t, "createAndPromote.php", MediaWikiOther, "OtherPassw0rd!Long-enough")
	m.maintenance(t, "createBotPassword.php", "--appid", MediaWikiBotApp, "--grants", "basic,editpage,highvolume", MediaWikiAdmin, m.BotPassword)
	t.Logf("MediaWiki installed and seeded with %d pages in %s", MediaWikiPages, time.Since(start).Round(time.Millisecond))
	m.URL, _ = startProcess(t, "mediawiki", mediaWikiRoot, func(port int) []string {
		return []string{m.php, "-S", fmt.Sprintf("127.0.0.1:%d", port), "-t", mediaWikiRoot}
	}, answersOK("/api.php?action=query&meta=siteinfo&format=json"), "MW_CONFIG_FILE="+ls)
	var info struct {
		Query struct {
			General struct {
				Generator string `json:"generator"`
			} `json:"general"`
		} `json:"query"`
	}
	get(t, m.URL+"/api.php?action=query&meta=siteinfo&format=json", nil).JSON(t, &info)
	m.Version = info.Query.General.Generator
	return m
}

// maintenance runs a maintenance script on the test's wiki.
func (m *MediaWiki) maintenance(t testing.TB, script string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	argv := append([]string{filepath.Join(mediaWikiRoot, "maintenance", script)}, args...)
	if script != "install.php" {
		argv = append([]string{argv[0], "--conf", filepath.Join(m.Dir, "LocalSettings.php")}, args...)
	}
	cmd := exec.CommandContext(ctx, m.php, argv...)
	cmd.Dir = mediaWikiRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("MediaWiki %s: %v\n%s", script, err, truncate(out, 2000))
	}
	return string(out)
}

// EditAs changes a page's text as another user (maintenance/edit.php), as
// an editor would between a preview and its commit.
func (m *MediaWiki) EditAs(t testing.TB, user, title, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, m.php, filepath.Join(mediaWikiRoot, "maintenance", "edit.php"), "--conf", filepath.Join(m.Dir, "LocalSettings.php"),
		"--user", user, "--summary", "an editor's change", title)
	cmd.Dir = mediaWikiRoot
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("edit %q as %s: %v\n%s", title, user, err, truncate(out, 1000))
	}
}

func (m *MediaWiki) php1(t testing.TB, code string) string {
	t.Helper()
	out, err := exec.Command(m.php, "-r", code).CombinedOutput()
	if err != nil {
		t.Fatalf("php: %v\n%s", err, truncate(out, 1000))
	}
	return string(out)
}

// SQL runs a query on the wiki's SQLite database and returns its rows as
// objects: MediaWiki's own truth, read without its API.
func (m *MediaWiki) SQL(t testing.TB, query string) []Record {
	t.Helper()
	code := fmt.Sprintf(`$d = new SQLite3(%q, SQLITE3_OPEN_READONLY); $d->busyTimeout(10000); $r = $d->query(%q); $out = []; while ($x = $r->fetchArray(SQLITE3_ASSOC)) { $out[] = $x; } echo json_encode($out);`,
		filepath.Join(m.Dir, "data", "wiki.sqlite"), query)
	var rows []Record
	if err := json.Unmarshal([]byte(m.php1(t, code)), &rows); err != nil {
		t.Fatalf("decode rows of %q: %v", query, err)
	}
	return rows
}

// Pages are every page of namespaces 0, 2 and 4 with its id (as id and
// pageid), namespace,
// title (as the API writes it, with spaces and its namespace's prefix),
// latest revision and categories.
func (m *MediaWiki) Pages(t testing.TB) []Record {
	t.Helper()
	rows := m.SQL(t, `SELECT page_id, page_namespace, page_title, page_latest,
		(SELECT group_concat(cl_to, '|') FROM categorylinks WHERE cl_from = page_id) AS cats FROM page WHERE page_namespace IN (0, 2, 4)`)
	prefix := map[float64]string{0: "", 2: "User:", 4: "Airlock Wiki:"}
	var out []Record
	for _, r := range rows {
		ns := r["page_namespace"].(float64)
		var cats []any
		if s, ok := r["cats"].(string); ok && s != "" {
			for _, c := range strings.Split(s, "|") {
				cats = append(cats, "Category:"+strings.ReplaceAll(c, "_", " "))
			}
		}
		out = append(out, Record{"id": r["page_id"], "pageid": r["page_id"], "ns": ns, "lastrevid": r["page_latest"],
			"title": prefix[ns] + strings.ReplaceAll(r["page_title"].(string), "_", " "), "categories": cats})
	}
	return out
}

// mediaWikiDump is an XML export of n pages: namespaces 0, 2 and 4 in
// turn, titles with commas, quotes, apostrophes and unicode, i%4 of
// MediaWikiCategories each, words the search finds (searchwordN for
// N = i%7), and the first 12 pages of namespace 0 in MediaWikiEditable.
func mediaWikiDump(n int) string {
	var b strings.Builder
	b.WriteString(`<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" xml:lang="en"><siteinfo><sitename>Airlock Wiki</sitename><dbname>wiki</dbname><case>first-letter</case><namespaces><namespace key="0" case="first-letter" /><namespace key="2" case="first-letter">User</namespace><namespace key="4" case="first-letter">Airlock Wiki</namespace><namespace key="14" case="first-letter">Category</namespace></namespaces></siteinfo>`)
	editable := 0
	for i := range n {
		ns := []int{0, 0, 0, 2, 4}[i%5]
		prefix := map[int]string{0: "", 2: "User:", 4: "Airlock Wiki:"}[ns]
		title := prefix + []string{"Page %d", "Page, %d", `Quote "%d"`, "Ünïcode страница %d", "Apostrophe's %d"}[i%5]
		title = fmt.Sprintf(title, i)
		text := fmt.Sprintf("Text of %d. searchword%d common\n", i, i%7)
		for c := range i % 4 {
			text += "[[Category:" + MediaWikiCategories[(i+c)%len(MediaWikiCategories)] + "]]\n"
		}
		if ns == 0 && editable < 12 {
			editable++
			text += "[[Category:" + MediaWikiEditable + "]]\n"
		}
		fmt.Fprintf(&b, `<page><title>%s</title><ns>%d</ns><revision><timestamp>2024-01-01T00:00:00Z</timestamp><contributor><username>Admin</username></contributor><model>wikitext</model><format>text/x-wiki</format><text xml:space="preserve">%s</text></revision></page>`,
			xmlEscape(title), ns, xmlEscape(text))
	}
	b.WriteString(`</mediawiki>`)
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
