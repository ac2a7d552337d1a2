-- Fields of text-index documents (filters and hits), and the job queue with leases.

ALTER TABLE index_documents ADD COLUMN session TEXT;
ALTER TABLE index_documents ADD COLUMN role TEXT;
ALTER TABLE index_documents ADD COLUMN kind TEXT;
ALTER TABLE index_documents ADD COLUMN key TEXT;
ALTER TABLE index_documents ADD COLUMN time INTEGER;

-- Durable background jobs of a deployment. A worker claims a job by writing its lease (a
-- token and an expiry) in one statement; every later write of that job names the token.
CREATE TABLE job_queue (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    kind             TEXT    NOT NULL,
    profile          TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    stage            TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    worker           TEXT,
    lease_token      TEXT,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX job_queue_claim ON job_queue(state, seq);
CREATE INDEX job_queue_profile ON job_queue(profile, seq);
