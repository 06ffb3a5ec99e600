-- airlock's PostgreSQL schema. Ids sort in byte order (COLLATE "C"), as
-- the store contract requires; times are Unix nanoseconds, as in SQLite.
CREATE TABLE meta (key TEXT COLLATE "C" PRIMARY KEY, value BYTEA NOT NULL);

CREATE TABLE selections (
	id TEXT COLLATE "C" PRIMARY KEY,
	doc TEXT NOT NULL,
	state TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE INDEX selections_by_time ON selections(state, created_at);

CREATE TABLE records (
	selection_id TEXT COLLATE "C" NOT NULL,
	id TEXT COLLATE "C" NOT NULL,
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
);

-- One execute operation per (selection, action) whichever replica asks: a
-- constraint, not a check before the insert.
CREATE TABLE operations (
	id TEXT COLLATE "C" PRIMARY KEY,
	selection_id TEXT COLLATE "C" NOT NULL,
	action_digest TEXT NOT NULL,
	mode TEXT NOT NULL,
	status TEXT NOT NULL,
	doc TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	lease_holder TEXT NOT NULL DEFAULT '',
	lease_epoch BIGINT NOT NULL DEFAULT 0,
	lease_expires BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX operations_once ON operations(selection_id, action_digest) WHERE mode = 'execute';
CREATE INDEX operations_by_selection ON operations(selection_id, created_at);
CREATE INDEX operations_by_lease ON operations(status, lease_expires);

CREATE TABLE targets (
	operation_id TEXT COLLATE "C" NOT NULL,
	id TEXT COLLATE "C" NOT NULL,
	outcome TEXT NOT NULL,
	version TEXT NOT NULL,
	before TEXT NOT NULL,
	restore TEXT NOT NULL DEFAULT '{}',
	doc TEXT NOT NULL,
	PRIMARY KEY (operation_id, id)
);

CREATE TABLE approvals (
	id TEXT COLLATE "C" PRIMARY KEY,
	selection_id TEXT COLLATE "C" NOT NULL,
	doc TEXT NOT NULL,
	used_by TEXT NOT NULL DEFAULT '',
	created_at BIGINT NOT NULL
);
CREATE INDEX approvals_by_selection ON approvals(selection_id, created_at);

CREATE TABLE audit (
	seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at BIGINT NOT NULL,
	operation_id TEXT COLLATE "C" NOT NULL,
	selection_id TEXT COLLATE "C" NOT NULL,
	doc TEXT NOT NULL
);
CREATE INDEX audit_by_operation ON audit(operation_id, seq);
CREATE INDEX audit_by_selection ON audit(selection_id, seq);

-- The audit trail is append-only, whichever replica or client writes.
CREATE FUNCTION airlock_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the audit trail is append-only';
END
$$;
CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
	FOR EACH ROW EXECUTE FUNCTION airlock_audit_append_only();
CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
	FOR EACH STATEMENT EXECUTE FUNCTION airlock_audit_append_only();

-- Frozen search_all scans, so that a cursor continues on any replica.
CREATE TABLE scans (
	id TEXT COLLATE "C" PRIMARY KEY,
	revision INTEGER NOT NULL,
	doc BYTEA NOT NULL,
	bytes INTEGER NOT NULL,
	used_at BIGINT NOT NULL
);
CREATE INDEX scans_by_use ON scans(used_at);
