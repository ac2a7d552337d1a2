//! The vector-index port on a LanceDB database: one table per namespace, its embedding model
//! and dimensions recorded in the table's schema, exact search below a size threshold and an
//! IVF-PQ index with exact re-ranking above it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchIterator};
use async_trait::async_trait;
use futures::TryStreamExt;
use lancedb::database::CreateTableMode;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::NewColumnTransform;
use lancedb::{Connection, DistanceType, Table};
use memory_core::ports::{VectorFilter, VectorHit, VectorIndex, VectorQuery, VectorRecord};
use memory_core::{MemoryError, Result};
use tracing::{debug, warn};

use crate::error::{BACKEND, lance_error};
use crate::layout::{TableLayout, layout};
use crate::maintenance;
use crate::model_registry::{Claim, ModelRegistry};
use crate::options::LanceOptions;
use crate::records::{self, ID, KIND, SESSION, TIME, VECTOR, filter_predicate, ids_filter};
use crate::table_name::table_name;

/// Ids per filter expression (deletes and reads of many ids go in chunks).
const IDS_PER_FILTER: usize = 1_000;
/// The distance column LanceDB adds to a vector search's results.
const DISTANCE: &str = "_distance";
/// How often, and how long each time, a writer that lost the claim waits for the claimant's
/// table before creating it itself (about 5 s in all).
const CLAIMANT_WAITS: usize = 100;
const CLAIMANT_WAIT: std::time::Duration = std::time::Duration::from_millis(50);
/// A write whose version is a multiple of this starts maintenance in the background
/// (compaction, field and vector indexes): about every so many commits, whichever process
/// makes them.
const MAINTAIN_EVERY_VERSIONS: u64 = 16;

/// [`VectorIndex`] on LanceDB: a database directory on local disk (`/path/to/db`) or in an
/// S3-compatible bucket (`s3://bucket/prefix`), one table per namespace.
///
/// - **One model per table.** The first write creates the table with the model and the
///   dimensions in its schema; creating is atomic, so of two first writers with different
///   models exactly one wins. Every later write and every query is checked against them.
/// - **Exact, then approximate.** Below [`LanceOptions::index_threshold`] rows a search scans
///   every vector. Past it an IVF-PQ index is built in the background, searched with
///   [`LanceOptions::nprobes`] and re-ranked by exact distance
///   ([`LanceOptions::refine_factor`]); rows added since the index was trained are scanned
///   exactly beside it, and the index is brought up to date (or retrained when the table has
///   grown fourfold) in the background.
/// - **Filters read only what matches.** Past [`LanceOptions::field_index_threshold`] rows
///   session, kind and time get scalar indexes. A filter that at most
///   [`LanceOptions::exact_filter_limit`] rows match is searched exactly over those rows
///   alone; a broader one through the approximate index with the filter applied first,
///   probing more partitions the narrower it is (exactly after all if the probed partitions
///   held fewer than `k` matching rows).
/// - **Few files.** Every write adds a data file; maintenance merges them (and prunes the
///   versions that made old) once there are many.
/// - **Scores** are cosine similarities (`1 - cosine distance`).
#[derive(Clone)]
pub struct LanceVectorIndex {
    inner: Arc<Inner>,
}

struct Inner {
    uri: String,
    connection: Connection,
    registry: ModelRegistry,
    options: LanceOptions,
    tables: Mutex<HashMap<String, Table>>,
    /// Held while an index is built or updated (one at a time: two builds of one table
    /// would conflict).
    maintenance: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for LanceVectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanceVectorIndex")
            .field("uri", &self.inner.uri)
            .finish_non_exhaustive()
    }
}

impl LanceVectorIndex {
    /// Connects to the database at `uri` (a directory path, or `s3://bucket/prefix` with the
    /// object-store settings in `options`).
    pub async fn connect(uri: &str, options: LanceOptions) -> Result<Self> {
        let connection = lancedb::connect(uri)
            .storage_options(options.storage_options.clone())
            .read_consistency_interval(options.read_consistency)
            .execute()
            .await
            .map_err(|e| MemoryError::backend(BACKEND, format!("connecting to {uri}: {e}")))?;
        let registry = ModelRegistry::open(uri, &options.storage_options)?;
        Ok(Self {
            inner: Arc::new(Inner {
                uri: uri.to_owned(),
                connection,
                registry,
                maintenance: Arc::new(tokio::sync::Mutex::new(())),
                options,
                tables: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// Where the database lives.
    pub fn uri(&self) -> &str {
        &self.inner.uri
    }

    /// The namespace's table, if it exists.
    async fn table(&self, namespace: &str) -> Result<Option<Table>> {
        let name = table_name(namespace);
        if let Some(table) = self.cached(&name) {
            return Ok(Some(table));
        }
        match self.inner.connection.open_table(&name).execute().await {
            Ok(table) => {
                add_field_columns(&table).await?;
                self.cache(&name, &table);
                Ok(Some(table))
            }
            Err(lancedb::Error::TableNotFound { .. }) => Ok(None),
            Err(e) => Err(lance_error(e)),
        }
    }

    fn cached(&self, name: &str) -> Option<Table> {
        self.lock_tables().get(name).cloned()
    }

    fn cache(&self, name: &str, table: &Table) {
        self.lock_tables().insert(name.to_owned(), table.clone());
    }

    fn forget(&self, name: &str) {
        self.lock_tables().remove(name);
    }

    /// Drops every table of the database (each table's files go with it) and its claims.
    pub async fn drop_all(&self) -> Result<()> {
        self.lock_tables().clear();
        self.inner.registry.release_all().await?;
        self.inner
            .connection
            .drop_all_tables(&[])
            .await
            .map_err(lance_error)
    }

    fn lock_tables(&self) -> std::sync::MutexGuard<'_, HashMap<String, Table>> {
        self.inner
            .tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The model and dimensions a table was made with.
    async fn recorded(table: &Table) -> Result<(String, usize)> {
        let schema = table.schema().await.map_err(lance_error)?;
        records::recorded(&schema)
    }

    /// Fails unless `table` holds `model`'s `dims`-long vectors.
    async fn check(namespace: &str, table: &Table, model: &str, dims: usize) -> Result<()> {
        let (have_model, have_dims) = Self::recorded(table).await?;
        if have_model != model || have_dims != dims {
            return Err(refused(namespace, &have_model, have_dims, model, dims));
        }
        Ok(())
    }

    /// Maintains the namespace's table now: merges its small data files, builds or updates
    /// its field indexes and its approximate index as its size asks; returns whether it has
    /// an approximate index afterwards (none below [`LanceOptions::index_threshold`]).
    /// Every row is indexed afterwards. Writes start the same maintenance in the background
    /// every few commits (which updates an index only once enough rows are uncovered).
    pub async fn optimize(&self, namespace: &str) -> Result<bool> {
        let _one_at_a_time = self.inner.maintenance.lock().await;
        self.maintain(namespace, true).await
    }

    /// [`Self::optimize`] with the maintenance lock held; `thorough` indexes every row, else
    /// rows are indexed once enough are uncovered to be worth an update.
    async fn maintain(&self, namespace: &str, thorough: bool) -> Result<bool> {
        let Some(table) = self.table(namespace).await? else {
            return Ok(false);
        };
        let (_, dims) = Self::recorded(&table).await?;
        maintenance::maintain(&table, dims, &self.inner.options, thorough).await
    }

    /// Starts [`Self::optimize`] in the background unless maintenance is already
    /// running (it will see these rows, or the next write starts it again).
    fn optimize_in_background(&self, namespace: &str) {
        let Ok(guard) = Arc::clone(&self.inner.maintenance).try_lock_owned() else {
            return;
        };
        let this = self.clone();
        let namespace = namespace.to_owned();
        tokio::spawn(async move {
            match this.maintain(&namespace, false).await {
                Ok(indexed) => debug!(namespace, indexed, "vector index maintained"),
                Err(e) => warn!(namespace, error = %e, "vector index maintenance failed"),
            }
            drop(guard);
        });
    }

    /// How the namespace's table is laid out now (`None` if it has none).
    pub async fn layout(&self, namespace: &str) -> Result<Option<TableLayout>> {
        match self.table(namespace).await? {
            Some(table) => Ok(Some(layout(&table).await?)),
            None => Ok(None),
        }
    }

    /// True while maintenance (compaction, an index build or update) runs.
    pub fn is_optimizing(&self) -> bool {
        self.inner.maintenance.try_lock().is_err()
    }

    /// Rewrites the namespace's files without deleted rows and removes every older version,
    /// so deleted vectors leave the storage (LanceDB keeps old versions until they are
    /// pruned).
    pub async fn erase_deleted(&self, namespace: &str) -> Result<()> {
        let Some(table) = self.table(namespace).await? else {
            return Ok(());
        };
        maintenance::erase_deleted(&table).await
    }

    /// The namespace's table for `model`'s `dims`-long vectors, created empty if it does
    /// not exist: the writer that claims the namespace creates it, any other waits for it
    /// (and is refused at once if it brings another model).
    async fn create(&self, namespace: &str, model: &str, dims: usize) -> Result<Table> {
        let name = table_name(namespace);
        if let Claim::Taken {
            model: have_model,
            dims: have_dims,
        } = self.inner.registry.claim(&name, model, dims).await?
        {
            if have_model != model || have_dims != dims {
                return Err(refused(namespace, &have_model, have_dims, model, dims));
            }
            // The claimant is creating it; wait a little before creating it ourselves
            // (it may have died between its claim and its table).
            for _ in 0..CLAIMANT_WAITS {
                if let Some(table) = self.table(namespace).await? {
                    return Ok(table);
                }
                tokio::time::sleep(CLAIMANT_WAIT).await;
            }
        }
        let schema = records::schema(model, dims)?;
        let table = self
            .inner
            .connection
            .create_empty_table(&name, schema)
            .mode(CreateTableMode::exist_ok(|request| request))
            .execute()
            .await
            .map_err(lance_error)?;
        self.cache(&name, &table);
        Ok(table)
    }

    /// Inserts or replaces the batch's rows by id; returns the version this made.
    async fn merge(table: &Table, batch: RecordBatch) -> Result<u64> {
        let schema = batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        let mut merge = table.merge_insert(&[ID]);
        merge
            .when_matched_update_all(None)
            .when_not_matched_insert_all();
        let merged = merge.execute(Box::new(reader)).await.map_err(lance_error)?;
        Ok(merged.version)
    }

    /// The `k` rows nearest to `vector` among those `predicate` matches (all rows without
    /// one): through the approximate index probing `nprobes` partitions where there is one,
    /// or by exact distance to every matching row when `nprobes` is `None`.
    async fn nearest(
        &self,
        table: &Table,
        vector: &[f32],
        k: usize,
        predicate: Option<&str>,
        nprobes: Option<usize>,
    ) -> Result<Vec<VectorHit>> {
        let mut search = table
            .query()
            .nearest_to(vector)
            .map_err(lance_error)?
            .distance_type(DistanceType::Cosine)
            .limit(k)
            .select(Select::columns(&[ID]));
        search = match nprobes {
            None => search.bypass_vector_index(),
            Some(nprobes) => search
                .nprobes(nprobes)
                .map_err(lance_error)?
                .refine_factor(self.inner.options.refine_factor),
        };
        if let Some(predicate) = predicate {
            search = search.only_if(predicate);
        }
        let batches = Self::collect(search.execute().await.map_err(lance_error)?).await?;
        let mut hits = Vec::with_capacity(k);
        for batch in &batches {
            let ids = records::strings(batch, ID)?;
            let distances = records::floats(batch, DISTANCE)?;
            for row in 0..batch.num_rows() {
                hits.push(VectorHit {
                    id: ids.value(row).to_owned(),
                    score: 1.0 - distances.value(row),
                });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(k);
        Ok(hits)
    }

    async fn collect(
        stream: lancedb::arrow::SendableRecordBatchStream,
    ) -> Result<Vec<RecordBatch>> {
        stream.try_collect().await.map_err(lance_error)
    }
}

/// Gives a table made before vectors had fields its (empty) field columns. Two processes may
/// race to do it: the loser finds the columns there.
async fn add_field_columns(table: &Table) -> Result<()> {
    let has_fields = |schema: arrow_schema::SchemaRef| schema.field_with_name(SESSION).is_ok();
    if has_fields(table.schema().await.map_err(lance_error)?) {
        return Ok(());
    }
    let added = table
        .add_columns()
        .transform(NewColumnTransform::AllNulls(Arc::new(
            records::field_columns(),
        )))
        .execute()
        .await;
    match added {
        Ok(_) => Ok(()),
        Err(e) => {
            table.checkout_latest().await.map_err(lance_error)?;
            if has_fields(table.schema().await.map_err(lance_error)?) {
                Ok(())
            } else {
                Err(lance_error(e))
            }
        }
    }
}

/// The error of a write whose model or dimensions are not the namespace's.
fn refused(
    namespace: &str,
    have_model: &str,
    have_dims: usize,
    model: &str,
    dims: usize,
) -> MemoryError {
    MemoryError::invalid(format!(
        "namespace {namespace:?} holds {have_dims}-dimension vectors of model {have_model:?}; \
         refusing {dims}-dimension vectors of {model:?} (clear the namespace and re-embed to \
         change models)"
    ))
}

/// The model and dimensions of a batch of records, all alike (else `InvalidInput`).
fn model_of(records: &[VectorRecord]) -> Result<(String, usize)> {
    let Some(first) = records.first() else {
        return Err(MemoryError::invalid("no records"));
    };
    let dims = first.vector.len();
    if dims == 0 {
        return Err(MemoryError::invalid(
            "a vector needs at least one dimension",
        ));
    }
    for record in records {
        if record.model != first.model || record.vector.len() != dims {
            return Err(MemoryError::invalid(format!(
                "one upsert mixes models or dimensions ({:?} × {dims}, {:?} × {})",
                first.model,
                record.model,
                record.vector.len()
            )));
        }
    }
    VectorRecord::check_finite(records)?;
    Ok((first.model.clone(), dims))
}

/// The partitions a search filtered to `matching` of `rows` rows probes: `nprobes` times
/// the fourth root of how much narrower than the table the filter is. The nearest matching
/// rows of a narrow filter lie farther from the query, in partitions an unfiltered search
/// would not probe: at 1,000,000 rows and 1 % matching, 80 probes found 0.81 of the exact
/// top 10, 320 found 0.99 (`docs/benchmarks.md`).
fn filtered_nprobes(nprobes: usize, rows: usize, matching: usize) -> usize {
    let narrowness = (rows as f64 / matching.max(1) as f64).max(1.0);
    (nprobes as f64 * narrowness.powf(0.25)).ceil() as usize
}

/// The last record of each id (a merge must not see one id twice).
fn last_per_id(records: Vec<VectorRecord>) -> Vec<VectorRecord> {
    let mut seen = HashSet::new();
    let mut out: Vec<VectorRecord> = records
        .into_iter()
        .rev()
        .filter(|r| seen.insert(r.id.clone()))
        .collect();
    out.reverse();
    out
}

#[async_trait]
impl VectorIndex for LanceVectorIndex {
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let (model, dims) = model_of(&records)?;
        let records = last_per_id(records);
        let schema = records::schema(&model, dims)?;
        let batch = records::batch(&schema, &records, dims)?;
        let table = match self.table(namespace).await? {
            Some(table) => table,
            None => self.create(namespace, &model, dims).await?,
        };
        Self::check(namespace, &table, &model, dims).await?;
        let version = Self::merge(&table, batch).await?;
        if version.is_multiple_of(MAINTAIN_EVERY_VERSIONS) {
            self.optimize_in_background(namespace);
        }
        Ok(())
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        let Some(table) = self.table(namespace).await? else {
            return Ok(0);
        };
        let mut deleted = 0;
        for chunk in ids.chunks(IDS_PER_FILTER) {
            let filter = ids_filter(chunk);
            let existing = table
                .count_rows(Some(filter.clone()))
                .await
                .map_err(lance_error)?;
            if existing > 0 {
                table.delete(filter.as_str()).await.map_err(lance_error)?;
            }
            deleted += existing as u64;
        }
        Ok(deleted)
    }

    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
        let (vector, k) = (query.vector.as_slice(), query.k);
        let Some(table) = self.table(namespace).await? else {
            return Ok(Vec::new());
        };
        let (_, dims) = Self::recorded(&table).await?;
        if vector.len() != dims {
            return Err(MemoryError::invalid(format!(
                "a {}-dimension query against {dims}-dimension vectors in {namespace:?}",
                vector.len()
            )));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        let Some(predicate) = filter_predicate(&query.filter) else {
            let nprobes = self.inner.options.nprobes;
            return self.nearest(&table, vector, k, None, Some(nprobes)).await;
        };
        // Filtered before the search (LanceDB's default prefilter), so the hits are the
        // nearest of the matching rows. A filter few rows match is searched exactly over
        // them; a broader one through the index, probing more partitions the fewer rows
        // match (see `filtered_nprobes`).
        let matching = table
            .count_rows(Some(predicate.clone()))
            .await
            .map_err(lance_error)?;
        if matching == 0 {
            return Ok(Vec::new());
        }
        let options = &self.inner.options;
        if matching > options.exact_filter_limit {
            let rows = table.count_rows(None).await.map_err(lance_error)?;
            let nprobes = filtered_nprobes(options.nprobes, rows, matching);
            let hits = self
                .nearest(&table, vector, k, Some(&predicate), Some(nprobes))
                .await?;
            // The probed partitions held too few matching rows: exact instead.
            if hits.len() >= k.min(matching) {
                return Ok(hits);
            }
            debug!(
                namespace,
                matching,
                found = hits.len(),
                "filtered search done exactly"
            );
        }
        self.nearest(&table, vector, k, Some(&predicate), None)
            .await
    }

    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
        let Some(table) = self.table(namespace).await? else {
            return Ok(0);
        };
        let rows = table
            .count_rows(filter_predicate(filter))
            .await
            .map_err(lance_error)?;
        Ok(rows as u64)
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        let Some(table) = self.table(namespace).await? else {
            return Ok(Vec::new());
        };
        let (model, _) = Self::recorded(&table).await?;
        let mut found: HashMap<String, VectorRecord> = HashMap::new();
        for chunk in ids.chunks(IDS_PER_FILTER) {
            let query = table
                .query()
                .only_if(ids_filter(chunk))
                .select(Select::columns(&[ID, VECTOR, SESSION, KIND, TIME]));
            let batches = Self::collect(query.execute().await.map_err(lance_error)?).await?;
            for batch in &batches {
                let ids = records::strings(batch, ID)?;
                let vectors = records::vectors(batch)?;
                let fields = records::fields(batch)?;
                for (row, (vector, fields)) in vectors.into_iter().zip(fields).enumerate() {
                    let id = ids.value(row).to_owned();
                    let record = VectorRecord::new(id.clone(), vector, model.clone());
                    found.insert(id, record.with_fields(fields));
                }
            }
        }
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    async fn model(&self, namespace: &str) -> Result<Option<String>> {
        match self.table(namespace).await? {
            Some(table) => Ok(Some(Self::recorded(&table).await?.0)),
            None => Ok(None),
        }
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let name = table_name(namespace);
        self.forget(&name);
        // The claim first: a crash in between leaves vectors with their schema's model,
        // never a claim without a table that would refuse a new model.
        self.inner.registry.release(&name).await?;
        match self.inner.connection.drop_table(&name, &[]).await {
            Ok(()) | Err(lancedb::Error::TableNotFound { .. }) => Ok(()),
            Err(e) => Err(lance_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::filtered_nprobes;

    #[test]
    fn narrower_filters_probe_more_partitions() {
        assert_eq!(filtered_nprobes(80, 1_000_000, 1_000_000), 80);
        assert_eq!(filtered_nprobes(80, 1_000_000, 10_000), 253);
        assert_eq!(filtered_nprobes(80, 1_000_000, 1_000), 450);
        assert_eq!(
            filtered_nprobes(80, 10, 20),
            80,
            "never fewer than unfiltered"
        );
        assert_eq!(filtered_nprobes(80, 1_000, 0), 450);
    }
}
