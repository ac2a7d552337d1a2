-- A version per vector namespace, from one counter bumped by every vector write, so an
-- index instance (in this process or another) can tell with one lookup that its cached
-- matrix is stale. The counter never goes back, so a cleared and recreated namespace never
-- reuses a version.
CREATE TABLE vector_epoch (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    epoch INTEGER NOT NULL
);
INSERT INTO vector_epoch (id, epoch) VALUES (1, 0);
ALTER TABLE vector_namespaces ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
