-- The durable job queue: a claim picks the oldest claimable row FOR UPDATE SKIP LOCKED.
CREATE TABLE job_queue (
    seq              BIGSERIAL PRIMARY KEY,
    id               TEXT   NOT NULL UNIQUE,
    kind             TEXT   NOT NULL,
    profile          TEXT   NOT NULL,
    state            TEXT   NOT NULL,
    stage            TEXT   NOT NULL,
    body             TEXT   NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    worker           TEXT,
    lease_token      TEXT,
    lease_expires_at BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX job_queue_claim ON job_queue (state, seq);
CREATE INDEX job_queue_profile ON job_queue (profile, seq);
