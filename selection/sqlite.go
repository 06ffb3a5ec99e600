package selection

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver
)

// SQLite is the default Store: one file, WAL mode. Writes go through a
// single connection; reads use a small pool.
type SQLite struct {
	w, r *sql.DB
	path string
	// Statements prepared once on the writer connection (before any
	// transaction: the writer pool has one connection, so preparing on the
	// pool inside a transaction would wait for itself). Transactions use
	// them through Tx.StmtContext.
	journalStmt *sql.Stmt // one target's journal entry
	recordsStmt *sql.Stmt // recordsPerInsert records

	// Journal and Audit calls go through one goroutine that commits the
	// calls waiting at the same time in one transaction (see groupCommit).
	group       chan groupWrite
	groupDone   chan struct{}
	groupMu     sync.RWMutex
	groupClosed bool
}

// groupWrite is one Journal or Audit call: its statements run in a shared
// transaction, inside a savepoint of their own, and done receives the
// call's result once the transaction is committed.
type groupWrite struct {
	what string
	fn   func(tx *sql.Tx) error
	done chan error
}

// maxGroup bounds the calls one transaction commits.
const maxGroup = 64

// errClosed is what a write to a closed store returns.
var errClosed = errors.New("store closed")

// write runs fn in the next group transaction and returns when that
// transaction is committed (or fn failed, leaving nothing behind). A
// caller whose context is already done gets its error and writes
// nothing; once queued, the write completes whatever the context does,
// so that the answer is always what happened.
func (s *SQLite) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	done := make(chan error, 1)
	s.groupMu.RLock()
	if s.groupClosed {
		s.groupMu.RUnlock()
		return fmt.Errorf("%s: %w", what, errClosed)
	}
	s.group <- groupWrite{what: what, fn: fn, done: done}
	s.groupMu.RUnlock()
	err := <-done
	if p, ok := err.(callPanic); ok {
		// A call that panics panics in its caller, as it did before
		// writes were grouped.
		panic(p.v)
	}
	return err
}

// callPanic carries a call's panic back to its caller.
type callPanic struct{ v any }

func (p callPanic) Error() string { return fmt.Sprint("panic: ", p.v) }

// run runs one call's statements, turning a panic into a callPanic.
func (g groupWrite) run(tx *sql.Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = callPanic{v}
		}
	}()
	return g.fn(tx)
}

// groupCommit commits queued writes: it takes every call waiting (up to
// maxGroup) into one transaction, each call in its own savepoint so that
// a failing call leaves nothing behind and does not fail the others. A
// commit costs the same for one call as for many, so concurrent writers
// (a commit's journal and its audit of every request) share them.
func (s *SQLite) groupCommit() {
	defer close(s.groupDone)
	batch := make([]groupWrite, 0, maxGroup)
	for first := range s.group {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxGroup {
			select {
			case g, ok := <-s.group:
				if !ok {
					break drain
				}
				batch = append(batch, g)
			default:
				break drain
			}
		}
		s.commitGroup(batch)
	}
}

func (s *SQLite) commitGroup(batch []groupWrite) {
	// Statements never see a caller's context: a cancelled statement
	// would roll back the whole transaction, other calls included.
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		for _, g := range batch {
			g.done <- fmt.Errorf("%s: %w", g.what, err)
		}
		return
	}
	defer tx.Rollback()
	errs := make([]error, len(batch))
	if len(batch) == 1 {
		if errs[0] = batch[0].run(tx); errs[0] != nil {
			batch[0].done <- errs[0]
			return
		}
	} else {
		for i, g := range batch {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT call`); err != nil {
				s.failGroup(batch, err)
				return
			}
			if errs[i] = g.run(tx); errs[i] != nil {
				if _, err := tx.ExecContext(ctx, `ROLLBACK TO call`); err != nil {
					s.failGroup(batch, err)
					return
				}
			}
			if _, err := tx.ExecContext(ctx, `RELEASE call`); err != nil {
				s.failGroup(batch, err)
				return
			}
		}
	}
	if err := tx.Commit(); err != nil {
		// As a call's own commit failing: the error as it is.
		for _, g := range batch {
			g.done <- err
		}
		return
	}
	for i, g := range batch {
		g.done <- errs[i]
	}
}

func (s *SQLite) failGroup(batch []groupWrite, err error) {
	for _, g := range batch {
		g.done <- fmt.Errorf("%s: %w", g.what, err)
	}
}

// DefaultStorePath is the store under the user's state directory:
// $XDG_STATE_HOME/airlock/airlock.db, else ~/.local/state/airlock/airlock.db.
func DefaultStorePath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "airlock", "airlock.db"), nil
}

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS selections (
	id TEXT PRIMARY KEY,
	doc TEXT NOT NULL,
	state TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS selections_by_time ON selections(created_at);
CREATE TABLE IF NOT EXISTS records (
	selection_id TEXT NOT NULL,
	id TEXT NOT NULL,
	disposition TEXT NOT NULL,
	rule INTEGER NOT NULL,
	note TEXT NOT NULL,
	version TEXT NOT NULL,
	source TEXT NOT NULL,
	review TEXT NOT NULL,
	before TEXT NOT NULL,
	groups TEXT NOT NULL,
	restore TEXT NOT NULL DEFAULT '{}',
	PRIMARY KEY (selection_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS operations (
	id TEXT PRIMARY KEY,
	selection_id TEXT NOT NULL,
	action_digest TEXT NOT NULL,
	mode TEXT NOT NULL,
	status TEXT NOT NULL,
	doc TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS operations_once ON operations(selection_id, action_digest) WHERE mode = 'execute';
CREATE INDEX IF NOT EXISTS operations_by_selection ON operations(selection_id, created_at);
CREATE TABLE IF NOT EXISTS targets (
	operation_id TEXT NOT NULL,
	id TEXT NOT NULL,
	outcome TEXT NOT NULL,
	version TEXT NOT NULL,
	before TEXT NOT NULL,
	restore TEXT NOT NULL DEFAULT '{}',
	doc TEXT NOT NULL,
	PRIMARY KEY (operation_id, id)
) WITHOUT ROWID;
DROP INDEX IF EXISTS targets_by_outcome;
CREATE TABLE IF NOT EXISTS approvals (
	id TEXT PRIMARY KEY,
	selection_id TEXT NOT NULL,
	doc TEXT NOT NULL,
	used_by TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_by_selection ON approvals(selection_id, created_at);
CREATE TABLE IF NOT EXISTS audit (
	seq INTEGER PRIMARY KEY AUTOINCREMENT,
	at INTEGER NOT NULL,
	operation_id TEXT NOT NULL,
	selection_id TEXT NOT NULL,
	doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_operation ON audit(operation_id, seq);
CREATE INDEX IF NOT EXISTS audit_by_selection ON audit(selection_id, seq);
`

// OpenSQLite opens (creating if needed) the store at path.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store directory: %w", err)
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	r.SetMaxOpenConns(4)
	s := &SQLite{w: w, r: r, path: path}
	if _, err := w.ExecContext(ctx, sqliteSchema); err != nil {
		s.Close()
		return nil, fmt.Errorf("store schema: %w", err)
	}
	_ = os.Chmod(path, 0o600)
	if s.journalStmt, err = w.PrepareContext(ctx, journalSQL); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	if s.recordsStmt, err = w.PrepareContext(ctx, insertRecordsSQL(recordsPerInsert)); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	s.group, s.groupDone = make(chan groupWrite, maxGroup), make(chan struct{})
	go s.groupCommit()
	return s, nil
}

// Path is the store's file.
func (s *SQLite) Path() string { return s.path }

// Close closes the store.
func (s *SQLite) Close() error {
	s.groupMu.Lock()
	if s.group != nil && !s.groupClosed {
		s.groupClosed = true
		close(s.group)
		<-s.groupDone
	}
	s.groupMu.Unlock()
	var errs []error
	for _, st := range []*sql.Stmt{s.journalStmt, s.recordsStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(append(errs, s.r.Close(), s.w.Close())...)
}

func mustJSON(v any) string {
	if m, ok := v.(map[string]any); ok && m != nil {
		if b, ok := appendStoredJSON(make([]byte, 0, 256), m); ok {
			return string(b)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("selection: marshal: " + err.Error())
	}
	return string(b)
}

// Stored documents of records and targets are maps decoded from JSON. The
// fast encoder and decoder below handle exactly those values and produce
// what encoding/json does, byte for byte and value for value; anything else
// (a float64, a struct, an invalid number, a document they do not read)
// makes them decline, and encoding/json does the work.

// appendStoredJSON appends json.Marshal(v)'s bytes, for the value types
// decoded JSON holds (with ints); false for any other value.
func appendStoredJSON(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		if x {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case string:
		return appendJSONString(b, x), true
	case json.Number:
		lit := string(x)
		if lit == "" {
			lit = "0" // as encoding/json writes the zero Number
		}
		if !validNumber(lit) {
			return b, false
		}
		return append(b, lit...), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendStoredJSON(b, e); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case []string:
		if x == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e)
		}
		return append(b, ']'), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		var buf [16]string
		keys := mapKeys(buf[:0], x)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendStoredJSON(b, x[k]); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

const lowerHex = "0123456789abcdef"

// appendJSONString is encoding/json's string encoding with HTML escaping:
// <, > and & as \u003c, \u003e, \u0026; \b \f \n \r \t; other control
// bytes as \u00XX; invalid UTF-8 bytes as \ufffd each; U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', lowerHex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validNumber is the JSON number grammar.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// storedParser reads a stored document into the values encoding/json's
// Decoder with UseNumber produces; ok is false for anything it does not
// handle (then encoding/json reads the document, and reports its errors).
type storedParser struct {
	s     string
	i     int
	depth int
}

// maxStoredDepth bounds the fast parser's nesting; deeper documents go to
// encoding/json.
const maxStoredDepth = 64

func (p *storedParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *storedParser) value() (any, bool) {
	p.ws()
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, false
}

func (p *storedParser) literal(lit string) bool {
	if !strings.HasPrefix(p.s[p.i:], lit) {
		return false
	}
	p.i += len(lit)
	return true
}

func (p *storedParser) number() (any, bool) {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	lit := p.s[start:p.i]
	if !validNumber(lit) {
		return nil, false
	}
	return json.Number(lit), true
}

func (p *storedParser) str() (string, bool) {
	p.i++ // the opening quote
	start := p.i
	var buf []byte
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			var out string
			if buf == nil {
				out = p.s[start:p.i]
			} else {
				out = string(append(buf, p.s[start:p.i]...))
			}
			p.i++
			return out, true
		case c < 0x20:
			return "", false
		case c == '\\':
			buf = append(buf, p.s[start:p.i]...)
			if p.i+1 >= len(p.s) {
				return "", false
			}
			switch e := p.s[p.i+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				if p.i+6 > len(p.s) {
					return "", false
				}
				r, err := strconv.ParseUint(p.s[p.i+2:p.i+6], 16, 32)
				if err != nil || strings.ContainsAny(p.s[p.i+2:p.i+6], "+-") || (r >= 0xD800 && r < 0xE000) {
					// Surrogates (pairs or not) go to encoding/json.
					return "", false
				}
				buf = utf8.AppendRune(buf, rune(r))
				p.i += 6
				start = p.i
				continue
			default:
				return "", false
			}
			p.i += 2
			start = p.i
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			p.i += size
		}
	}
	return "", false
}

func (p *storedParser) array() (any, bool) {
	if p.depth++; p.depth > maxStoredDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // [
	out := []any{}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, true
	}
	for {
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		out = append(out, v)
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

func (p *storedParser) object() (map[string]any, bool) {
	if p.depth++; p.depth > maxStoredDepth {
		return nil, false
	}
	defer func() { p.depth-- }()
	p.i++ // {
	out := map[string]any{}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, true
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value()
		if !ok {
			return nil, false
		}
		out[k] = v
		p.ws()
		if p.i >= len(p.s) {
			return nil, false
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return out, true
		default:
			return nil, false
		}
	}
}

// unmarshalMap decodes a stored JSON object into *m as unmarshal does.
func unmarshalMap(doc string, m *map[string]any) error {
	if *m == nil {
		p := storedParser{s: doc}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '{' {
			if v, ok := p.object(); ok {
				if p.ws(); p.i == len(p.s) {
					*m = v
					return nil
				}
			}
		}
	}
	return unmarshal(doc, m)
}

func (s *SQLite) CreateSelection(ctx context.Context, sel *Selection) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO selections (id, doc, state, created_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		sel.ID, mustJSON(sel), sel.State, sel.CreatedAt.UnixNano(), sel.ExpiresAt.UnixNano())
	if err != nil {
		return fmt.Errorf("create selection: %w", err)
	}
	return nil
}

// recordsPerInsert is how many records one INSERT statement adds: one
// statement per row made PutRecords pay a statement execution per record.
const recordsPerInsert = 100

// recordColumns is the number of values bound per record.
const recordColumns = 11

// insertRecordsSQL is an INSERT of n records.
func insertRecordsSQL(n int) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO records (selection_id, id, disposition, rule, note, version, source, review, before, groups, restore) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	}
	return b.String()
}

func (s *SQLite) PutRecords(ctx context.Context, selectionID string, recs []Record) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put records: %w", err)
	}
	defer tx.Rollback()
	full := tx.StmtContext(ctx, s.recordsStmt)
	defer full.Close()
	args := make([]any, 0, recordsPerInsert*recordColumns)
	for start := 0; start < len(recs); start += recordsPerInsert {
		chunk := recs[start:min(start+recordsPerInsert, len(recs))]
		args = args[:0]
		for _, r := range chunk {
			args = append(args, selectionID, r.ID, r.Disposition, r.Rule, r.Note, r.Version, r.Source,
				mustJSON(nonNil(r.Review)), mustJSON(nonNil(r.Before)), mustJSON(nonNil(r.Groups)), mustJSON(nonNil(r.Restore)))
		}
		if len(chunk) == recordsPerInsert {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, insertRecordsSQL(len(chunk)), args...)
		}
		if err != nil {
			return fmt.Errorf("put records %q to %q: %w", chunk[0].ID, chunk[len(chunk)-1].ID, err)
		}
	}
	return tx.Commit()
}

func nonNil(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func (s *SQLite) FinishSelection(ctx context.Context, sel *Selection) error {
	res, err := s.w.ExecContext(ctx, `UPDATE selections SET doc = ?, state = ?, expires_at = ? WHERE id = ?`,
		mustJSON(sel), sel.State, sel.ExpiresAt.UnixNano(), sel.ID)
	if err != nil {
		return fmt.Errorf("finish selection: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *SQLite) Selection(ctx context.Context, id string) (*Selection, error) {
	var doc string
	err := s.r.QueryRowContext(ctx, `SELECT doc FROM selections WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read selection: %w", err)
	}
	var sel Selection
	if err := unmarshal(doc, &sel); err != nil {
		return nil, err
	}
	return &sel, nil
}

func unmarshal(doc string, v any) error {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode stored document: %w", err)
	}
	return nil
}

// scanDocs decodes every row of a one-column `SELECT doc` query and closes
// the rows.
func scanDocs[T any](rows *sql.Rows) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc string
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var v T
		if err := unmarshal(doc, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanRecord(rows *sql.Rows) (Record, error) {
	var r Record
	var review, before, groups, restore string
	if err := rows.Scan(&r.ID, &r.Disposition, &r.Rule, &r.Note, &r.Version, &r.Source, &review, &before, &groups, &restore); err != nil {
		return r, err
	}
	if err := errors.Join(unmarshalMap(review, &r.Review), unmarshalMap(before, &r.Before), unmarshalMap(groups, &r.Groups), unmarshalMap(restore, &r.Restore)); err != nil {
		return r, err
	}
	if len(r.Restore) == 0 {
		r.Restore = nil
	}
	return r, nil
}

const recordCols = `id, disposition, rule, note, version, source, review, before, groups, restore`

func (s *SQLite) Records(ctx context.Context, selectionID string, q RecordQuery) ([]Record, error) {
	where := []string{"selection_id = ?", "id > ?"}
	args := []any{selectionID, q.After}
	if q.Disposition != "" {
		where = append(where, "disposition = ?")
		args = append(args, q.Disposition)
	}
	for _, k := range sortedKeys(q.Group) {
		where = append(where, "json_extract(groups, ?) IS json_extract(?, '$')")
		args = append(args, "$."+quoteJSONKey(k), q.Group[k])
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT `+recordCols+` FROM records WHERE `+strings.Join(where, " AND ")+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("read records: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// quoteJSONKey quotes a key for a JSON path.
func quoteJSONKey(k string) string {
	b, _ := json.Marshal(k)
	return string(b)
}

func (s *SQLite) EachRecord(ctx context.Context, selectionID string, fn func(Record) error) error {
	// Page by keyset so that no read transaction is held open for long.
	after := ""
	for {
		recs, err := s.Records(ctx, selectionID, RecordQuery{After: after, Limit: 2000})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(recs) < 2000 {
			return nil
		}
		after = recs[len(recs)-1].ID
	}
}

func (s *SQLite) CreateOperation(ctx context.Context, op *Operation) (*Operation, bool, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	defer tx.Rollback()
	if op.Mode == ModeExecute {
		var doc string
		err := tx.QueryRowContext(ctx, `SELECT doc FROM operations WHERE selection_id = ? AND action_digest = ? AND mode = 'execute'`,
			op.SelectionID, op.ActionDigest).Scan(&doc)
		if err == nil {
			var existing Operation
			if err := unmarshal(doc, &existing); err != nil {
				return nil, false, err
			}
			return &existing, false, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("create operation: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO operations (id, selection_id, action_digest, mode, status, doc, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		op.ID, op.SelectionID, op.ActionDigest, op.Mode, op.Status, mustJSON(op), op.CreatedAt.UnixNano(), op.UpdatedAt.UnixNano()); err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("create operation: %w", err)
	}
	return op, true, nil
}

func (s *SQLite) Operation(ctx context.Context, id string) (*Operation, error) {
	var doc string
	err := s.r.QueryRowContext(ctx, `SELECT doc FROM operations WHERE id = ?`, id).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read operation: %w", err)
	}
	var op Operation
	return &op, unmarshal(doc, &op)
}

func (s *SQLite) OperationsOf(ctx context.Context, selectionID string) ([]*Operation, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM operations WHERE selection_id = ? ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	return scanDocs[*Operation](rows)
}

func (s *SQLite) UpdateOperation(ctx context.Context, op *Operation) error {
	res, err := s.w.ExecContext(ctx, `UPDATE operations SET status = ?, doc = ?, updated_at = ? WHERE id = ?`,
		op.Status, mustJSON(op), op.UpdatedAt.UnixNano(), op.ID)
	if err != nil {
		return fmt.Errorf("update operation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func (s *SQLite) InitTargets(ctx context.Context, operationID, selectionID string) (int, error) {
	res, err := s.w.ExecContext(ctx, `INSERT INTO targets (operation_id, id, outcome, version, before, restore, doc)
		SELECT ?, id, 'pending', version, before, restore, '{}' FROM records WHERE selection_id = ? AND disposition = 'member'`,
		operationID, selectionID)
	if err != nil {
		return 0, fmt.Errorf("init targets: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// targetDoc is what a target row keeps besides its key, outcome, version
// and before-values.
type targetDoc struct {
	HTTPStatus int            `json:"http_status,omitempty"`
	Problem    any            `json:"problem,omitempty"`
	Note       string         `json:"note,omitempty"`
	After      map[string]any `json:"after,omitempty"`
	RequestID  string         `json:"request_id,omitempty"`
	Attempts   int            `json:"attempts,omitempty"`
	Unobserved int            `json:"unobserved_attempts,omitempty"`
	AttemptAt  *time.Time     `json:"attempt_at,omitempty"`
	DoneAt     *time.Time     `json:"done_at,omitempty"`
}

const journalSQL = `UPDATE targets SET outcome = ?, version = ?, doc = ? WHERE operation_id = ? AND id = ?`

func (s *SQLite) Journal(ctx context.Context, operationID string, entries []Target) error {
	if len(entries) == 0 {
		return nil
	}
	return s.write(ctx, "journal", s.journalEntries(operationID, entries))
}

// journalEntries applies entries in a write transaction.
func (s *SQLite) journalEntries(operationID string, entries []Target) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		ctx := context.Background()
		stmt := tx.StmtContext(ctx, s.journalStmt)
		defer stmt.Close()
		for _, t := range entries {
			doc := targetDoc{HTTPStatus: t.HTTPStatus, Note: t.Note, After: t.After, RequestID: t.RequestID,
				Attempts: t.Attempts, Unobserved: t.Unobserved, AttemptAt: t.AttemptAt, DoneAt: t.DoneAt}
			if t.Problem != nil {
				doc.Problem = t.Problem
			}
			res, err := stmt.ExecContext(ctx, t.Outcome, t.Version, mustJSON(doc), operationID, t.ID)
			if err != nil {
				return fmt.Errorf("journal %q: %w", t.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("journal %q: %w", t.ID, ErrNotFound)
			}
		}
		return nil
	}
}

func (s *SQLite) Targets(ctx context.Context, operationID string, q TargetQuery) ([]Target, error) {
	where := "operation_id = ? AND id > ?"
	args := []any{operationID, q.After}
	if q.Outcome != "" {
		where += " AND outcome = ?"
		args = append(args, q.Outcome)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, `SELECT id, outcome, version, before, restore, doc FROM targets WHERE `+where+` ORDER BY id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("read targets: %w", err)
	}
	defer rows.Close()
	var out []Target
	for rows.Next() {
		var t Target
		var before, restore, doc string
		if err := rows.Scan(&t.ID, &t.Outcome, &t.Version, &before, &restore, &doc); err != nil {
			return nil, fmt.Errorf("read targets: %w", err)
		}
		t.OperationID = operationID
		if err := decodeTarget(&t, before, doc); err != nil {
			return nil, err
		}
		if err := unmarshalMap(restore, &t.Restore); err != nil {
			return nil, err
		}
		if len(t.Restore) == 0 {
			t.Restore = nil
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func decodeTarget(t *Target, before, doc string) error {
	var d struct {
		targetDoc
		Problem json.RawMessage `json:"problem,omitempty"`
	}
	if err := errors.Join(unmarshalMap(before, &t.Before), unmarshal(doc, &d)); err != nil {
		return err
	}
	t.HTTPStatus, t.Note, t.After, t.RequestID, t.Attempts, t.Unobserved, t.AttemptAt, t.DoneAt =
		d.HTTPStatus, d.Note, d.After, d.RequestID, d.Attempts, d.Unobserved, d.AttemptAt, d.DoneAt
	if len(d.Problem) > 0 {
		if err := json.Unmarshal(d.Problem, &t.Problem); err != nil {
			return fmt.Errorf("decode target problem: %w", err)
		}
	}
	return nil
}

func (s *SQLite) CountTargets(ctx context.Context, operationID string) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT outcome, COUNT(*) FROM targets WHERE operation_id = ? GROUP BY outcome`, operationID)
	if err != nil {
		return nil, fmt.Errorf("count targets: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, rows.Err()
}

func (s *SQLite) Recover(ctx context.Context, staleBefore time.Time) ([]string, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT doc FROM operations WHERE status = ? AND updated_at < ?`, OpRunning, staleBefore.UnixNano())
	if err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	ops, err := scanDocs[*Operation](rows)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, op := range ops {
		if _, err := tx.ExecContext(ctx, `UPDATE targets SET outcome = 'unknown',
			doc = json_set(doc, '$.note', 'airlock stopped while this write was in flight; its outcome was not observed')
			WHERE operation_id = ? AND outcome = 'in_flight'`, op.ID); err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		op.Status = OpInterrupted
		op.StopReason = "airlock stopped while the operation was running; writes in flight are unknown until reconciled"
		if _, err := tx.ExecContext(ctx, `UPDATE operations SET status = ?, doc = ? WHERE id = ?`, op.Status, mustJSON(op), op.ID); err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
		ids = append(ids, op.ID)
	}
	return ids, tx.Commit()
}

func (s *SQLite) Meta(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return v, err
}

func (s *SQLite) SetMeta(ctx context.Context, key string, value []byte) error {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
		return fmt.Errorf("meta: %w", err)
	}
	return nil
}

func (s *SQLite) RecentSelections(ctx context.Context, limit int) ([]*Selection, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM selections WHERE state = ? ORDER BY created_at DESC, id LIMIT ?`, StateReady, limit)
	if err != nil {
		return nil, fmt.Errorf("read selections: %w", err)
	}
	return scanDocs[*Selection](rows)
}

func (s *SQLite) SetMetaIfAbsent(ctx context.Context, key string, value []byte) ([]byte, error) {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING`, key, value); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	var v []byte
	if err := s.w.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return v, nil
}

func (s *SQLite) PutApproval(ctx context.Context, a *Approval) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO approvals (id, selection_id, doc, used_by, created_at) VALUES (?, ?, ?, ?, ?)`,
		a.ID, a.SelectionID, mustJSON(a), a.UsedBy, a.CreatedAt.UnixNano())
	if err != nil {
		return fmt.Errorf("put approval: %w", err)
	}
	return nil
}

func (s *SQLite) Approvals(ctx context.Context, selectionID string) ([]*Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM approvals WHERE selection_id = ? ORDER BY created_at, id`, selectionID)
	if err != nil {
		return nil, fmt.Errorf("read approvals: %w", err)
	}
	return scanDocs[*Approval](rows)
}

func (s *SQLite) UseApproval(ctx context.Context, approvalID, operationID string, at time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("use approval: %w", err)
	}
	defer tx.Rollback()
	var doc, usedBy string
	err = tx.QueryRowContext(ctx, `SELECT doc, used_by FROM approvals WHERE id = ?`, approvalID).Scan(&doc, &usedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("use approval: %w", err)
	}
	if usedBy != "" {
		return ErrConflict
	}
	var a Approval
	if err := unmarshal(doc, &a); err != nil {
		return err
	}
	a.UsedAt, a.UsedBy = &at, operationID
	if _, err := tx.ExecContext(ctx, `UPDATE approvals SET doc = ?, used_by = ? WHERE id = ? AND used_by = ''`, mustJSON(&a), operationID, approvalID); err != nil {
		return fmt.Errorf("use approval: %w", err)
	}
	return tx.Commit()
}

func (s *SQLite) Audit(ctx context.Context, events []AuditEvent) error {
	if len(events) == 0 {
		return nil
	}
	return s.write(ctx, "audit", auditEvents(events))
}

// auditEvents inserts events in a write transaction.
func auditEvents(events []AuditEvent) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		for _, e := range events {
			if _, err := tx.ExecContext(context.Background(), `INSERT INTO audit (at, operation_id, selection_id, doc) VALUES (?, ?, ?, ?)`,
				e.At.UnixNano(), e.OperationID, e.SelectionID, mustJSON(e)); err != nil {
				return fmt.Errorf("audit: %w", err)
			}
		}
		return nil
	}
}

func (s *SQLite) AuditTrail(ctx context.Context, operationID string) ([]AuditEvent, error) {
	op, err := s.Operation(ctx, operationID)
	if err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT doc FROM audit WHERE operation_id = ? OR (operation_id = '' AND selection_id = ?) ORDER BY seq`,
		operationID, op.SelectionID)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return scanDocs[AuditEvent](rows)
}
