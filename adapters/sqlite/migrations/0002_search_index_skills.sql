-- Keyed documents with full-text search (searchable context blocks), and skills.

CREATE TABLE index_namespaces (
    key  INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

CREATE TABLE index_documents (
    doc           INTEGER PRIMARY KEY,
    namespace_key INTEGER NOT NULL REFERENCES index_namespaces(key),
    id            TEXT    NOT NULL,
    text          TEXT    NOT NULL,
    scope         TEXT GENERATED ALWAYS AS ('n' || namespace_key) VIRTUAL,
    UNIQUE (namespace_key, id)
);

CREATE VIRTUAL TABLE index_fts USING fts5(
    text,
    scope,
    content = 'index_documents',
    content_rowid = 'doc',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO index_fts(index_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');

CREATE TRIGGER index_fts_insert AFTER INSERT ON index_documents BEGIN
    INSERT INTO index_fts(rowid, text, scope) VALUES (new.doc, new.text, 'n' || new.namespace_key);
END;
CREATE TRIGGER index_fts_delete AFTER DELETE ON index_documents BEGIN
    INSERT INTO index_fts(index_fts, rowid, text, scope)
    VALUES ('delete', old.doc, old.text, 'n' || old.namespace_key);
END;
CREATE TRIGGER index_fts_update AFTER UPDATE OF text ON index_documents BEGIN
    INSERT INTO index_fts(index_fts, rowid, text, scope)
    VALUES ('delete', old.doc, old.text, 'n' || old.namespace_key);
    INSERT INTO index_fts(rowid, text, scope) VALUES (new.doc, new.text, 'n' || new.namespace_key);
END;

CREATE TABLE skills (
    namespace   TEXT NOT NULL,
    key         TEXT NOT NULL,
    content     TEXT NOT NULL,
    description TEXT,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
