//! The text-index port on one Tantivy index: every namespace in one index, told apart by a
//! `namespace` term, so a search is one query over one set of segments.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use memory_core::ports::{
    TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery,
};
use memory_core::{MemoryError, Result, SearchMode, Timestamp};
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::error::{BACKEND, tantivy_error};

/// The analyzer of the text field, recorded in the index's schema: a reopen with another
/// analyzer is refused.
const ANALYZER: &str = "memory_en_stem";
/// Memory the writer may use before it flushes a segment.
const WRITER_HEAP: usize = 64 * 1024 * 1024;

/// English with stemming and stop words, as the analyzer of the index.
fn english() -> Result<TextAnalyzer> {
    let stop = StopWordFilter::new(Language::English)
        .ok_or_else(|| MemoryError::backend(BACKEND, "tantivy has no English stop-word list"))?;
    Ok(TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(64))
        .filter(LowerCaser)
        .filter(stop)
        .filter(Stemmer::new(Language::English))
        .build())
}

/// The fields of the schema.
#[derive(Clone, Copy)]
struct Fields {
    namespace: Field,
    /// `namespace \0 id`: the unique key, for replace and delete.
    key: Field,
    id: Field,
    text: Field,
    session: Field,
    role: Field,
    kind: Field,
    topic: Field,
    time: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let fields = Fields {
        namespace: builder.add_text_field("namespace", STRING),
        key: builder.add_text_field("key", STRING),
        id: builder.add_text_field("id", STRING | STORED),
        text: builder.add_text_field("text", text_options),
        session: builder.add_text_field("session", STRING | STORED),
        role: builder.add_text_field("role", STRING | STORED),
        kind: builder.add_text_field("kind", STRING | STORED),
        topic: builder.add_text_field("topic", STRING | STORED),
        time: builder.add_i64_field("time", INDEXED | STORED | FAST),
    };
    (builder.build(), fields)
}

fn unique_key(namespace: &str, id: &str) -> String {
    format!("{namespace}\0{id}")
}

/// [`TextIndex`] on a Tantivy index in a directory: BM25 ranking with Tantivy's top-k
/// pruning (block-max WAND), English stemming and stop words, phrases by positions.
///
/// One writer per index: Tantivy's lock file keeps a second process from opening it for
/// writing ([`TantivyTextIndex::open`] then fails with a clear `Conflict`, and nothing is
/// touched). Every write commits before it returns and the reader reloads at once, so a
/// write is visible to the next search with no delay.
#[derive(Clone)]
pub struct TantivyTextIndex {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
}

impl std::fmt::Debug for TantivyTextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TantivyTextIndex")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl TantivyTextIndex {
    /// Opens (creating if needed) the index in `dir` and takes its writer lock.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let path = dir.as_ref().to_owned();
        std::fs::create_dir_all(&path).map_err(|e| {
            MemoryError::backend(BACKEND, format!("creating {}: {e}", path.display()))
        })?;
        let (schema, fields) = schema();
        let directory = tantivy::directory::MmapDirectory::open(&path).map_err(|e| {
            MemoryError::backend(BACKEND, format!("opening {}: {e}", path.display()))
        })?;
        let index = Index::open_or_create(directory, schema.clone()).map_err(|e| match e {
            tantivy::TantivyError::SchemaError(message) => MemoryError::invalid(format!(
                "{}: the index was made with another schema or analyzer ({message}); \
                     rebuild it with `reindex` into an empty directory",
                path.display()
            )),
            other => tantivy_error(other),
        })?;
        if index.schema() != schema {
            return Err(MemoryError::invalid(format!(
                "{}: the index was made with another schema or analyzer than {ANALYZER:?}; \
                 rebuild it with `reindex` into an empty directory",
                path.display()
            )));
        }
        index.tokenizers().register(ANALYZER, english()?);
        let writer = index.writer(WRITER_HEAP).map_err(|e| match e {
            tantivy::TantivyError::LockFailure(..) => MemoryError::Conflict {
                message: format!(
                    "{} is open for writing by another process; one writer per index",
                    path.display()
                ),
            },
            other => tantivy_error(other),
        })?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tantivy_error)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                index,
                reader,
                writer: Mutex::new(writer),
                fields,
            }),
        })
    }

    /// Runs `work` on the writer, commits, and reloads the reader (on a blocking thread).
    async fn write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut IndexWriter, &Fields) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut writer = inner
                .writer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let out = work(&mut writer, &inner.fields);
            match out {
                Ok(value) => {
                    writer.commit().map_err(tantivy_error)?;
                    inner.reader.reload().map_err(tantivy_error)?;
                    Ok(value)
                }
                Err(e) => {
                    let _ = writer.rollback();
                    Err(e)
                }
            }
        })
        .await
        .map_err(|e| MemoryError::backend(BACKEND, format!("an index task failed: {e}")))?
    }

    /// The words of `text` as the index's analyzer makes them, with their positions (a
    /// dropped stop word leaves its gap, as it does in the documents).
    fn positioned_tokens(&self, text: &str) -> Result<Vec<(usize, String)>> {
        let mut analyzer = self
            .inner
            .index
            .tokenizers()
            .get(ANALYZER)
            .ok_or_else(|| MemoryError::backend(BACKEND, "the analyzer is not registered"))?;
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push((token.position, token.text.clone()));
        }
        Ok(out)
    }

    /// The words of `text` as the index's analyzer makes them.
    fn tokens(&self, text: &str) -> Result<Vec<String>> {
        let mut analyzer = self
            .inner
            .index
            .tokenizers()
            .get(ANALYZER)
            .ok_or_else(|| MemoryError::backend(BACKEND, "the analyzer is not registered"))?;
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        Ok(out)
    }

    /// Removes every document of every namespace.
    pub async fn clear_all(&self) -> Result<()> {
        self.write(|writer, _| {
            writer.delete_all_documents().map_err(tantivy_error)?;
            Ok(())
        })
        .await
    }

    fn term(&self, field: Field, value: &str) -> Term {
        Term::from_field_text(field, value)
    }

    /// The namespace and filter clauses of a query (they restrict, they do not rank).
    fn restrictions(&self, namespace: &str, query: &TextQuery) -> Vec<(Occur, Box<dyn Query>)> {
        let f = &self.inner.fields;
        let exact = |field: Field, value: &str| -> (Occur, Box<dyn Query>) {
            (
                Occur::Must,
                Box::new(TermQuery::new(
                    self.term(field, value),
                    IndexRecordOption::Basic,
                )),
            )
        };
        let mut clauses = vec![exact(f.namespace, namespace)];
        let filter = &query.filter;
        for (field, value) in [
            (f.session, &filter.session),
            (f.role, &filter.role),
            (f.kind, &filter.kind),
            (f.topic, &filter.key),
        ] {
            if let Some(value) = value {
                clauses.push(exact(field, value));
            }
        }
        if filter.from.is_some() || filter.to.is_some() {
            use std::ops::Bound;
            let lower = filter.from.map_or(Bound::Unbounded, |t| {
                Bound::Included(Term::from_field_i64(f.time, t.millis()))
            });
            let upper = filter.to.map_or(Bound::Unbounded, |t| {
                Bound::Excluded(Term::from_field_i64(f.time, t.millis()))
            });
            clauses.push((Occur::Must, Box::new(RangeQuery::new(lower, upper))));
        }
        clauses
    }

    fn hit(&self, doc: &TantivyDocument, score: f32) -> TextHit {
        let f = &self.inner.fields;
        let text = |field: Field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        TextHit {
            id: text(f.id).unwrap_or_default(),
            text: text(f.text).unwrap_or_default(),
            fields: TextFields {
                session: text(f.session),
                role: text(f.role),
                kind: text(f.kind),
                key: text(f.topic),
                time: doc
                    .get_first(f.time)
                    .and_then(|v| v.as_i64())
                    .map(Timestamp),
            },
            score: f64::from(score),
        }
    }

    fn count_matching(&self, query: &dyn Query) -> Result<u64> {
        let searcher = self.inner.reader.searcher();
        Ok(searcher.search(query, &Count).map_err(tantivy_error)? as u64)
    }
}

#[async_trait]
impl TextIndex for TantivyTextIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        TextIndexCapabilities {
            stemming: true,
            stop_words: true,
            phrase: true,
            rarity_ranking: true,
            written_by_store: false,
        }
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        if documents.is_empty() {
            return Ok(());
        }
        let namespace = namespace.to_owned();
        self.write(move |writer, f| {
            for document in documents {
                let key = unique_key(&namespace, &document.id);
                writer.delete_term(Term::from_field_text(f.key, &key));
                let mut doc = TantivyDocument::default();
                doc.add_text(f.namespace, &namespace);
                doc.add_text(f.key, &key);
                doc.add_text(f.id, &document.id);
                doc.add_text(f.text, &document.text);
                let fields = &document.fields;
                for (field, value) in [
                    (f.session, &fields.session),
                    (f.role, &fields.role),
                    (f.kind, &fields.kind),
                    (f.topic, &fields.key),
                ] {
                    if let Some(value) = value {
                        doc.add_text(field, value);
                    }
                }
                if let Some(time) = fields.time {
                    doc.add_i64(f.time, time.millis());
                }
                writer.add_document(doc).map_err(tantivy_error)?;
            }
            Ok(())
        })
        .await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let f = self.inner.fields;
        let mut existing = 0;
        for id in ids {
            let term = Term::from_field_text(f.key, &unique_key(namespace, id));
            existing += self.count_matching(&TermQuery::new(term, IndexRecordOption::Basic))?;
        }
        let keys: Vec<String> = ids.iter().map(|id| unique_key(namespace, id)).collect();
        self.write(move |writer, f| {
            for key in keys {
                writer.delete_term(Term::from_field_text(f.key, &key));
            }
            Ok(())
        })
        .await?;
        Ok(existing)
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let f = self.inner.fields;
        // User words are analyzed into terms; nothing of theirs reaches a query parser.
        let mut words: Vec<Vec<String>> = Vec::new();
        for word in query.terms() {
            let tokens = self.tokens(word)?;
            if !tokens.is_empty() {
                words.push(tokens);
            }
        }
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let term = |t: &str| Term::from_field_text(f.text, t);
        let scored: Box<dyn Query> = match query.mode {
            SearchMode::Phrase => {
                // The words in order, at their relative positions (stop-word gaps kept).
                let phrase = query.terms().join(" ");
                let terms: Vec<(usize, Term)> = self
                    .positioned_tokens(&phrase)?
                    .into_iter()
                    .map(|(position, t)| (position, term(&t)))
                    .collect();
                if terms.len() == 1 {
                    Box::new(TermQuery::new(
                        terms[0].1.clone(),
                        IndexRecordOption::WithFreqs,
                    ))
                } else {
                    let first = terms.first().map_or(0, |(p, _)| *p);
                    let shifted = terms.into_iter().map(|(p, t)| (p - first, t)).collect();
                    Box::new(PhraseQuery::new_with_offset(shifted))
                }
            }
            SearchMode::AllWords | SearchMode::AnyWords => {
                let occur = if query.mode == SearchMode::AllWords {
                    Occur::Must
                } else {
                    Occur::Should
                };
                let clauses: Vec<(Occur, Box<dyn Query>)> = words
                    .iter()
                    .flatten()
                    .map(|t| {
                        (
                            occur,
                            Box::new(TermQuery::new(term(t), IndexRecordOption::WithFreqs))
                                as Box<dyn Query>,
                        )
                    })
                    .collect();
                Box::new(BooleanQuery::new(clauses))
            }
        };
        let mut clauses = vec![(Occur::Must, scored)];
        clauses.extend(self.restrictions(namespace, query));
        let full = BooleanQuery::new(clauses);
        let searcher = self.inner.reader.searcher();
        let top = searcher
            .search(&full, &TopDocs::with_limit(query.limit).order_by_score())
            .map_err(tantivy_error)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(tantivy_error)?;
            hits.push(self.hit(&doc, score));
        }
        Ok(hits)
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        let term = self.term(self.inner.fields.namespace, namespace);
        self.count_matching(&TermQuery::new(term, IndexRecordOption::Basic))
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let namespace = namespace.to_owned();
        self.write(move |writer, f| {
            writer.delete_term(Term::from_field_text(f.namespace, &namespace));
            Ok(())
        })
        .await
    }
}
