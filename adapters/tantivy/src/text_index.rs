//! The text-index port on one Tantivy index: every namespace in one index, told apart by a
//! `namespace` term, so a search is one query over one set of segments.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use memory_core::ports::{
    ScoredId, TextDocument, TextFields, TextHit, TextIndex, TextIndexCapabilities, TextQuery,
};
use memory_core::{MemoryError, Result, SearchMode, TextLanguage, Timestamp};
use tantivy::collector::{Count, TopDocs};
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, RangeQuery, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{
    DocAddress, Index, IndexReader, IndexSettings, ReloadPolicy, Searcher, TantivyDocument, Term,
};

use crate::committer::{Change, Committer};
use crate::error::{BACKEND, tantivy_error};
use crate::id_column::IdCache;
use crate::language::{LEGACY_ENGLISH, analyzer, analyzer_name, has_stop_words, stems};
use crate::options::TantivyOptions;
use crate::schema::{Fields, IdColumn, recorded_analyzer, schema, unique_key};
use crate::shared::{SharedWriter, lock_directory};

/// The best documents of a search, with their scores, and the searcher that found them.
type Found = (Searcher, Vec<(f32, DocAddress)>);

/// Memory each indexing thread may use before it writes a segment.
const HEAP_PER_THREAD: usize = 32 * 1024 * 1024;

/// The writer's options: `threads` indexing threads with [`HEAP_PER_THREAD`] each, and
/// `merge_threads` merging ones.
pub(crate) fn writer_options(threads: usize, merge_threads: usize) -> IndexWriterOptions {
    IndexWriterOptions::builder()
        .num_worker_threads(threads.max(1))
        .memory_budget_per_thread(HEAP_PER_THREAD)
        .num_merge_threads(merge_threads.max(1))
        .build()
}

/// [`TextIndex`] on a Tantivy index in a directory: BM25 ranking with Tantivy's top-k
/// pruning (block-max WAND), text analyzed in the index's [`TextLanguage`] (stemming and
/// stop words, or CJK two-character pieces), phrases by positions.
///
/// - **One writer per index.** Tantivy's lock file keeps a second process from opening it
///   for writing: [`TantivyTextIndex::open`] then fails with a clear `Conflict`, and nothing
///   is touched. Opened [shared](TantivyOptions::shared), the index holds no lock while
///   idle: processes on one host take turns, one commit at a time, and each sees the
///   others' commits at its next search.
/// - **Group commit.** Writes go to one writer thread that commits them together (see
///   [`TantivyOptions::commit_interval`]); a write returns after its commit and the reader's
///   reload, so it is durable and visible to the next search, with no delay.
/// - **Erasure.** Deleting documents rewrites the segments that held them, so their text
///   leaves the files ([`crate::Erasure`]).
/// - **The language is recorded** in the index: reopening it as another language is refused.
#[derive(Clone)]
pub struct TantivyTextIndex {
    inner: Arc<Inner>,
}

struct Inner {
    /// When shared: the `meta.json` the reader last loaded.
    shared: Option<std::sync::Mutex<Vec<u8>>>,
    path: PathBuf,
    language: TextLanguage,
    /// The analyzer's name in the schema.
    analyzer: String,
    reader: IndexReader,
    index: Index,
    fields: Fields,
    /// Whether ids can be read from a fast field (else from stored documents).
    ids: IdColumn,
    /// The fast field's ids, per segment.
    id_cache: IdCache,
    committer: Committer,
}

impl std::fmt::Debug for TantivyTextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TantivyTextIndex")
            .field("path", &self.inner.path)
            .field("language", &self.inner.language)
            .finish_non_exhaustive()
    }
}

impl TantivyTextIndex {
    /// Opens (creating if needed) the English index in `dir` and takes its writer lock
    /// (held while it is open).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(dir, TantivyOptions::default())
    }

    /// Opens (creating if needed) the index in `dir` with `options` and takes its writer
    /// lock, held while it is open; a [shared](TantivyOptions::shared) index takes it for
    /// each commit instead. An index made in another language is refused with an error
    /// naming both.
    pub fn open_with(dir: impl AsRef<Path>, options: TantivyOptions) -> Result<Self> {
        let path = dir.as_ref().to_owned();
        std::fs::create_dir_all(&path).map_err(|e| {
            MemoryError::backend(BACKEND, format!("creating {}: {e}", path.display()))
        })?;
        let language = options.language;
        // A shared index is made under the directory's lock, so two processes starting
        // together cannot both create it.
        let creating = match options.shared {
            true => Some(lock_directory(&path, options.lock_wait)?),
            false => None,
        };
        let (index, analyzer_name, fields, ids) = open_or_create(&path, language)?;
        drop(creating);
        index
            .tokenizers()
            .register(&analyzer_name, analyzer(language));
        let threads = match options.writer_threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            n => n,
        };
        let reader: IndexReader = index
            .reader_builder()
            // Shared: Tantivy's watcher also reloads within about half a second of another
            // process's commit, so no process keeps the files of rewritten segments (deleted
            // text) open for long, searching or not.
            .reload_policy(match options.shared && options.watch {
                true => ReloadPolicy::OnCommitWithDelay,
                false => ReloadPolicy::Manual,
            })
            .try_into()
            .map_err(tantivy_error)?;
        let committer = if options.shared {
            let writer = SharedWriter {
                path: path.clone(),
                analyzer: analyzer_name.clone(),
                language,
                fields,
                threads,
                merge_threads: options.merge_threads,
                interval: options.commit_interval,
                lock_wait: options.lock_wait,
            };
            Committer::start_shared(writer, IndexReader::clone(&reader))?
        } else {
            let writer = index
                .writer_with_options(writer_options(threads, options.merge_threads))
                .map_err(|e| match e {
                    tantivy::TantivyError::LockFailure(..) => MemoryError::Conflict {
                        message: format!(
                            "{} is open for writing by another process; one writer per \
                             index (open it shared in every process to share it)",
                            path.display()
                        ),
                    },
                    other => tantivy_error(other),
                })?;
            Committer::start(
                index.clone(),
                writer,
                IndexReader::clone(&reader),
                fields,
                &options,
            )?
        };
        Ok(Self {
            inner: Arc::new(Inner {
                shared: options.shared.then(|| std::sync::Mutex::new(Vec::new())),
                path,
                language,
                analyzer: analyzer_name,
                reader,
                index,
                fields,
                ids,
                id_cache: IdCache::default(),
                committer,
            }),
        })
    }

    /// A searcher that sees every commit made so far: a shared index first reloads when
    /// `meta.json` is not the one it last loaded (another process committed; the file is
    /// small, and its bytes, unlike its time stamp, always change with a commit). A lost
    /// directory is an error.
    fn searcher(&self) -> Result<Searcher> {
        if let Some(seen) = &self.inner.shared {
            let meta = self.inner.path.join("meta.json");
            let now = std::fs::read(&meta).map_err(|e| {
                MemoryError::backend(BACKEND, format!("reading {}: {e}", meta.display()))
            })?;
            let mut seen = seen
                .lock()
                .map_err(|_| MemoryError::backend(BACKEND, "the reader's state is poisoned"))?;
            if *seen != now {
                self.inner.reader.reload().map_err(tantivy_error)?;
                *seen = now;
            }
        }
        Ok(self.inner.reader.searcher())
    }

    /// The language the index analyzes text as.
    pub fn language(&self) -> TextLanguage {
        self.inner.language
    }

    /// Segments the searcher sees now (the writer thread merges them as they accumulate).
    pub fn segment_count(&self) -> usize {
        self.inner.reader.searcher().segment_readers().len()
    }

    /// True when several processes may open the index ([`TantivyOptions::shared`]).
    pub fn is_shared(&self) -> bool {
        self.inner.shared.is_some()
    }

    /// Commits made since the index was opened (several writes share one under load).
    pub fn commits(&self) -> u64 {
        self.inner.committer.commits()
    }

    /// The words of `text` as the index's analyzer makes them, with their positions (a
    /// dropped stop word leaves its gap, as it does in the documents).
    fn positioned_tokens(&self, text: &str) -> Result<Vec<(usize, String)>> {
        let mut analyzer = self
            .inner
            .index
            .tokenizers()
            .get(&self.inner.analyzer)
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
        Ok(self
            .positioned_tokens(text)?
            .into_iter()
            .map(|(_, token)| token)
            .collect())
    }

    /// Removes every document of every namespace (and erases their text).
    pub async fn clear_all(&self) -> Result<()> {
        self.inner.committer.submit(Change::ClearAll).await
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

    /// The best `query.limit` documents of `namespace` for `query` with their scores, and the
    /// searcher that found them (`None` when the query can match nothing).
    fn top(&self, namespace: &str, query: &TextQuery) -> Result<Option<Found>> {
        if query.is_empty() {
            return Ok(None);
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
            return Ok(None);
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
        let searcher = self.searcher()?;
        let top = searcher
            .search(&full, &TopDocs::with_limit(query.limit).order_by_score())
            .map_err(tantivy_error)?;
        Ok(Some((searcher, top)))
    }

    /// The hits `top` names, read from the stored documents.
    fn stored_hits(
        &self,
        searcher: &Searcher,
        top: Vec<(f32, DocAddress)>,
    ) -> Result<Vec<TextHit>> {
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(tantivy_error)?;
            hits.push(self.hit(&doc, score));
        }
        Ok(hits)
    }

    fn count_matching(&self, query: &dyn Query) -> Result<u64> {
        let searcher = self.searcher()?;
        Ok(searcher.search(query, &Count).map_err(tantivy_error)? as u64)
    }
}

#[async_trait]
impl TextIndex for TantivyTextIndex {
    fn backend_name(&self) -> &'static str {
        BACKEND
    }

    fn capabilities(&self) -> TextIndexCapabilities {
        let language = self.inner.language;
        TextIndexCapabilities {
            stemming: stems(language),
            stop_words: has_stop_words(language),
            phrase: true,
            rarity_ranking: true,
            written_by_store: false,
            language,
        }
    }

    async fn upsert(&self, namespace: &str, documents: Vec<TextDocument>) -> Result<()> {
        if documents.is_empty() {
            return Ok(());
        }
        let change = Change::Upsert {
            namespace: namespace.to_owned(),
            documents,
        };
        self.inner.committer.submit(change).await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let f = self.inner.fields;
        let keys: Vec<String> = ids.iter().map(|id| unique_key(namespace, id)).collect();
        // One search counts every key that exists.
        let any_key: Vec<(Occur, Box<dyn Query>)> = keys
            .iter()
            .map(|key| {
                let term = Term::from_field_text(f.key, key);
                (
                    Occur::Should,
                    Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>,
                )
            })
            .collect();
        let existing = self.count_matching(&BooleanQuery::new(any_key))?;
        self.inner.committer.submit(Change::Delete { keys }).await?;
        Ok(existing)
    }

    async fn search(&self, namespace: &str, query: &TextQuery) -> Result<Vec<TextHit>> {
        match self.top(namespace, query)? {
            Some((searcher, top)) => self.stored_hits(&searcher, top),
            None => Ok(Vec::new()),
        }
    }

    async fn search_ids(&self, namespace: &str, query: &TextQuery) -> Result<Vec<ScoredId>> {
        let Some((searcher, top)) = self.top(namespace, query)? else {
            return Ok(Vec::new());
        };
        if self.inner.ids == IdColumn::StoredOnly {
            let hits = self.stored_hits(&searcher, top)?;
            return Ok(hits.into_iter().map(ScoredId::from).collect());
        }
        let segments = self.inner.id_cache.segments(&searcher)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let id = segments
                .get(address.segment_ord as usize)
                .and_then(|ids| ids.id(address.doc_id))
                .unwrap_or_default();
            hits.push(ScoredId {
                id: id.to_owned(),
                score: f64::from(score),
            });
        }
        Ok(hits)
    }

    async fn count(&self, namespace: &str) -> Result<u64> {
        let term = self.term(self.inner.fields.namespace, namespace);
        self.count_matching(&TermQuery::new(term, IndexRecordOption::Basic))
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let change = Change::ClearNamespace(namespace.to_owned());
        self.inner.committer.submit(change).await
    }
}

/// Opens the index in `path`, or creates it in `language`; its analyzer's name, fields and
/// how it keeps ids.
fn open_or_create(
    path: &Path,
    language: TextLanguage,
) -> Result<(Index, String, Fields, IdColumn)> {
    let directory = tantivy::directory::MmapDirectory::open(path)
        .map_err(|e| MemoryError::backend(BACKEND, format!("opening {}: {e}", path.display())))?;
    let exists = Index::exists(&directory)
        .map_err(|e| MemoryError::backend(BACKEND, format!("reading {}: {e}", path.display())))?;
    if exists {
        let index = Index::open(directory).map_err(tantivy_error)?;
        // An English index made before languages were chosen keeps its analyzer's name.
        let name = match recorded_analyzer(&index.schema()) {
            Some((name, _)) if name == LEGACY_ENGLISH && language == TextLanguage::English => name,
            _ => analyzer_name(language),
        };
        // An index made before fast ids is read through its stored documents.
        let ids = match schema(&name, IdColumn::StoredOnly) {
            (old, _) if old == index.schema() => IdColumn::StoredOnly,
            _ => IdColumn::Fast,
        };
        let (schema, fields) = schema(&name, ids);
        check_schema(path, &index.schema(), &schema, language)?;
        Ok((index, name, fields, ids))
    } else {
        let name = analyzer_name(language);
        let (schema, fields) = schema(&name, IdColumn::Fast);
        let index =
            Index::create(directory, schema, IndexSettings::default()).map_err(tantivy_error)?;
        Ok((index, name, fields, IdColumn::Fast))
    }
}

/// Refuses an existing index whose schema is not the one `language` makes, naming the
/// language it was made with when it is one of ours.
fn check_schema(
    path: &Path,
    found: &tantivy::schema::Schema,
    wanted: &tantivy::schema::Schema,
    language: TextLanguage,
) -> Result<()> {
    if found == wanted {
        return Ok(());
    }
    let message = match recorded_analyzer(found) {
        Some((_, Some(recorded))) if recorded != language => format!(
            "{}: the index was made for {recorded} text and is opened as {language}; \
             set the language back to {recorded}, or rebuild it with `reindex` into an empty \
             directory",
            path.display()
        ),
        Some((name, None)) => format!(
            "{}: the index was made with the analyzer {name:?}, which this version does not \
             know; rebuild it with `reindex` into an empty directory",
            path.display()
        ),
        _ => format!(
            "{}: the index was made with another schema; rebuild it with `reindex` into an \
             empty directory",
            path.display()
        ),
    };
    Err(MemoryError::invalid(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids and scores of `search`'s hits in namespace `n`.
    async fn searched_ids(index: &TantivyTextIndex, query: &TextQuery) -> Vec<ScoredId> {
        let hits = index.search("n", query).await.unwrap();
        hits.into_iter().map(ScoredId::from).collect()
    }

    /// A new index keeps ids in a fast column, and search_ids reads them from there.
    #[tokio::test]
    async fn a_new_index_reads_ids_from_the_fast_column() {
        let dir = tempfile::tempdir().unwrap();
        let index = TantivyTextIndex::open(dir.path()).unwrap();
        assert_eq!(index.inner.ids, IdColumn::Fast);
        for (id, text) in [("a", "otters swim"), ("b", "otters otters sleep")] {
            // One commit each: two segments.
            index
                .upsert("n", vec![TextDocument::new(id, text)])
                .await
                .unwrap();
        }
        let query = TextQuery::new("otters", 5);
        let hits = searched_ids(&index, &query).await;
        assert_eq!(hits.len(), 2);
        assert_eq!(index.search_ids("n", &query).await.unwrap(), hits);
        // A delete rewrites the segments: the new ones' ids are read, the old ones forgotten.
        assert_eq!(index.delete("n", &["b".to_owned()]).await.unwrap(), 1);
        index
            .upsert("n", vec![TextDocument::new("c", "otters everywhere")])
            .await
            .unwrap();
        let hits = searched_ids(&index, &query).await;
        let mut found: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        found.sort_unstable();
        assert_eq!(found, ["a", "c"]);
        assert_eq!(index.search_ids("n", &query).await.unwrap(), hits);
        let searched = index.searcher().unwrap().segment_readers().len();
        assert_eq!(index.inner.id_cache.len(), searched);
    }

    /// An index made before languages were chosen (its analyzer named `memory_en_stem`)
    /// opens as English and keeps working; opened as another language it is refused.
    #[tokio::test]
    async fn an_index_with_the_old_english_analyzer_name_opens_as_english() {
        let dir = tempfile::tempdir().unwrap();
        let directory = tantivy::directory::MmapDirectory::open(dir.path()).unwrap();
        let (legacy, _) = schema(LEGACY_ENGLISH, IdColumn::StoredOnly);
        drop(Index::create(directory, legacy, IndexSettings::default()).unwrap());
        let index = TantivyTextIndex::open(dir.path()).unwrap();
        index
            .upsert("n", vec![TextDocument::new("d1", "the keepers")])
            .await
            .unwrap();
        let hits = index
            .search("n", &TextQuery::new("keeper", 5))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        // Its ids are stored only: search_ids reads them from the documents.
        assert_eq!(index.inner.ids, IdColumn::StoredOnly);
        let ranked = index
            .search_ids("n", &TextQuery::new("keeper", 5))
            .await
            .unwrap();
        assert_eq!(ranked, [ScoredId::from(hits[0].clone())]);
        drop(index);
        let french = TantivyOptions::default().language(TextLanguage::French);
        let error = TantivyTextIndex::open_with(dir.path(), french).unwrap_err();
        assert!(error.to_string().contains("made for english"), "{error}");
    }
}
