-- Every running operation is held by a lease: its holder, a fencing epoch
-- that each acquisition advances, and its expiry (Unix nanoseconds; 0 when
-- released). Operations left running by a store without leases read as
-- expired, to be taken over.
ALTER TABLE operations ADD COLUMN lease_holder TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;
CREATE INDEX operations_by_lease ON operations(status, lease_expires);

-- The audit trail is append-only, whichever process writes to the store.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
