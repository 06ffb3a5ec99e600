-- The group values approved commits of an action have held, per
-- unknown_category dimension (canonical JSON), one row each: a value is
-- added with INSERT … ON CONFLICT DO NOTHING, so processes approving at
-- once keep each other's. They were one JSON list per action and dimension
-- in meta (key seen/ACTION/DIM), rewritten whole; those lists move here.
-- The key is split at its first slash after seen/; a value that is not a
-- JSON list stays in meta, unread.
CREATE TABLE approved_categories (
	action TEXT NOT NULL,
	dim TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (action, dim, value)
);
INSERT INTO approved_categories (action, dim, value)
SELECT substr(m.key, 6, instr(substr(m.key, 6), '/') - 1), substr(m.key, 6 + instr(substr(m.key, 6), '/')), j.value
FROM meta m, json_each(CASE WHEN json_valid(CAST(m.value AS TEXT)) AND json_type(CAST(m.value AS TEXT)) = 'array' THEN CAST(m.value AS TEXT) ELSE '[]' END) j
WHERE substr(m.key, 1, 5) = 'seen/' AND instr(substr(m.key, 6), '/') > 1 AND j.type = 'text'
ON CONFLICT DO NOTHING;
DELETE FROM meta WHERE substr(key, 1, 5) = 'seen/' AND instr(substr(key, 6), '/') > 1
	AND CASE WHEN json_valid(CAST(value AS TEXT)) THEN json_type(CAST(value AS TEXT)) = 'array' ELSE 0 END;

-- The nonces of answered approval requests, each with who answered first
-- (a request id), kept until expires_at (Unix nanoseconds), past the signed
-- state's own expiry, then dropped. Those kept in meta
-- (elicitation_used/NONCE) carry no expiry: they move here for a day.
CREATE TABLE used_nonces (
	nonce TEXT PRIMARY KEY,
	used_by TEXT NOT NULL,
	expires_at INTEGER NOT NULL
);
CREATE INDEX used_nonces_by_expiry ON used_nonces(expires_at);
INSERT INTO used_nonces (nonce, used_by, expires_at)
SELECT substr(key, 18), CAST(value AS TEXT), CAST(strftime('%s', 'now') AS INTEGER) * 1000000000 + 86400000000000
FROM meta WHERE substr(key, 1, 17) = 'elicitation_used/'
ON CONFLICT DO NOTHING;
DELETE FROM meta WHERE substr(key, 1, 17) = 'elicitation_used/';
