-- Sessions, the message tree with its FTS5 index, compaction overlays, key-value store.

-- Each session id maps to a small integer used by every row of that session.
CREATE TABLE session_keys (
    key        INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE
);

-- One row per message. `seq` is the monotonic insertion order. `run_id` groups a linear run:
-- a message whose parent had no children when it was appended joins the parent's run, so
-- each run is a chain ordered by `seq`, and a root-to-leaf path is a few range scans.
CREATE TABLE messages (
    seq         INTEGER PRIMARY KEY,
    session_key INTEGER NOT NULL REFERENCES session_keys(key),
    id          TEXT    NOT NULL,
    parent_seq  INTEGER REFERENCES messages(seq),
    run_id      INTEGER NOT NULL,
    role        TEXT    NOT NULL,
    content     TEXT    NOT NULL,
    search_text TEXT    NOT NULL,
    bytes       INTEGER NOT NULL,
    scope       TEXT GENERATED ALWAYS AS ('s' || session_key) VIRTUAL,
    UNIQUE (session_key, id)
);
CREATE INDEX messages_parent ON messages(parent_seq);
CREATE INDEX messages_run ON messages(run_id, seq);
CREATE INDEX messages_session_seq ON messages(session_key, seq);

-- External-content full-text index over the text parts. `scope` holds one token per
-- session so a session-scoped query intersects posting lists instead of filtering rows.
CREATE VIRTUAL TABLE messages_fts USING fts5(
    search_text,
    scope,
    content = 'messages',
    content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');

-- The index changes in the same transaction as the rows it indexes.
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN new.search_text <> '' BEGIN
    INSERT INTO messages_fts(rowid, search_text, scope)
    VALUES (new.seq, new.search_text, 's' || new.session_key);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN old.search_text <> '' BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, search_text, scope)
    VALUES ('delete', old.seq, old.search_text, 's' || old.session_key);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF search_text ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, search_text, scope)
    SELECT 'delete', old.seq, old.search_text, 's' || old.session_key WHERE old.search_text <> '';
    INSERT INTO messages_fts(rowid, search_text, scope)
    SELECT new.seq, new.search_text, 's' || new.session_key WHERE new.search_text <> '';
END;

CREATE TABLE compactions (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key     INTEGER NOT NULL REFERENCES session_keys(key),
    summary         TEXT    NOT NULL,
    from_message_id TEXT    NOT NULL,
    to_message_id   TEXT    NOT NULL,
    created_at      INTEGER NOT NULL
);
CREATE INDEX compactions_session ON compactions(session_key, seq);

CREATE TABLE sessions (
    ord               INTEGER PRIMARY KEY AUTOINCREMENT,
    id                TEXT    NOT NULL UNIQUE,
    name              TEXT,
    parent_session_id TEXT,
    model             TEXT,
    source            TEXT,
    input_tokens      INTEGER NOT NULL DEFAULT 0,
    output_tokens     INTEGER NOT NULL DEFAULT 0,
    cost              REAL    NOT NULL DEFAULT 0,
    end_reason        TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);
CREATE INDEX sessions_updated ON sessions(updated_at DESC, ord DESC);

CREATE TABLE kv (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
