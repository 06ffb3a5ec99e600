-- Who asked: the subject and OAuth client id of the principal behind every
-- selection (who previewed), operation (who committed), approval (who
-- decided) and audit line. Rows written before read as unrecorded.
ALTER TABLE selections ADD COLUMN subject TEXT NOT NULL DEFAULT 'unrecorded';
ALTER TABLE selections ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN subject TEXT NOT NULL DEFAULT 'unrecorded';
ALTER TABLE operations ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN subject TEXT NOT NULL DEFAULT 'unrecorded';
ALTER TABLE approvals ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE audit ADD COLUMN subject TEXT NOT NULL DEFAULT 'unrecorded';
ALTER TABLE audit ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
CREATE INDEX audit_by_subject ON audit(subject, seq);
