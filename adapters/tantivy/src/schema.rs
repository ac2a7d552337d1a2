//! The index's schema: one text field analyzed in the index's language, the fields the port
//! filters on as exact terms, and a unique key per document.

use memory_core::TextLanguage;
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};

use crate::language::language_of;

/// The name of the analyzed text field.
const TEXT: &str = "text";

/// The name of the document id field.
pub(crate) const ID: &str = "id";

/// The fields of the schema.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub namespace: Field,
    /// `namespace \0 id`: the unique key, for replace and delete.
    pub key: Field,
    pub id: Field,
    pub text: Field,
    pub session: Field,
    pub role: Field,
    pub kind: Field,
    pub topic: Field,
    pub time: Field,
}

/// How an index keeps its documents' ids: every new index also as a fast (columnar) field,
/// so a search returns ids without reading stored documents; indexes made before that keep
/// them stored only, and are read that way until rebuilt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdColumn {
    /// Stored and fast.
    Fast,
    /// Stored only (indexes made before fast ids).
    StoredOnly,
}

/// The schema of an index whose text field is analyzed by the analyzer named `analyzer`.
pub(crate) fn schema(analyzer: &str, ids: IdColumn) -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        namespace: builder.add_text_field("namespace", STRING),
        key: builder.add_text_field("key", STRING),
        id: match ids {
            IdColumn::Fast => builder.add_text_field(ID, STRING | STORED | FAST),
            IdColumn::StoredOnly => builder.add_text_field(ID, STRING | STORED),
        },
        text: builder.add_text_field(TEXT, text_options),
        session: builder.add_text_field("session", STRING | STORED),
        role: builder.add_text_field("role", STRING | STORED),
        kind: builder.add_text_field("kind", STRING | STORED),
        topic: builder.add_text_field("topic", STRING | STORED),
        time: builder.add_i64_field("time", INDEXED | STORED | FAST),
    };
    (builder.build(), fields)
}

/// The analyzer a stored schema names for its text field, and the language it stands for
/// (`None` when it is not one of ours).
pub(crate) fn recorded_analyzer(schema: &Schema) -> Option<(String, Option<TextLanguage>)> {
    let field = schema.get_field(TEXT).ok()?;
    let tantivy::schema::FieldType::Str(options) = schema.get_field_entry(field).field_type()
    else {
        return None;
    };
    let name = options.get_indexing_options()?.tokenizer().to_owned();
    let language = language_of(&name);
    Some((name, language))
}

/// The unique key of a document.
pub(crate) fn unique_key(namespace: &str, id: &str) -> String {
    format!("{namespace}\0{id}")
}
