-- A member's frame: its declared fields outside the action's effect, each
-- as a digest of the value the preview read (JSON object, field to
-- digest). A write's answer or re-read that shows one of them otherwise
-- changed more than the effect. Rows written before have none, and their
-- writes are judged by the effect alone.
ALTER TABLE records ADD COLUMN frame TEXT NOT NULL DEFAULT '{}';
ALTER TABLE targets ADD COLUMN frame TEXT NOT NULL DEFAULT '{}';
