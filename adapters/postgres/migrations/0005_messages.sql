-- The message tree of every session. Each session id maps to a small key whose row is the
-- session's write lock (appends take it FOR UPDATE) and holds its insertion counter.
CREATE TABLE message_sessions (
    key        BIGSERIAL PRIMARY KEY,
    session_id TEXT   NOT NULL UNIQUE,
    next_seq   BIGINT NOT NULL DEFAULT 1
);

-- One row per message. `seq` is the insertion order within the session. `run_id` groups a
-- linear run: a message whose parent had no children when it was appended joins the
-- parent's run, so each run is a chain ordered by `seq` and a root-to-leaf path is one range
-- scan per run. The stored English tsvector is the `messages` text index, written in the
-- same transaction as the row.
CREATE TABLE messages (
    session_key BIGINT NOT NULL REFERENCES message_sessions(key) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    id          TEXT   NOT NULL,
    parent_seq  BIGINT,
    run_id      BIGINT NOT NULL,
    role        TEXT   NOT NULL,
    content     TEXT   NOT NULL,
    search_text TEXT   NOT NULL,
    bytes       BIGINT NOT NULL,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED,
    PRIMARY KEY (session_key, seq),
    UNIQUE (session_key, id)
);
CREATE INDEX messages_parent ON messages (session_key, parent_seq);
CREATE INDEX messages_run ON messages (session_key, run_id, seq);
CREATE INDEX messages_tsv ON messages USING GIN (tsv);

CREATE TABLE compactions (
    seq             BIGSERIAL PRIMARY KEY,
    session_key     BIGINT NOT NULL REFERENCES message_sessions(key) ON DELETE CASCADE,
    summary         TEXT   NOT NULL,
    from_message_id TEXT   NOT NULL,
    to_message_id   TEXT   NOT NULL,
    created_at      BIGINT NOT NULL
);
CREATE INDEX compactions_session ON compactions (session_key, seq);

-- Skills of context blocks, partitioned by the block's namespace.
CREATE TABLE skills (
    namespace   TEXT NOT NULL,
    key         TEXT COLLATE "C" NOT NULL,
    content     TEXT NOT NULL,
    description TEXT,
    PRIMARY KEY (namespace, key)
);
