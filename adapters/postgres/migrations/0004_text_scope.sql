-- Each profile's text index is a scope of the same table ('' is the deployment-wide index),
-- so deleting a profile's index is one statement over its own rows.
ALTER TABLE text_documents ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE text_documents DROP CONSTRAINT text_documents_pkey;
ALTER TABLE text_documents ADD PRIMARY KEY (scope, namespace, id);
