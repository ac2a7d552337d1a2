-- The general text index: documents of any namespace with their fields, a stored English
-- tsvector (stemming, stop words) and a GIN index over it.
CREATE TABLE text_documents (
    namespace TEXT NOT NULL,
    id        TEXT NOT NULL,
    text      TEXT NOT NULL,
    session   TEXT,
    role      TEXT,
    kind      TEXT,
    key       TEXT,
    time      BIGINT,
    tsv       tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX text_documents_tsv ON text_documents USING GIN (tsv);
