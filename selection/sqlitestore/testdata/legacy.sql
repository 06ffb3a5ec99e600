-- A store written by airlock before versioned migrations and before the
-- restore columns: no schema_migrations table, no leases.
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE selections (id TEXT PRIMARY KEY, doc TEXT NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
CREATE INDEX selections_by_time ON selections(created_at);
CREATE TABLE records (selection_id TEXT NOT NULL, id TEXT NOT NULL, disposition TEXT NOT NULL, rule INTEGER NOT NULL, note TEXT NOT NULL,
	version TEXT NOT NULL, source TEXT NOT NULL, review TEXT NOT NULL, before TEXT NOT NULL, groups TEXT NOT NULL,
	PRIMARY KEY (selection_id, id)) WITHOUT ROWID;
CREATE TABLE operations (id TEXT PRIMARY KEY, selection_id TEXT NOT NULL, action_digest TEXT NOT NULL, mode TEXT NOT NULL, status TEXT NOT NULL,
	doc TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE UNIQUE INDEX operations_once ON operations(selection_id, action_digest) WHERE mode = 'execute';
CREATE TABLE targets (operation_id TEXT NOT NULL, id TEXT NOT NULL, outcome TEXT NOT NULL, version TEXT NOT NULL, before TEXT NOT NULL,
	doc TEXT NOT NULL, PRIMARY KEY (operation_id, id)) WITHOUT ROWID;
CREATE INDEX targets_by_outcome ON targets(operation_id, outcome);
CREATE TABLE approvals (id TEXT PRIMARY KEY, selection_id TEXT NOT NULL, doc TEXT NOT NULL, used_by TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
CREATE TABLE audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, operation_id TEXT NOT NULL, selection_id TEXT NOT NULL, doc TEXT NOT NULL);

INSERT INTO selections VALUES ('sel_old', '{"selection_id":"sel_old","state":"ready","digest":"sha256:d"}', 'ready', 1, 2);
INSERT INTO records VALUES ('sel_old', 'r1', 'member', 0, '', 'v1', 'main', '{"id":"r1"}', '{"paused":false}', '{"region":"eu"}');
INSERT INTO operations VALUES ('op_old', 'sel_old', 'sha256:a', 'execute', 'running', '{"operation_id":"op_old","selection_id":"sel_old","status":"running"}', 1, 1);
INSERT INTO targets VALUES ('op_old', 'r1', 'in_flight', 'v1', '{"paused":false}', '{"attempts":1}');
