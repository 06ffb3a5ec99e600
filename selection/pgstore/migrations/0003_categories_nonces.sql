-- The group values approved commits of an action have held, per
-- unknown_category dimension (canonical JSON), one row each: a value is
-- added with INSERT … ON CONFLICT DO NOTHING, so replicas approving at once
-- keep each other's. They were one JSON list per action and dimension in
-- meta (key seen/ACTION/DIM), rewritten whole; those lists move here. The
-- key is split at its first slash after seen/; a value that is not a JSON
-- list stays in meta, unread.
CREATE TABLE approved_categories (
	action TEXT COLLATE "C" NOT NULL,
	dim TEXT COLLATE "C" NOT NULL,
	value TEXT COLLATE "C" NOT NULL,
	PRIMARY KEY (action, dim, value)
);
DO $$
DECLARE
	m RECORD;
	list jsonb;
	rest TEXT;
BEGIN
	FOR m IN SELECT key, value FROM meta WHERE left(key, 5) = 'seen/' AND strpos(substr(key, 6), '/') > 1 LOOP
		BEGIN
			list := convert_from(m.value, 'UTF8')::jsonb;
		EXCEPTION WHEN others THEN
			CONTINUE;
		END;
		IF jsonb_typeof(list) <> 'array' THEN
			CONTINUE;
		END IF;
		rest := substr(m.key, 6);
		INSERT INTO approved_categories (action, dim, value)
		SELECT split_part(rest, '/', 1), substr(rest, strpos(rest, '/') + 1), e.v #>> '{}'
		FROM jsonb_array_elements(list) AS e(v)
		WHERE jsonb_typeof(e.v) = 'string'
		ON CONFLICT DO NOTHING;
		DELETE FROM meta WHERE key = m.key;
	END LOOP;
END $$;

-- The nonces of answered approval requests, each with who answered first
-- (a request id), kept until expires_at (Unix nanoseconds), past the signed
-- state's own expiry, then dropped. Those kept in meta
-- (elicitation_used/NONCE) carry no expiry: they move here for a day.
CREATE TABLE used_nonces (
	nonce TEXT COLLATE "C" PRIMARY KEY,
	used_by TEXT NOT NULL,
	expires_at BIGINT NOT NULL
);
CREATE INDEX used_nonces_by_expiry ON used_nonces(expires_at);
INSERT INTO used_nonces (nonce, used_by, expires_at)
SELECT substr(key, 18), convert_from(value, 'UTF8'), (extract(epoch FROM now()) * 1000000000)::bigint + 86400000000000
FROM meta WHERE left(key, 17) = 'elicitation_used/'
ON CONFLICT DO NOTHING;
DELETE FROM meta WHERE left(key, 17) = 'elicitation_used/';
