-- Frozen search_all scans, so that a continuation cursor continues on any
-- process sharing the store. used_at is Unix nanoseconds.
CREATE TABLE scans (
	id TEXT PRIMARY KEY,
	revision INTEGER NOT NULL,
	doc BLOB NOT NULL,
	bytes INTEGER NOT NULL,
	used_at INTEGER NOT NULL
);
CREATE INDEX scans_by_use ON scans(used_at);
