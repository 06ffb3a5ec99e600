-- The schema as airlock created it before versioned migrations. IF NOT
-- EXISTS lets a store created then adopt it; the restore columns it lacked
-- at first are added in Go when an unversioned store does not have them.
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
