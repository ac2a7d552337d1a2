//! [`VectorIndex`] in the profile's own SQLite file: vectors are stored as little-endian
//! `f32` blobs and searched over an in-memory matrix loaded on first use: exactly, or, for a
//! namespace of many vectors, through an approximate graph ([`ApproximateSearch`]) whose
//! candidates are rescored exactly.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use memory_core::Timestamp;
use memory_core::ports::{
    VectorFields, VectorFilter, VectorHit, VectorIndex, VectorQuery, VectorRecord,
};
use memory_core::{MemoryError, Result};
use sqlx::Row;

use crate::database::SqliteDatabase;
use crate::error::db;
use crate::graph_snapshot::GraphSnapshots;
use crate::vector_graph::VectorGraph;
use crate::vector_matrix::{VectorMatrix, normalised};
use crate::version_reads::{VersionReads, stored_version};

/// When a namespace is searched through an approximate nearest-neighbour graph (HNSW, int8
/// vectors, from the `usearch` crate) instead of an exact scan, and how.
///
/// The graph only picks candidates: each is rescored exactly in `f32`, so scores are exact
/// cosines and only which rows come back is approximate (`memory bench long-term` reports
/// recall@10 against the exact scan). A namespace is scanned exactly while its graph is
/// built in the background (a first build, or a catch-up of more than 2,000 changes); a
/// smaller catch-up is done by the caller that finds it due.
///
/// ```
/// use memory_sqlite::ApproximateSearch;
/// let eager = ApproximateSearch { from_rows: 0, exact_below: 0, ..ApproximateSearch::default() };
/// assert_eq!(eager.candidates, ApproximateSearch::default().candidates);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApproximateSearch {
    /// Namespaces with at least this many vectors get a graph (below, the int8 scan is
    /// cheap).
    pub from_rows: usize,
    /// A filtered search whose filter matches fewer rows than this scans them exactly (a
    /// graph walk would visit mostly rows the filter drops).
    pub exact_below: usize,
    /// Candidates taken from the graph and rescored (at least `2 k`).
    pub candidates: usize,
    /// A graph's snapshot is saved beside the database (`<file>.vectors/`) after this many
    /// changes, or a quarter of the namespace if that is more (each save writes the whole
    /// graph), so a restart loads it and catches up instead of rebuilding.
    pub save_after: usize,
}

impl Default for ApproximateSearch {
    fn default() -> Self {
        Self {
            from_rows: 20_000,
            exact_below: 4_096,
            candidates: 160,
            save_after: 2_000,
        }
    }
}

/// How a search scans.
#[derive(Debug, Clone, Copy)]
enum Scan {
    /// Through the graph when the namespace has one, else the int8 pre-scan.
    AsConfigured,
    /// Every row in `f32`.
    Exhaustive,
}

/// A graph's snapshot as of a namespace version, not yet written.
struct Snapshot {
    version: i64,
    bytes: Vec<u8>,
}

/// A catch-up this small is done in the caller's thread; a larger one (a first build) in the
/// background, while searches scan exactly.
const INLINE_CATCH_UP: usize = 2_000;

/// Exact cosine search over vectors kept in SQLite.
///
/// Each namespace's matrix is cached in memory and kept in step with the writes made through
/// this instance. Every write also bumps the namespace's version in the file, and every read
/// compares it (one primary-key lookup): a write by another instance or another process
/// makes the cache reload, so no read is served from stale data.
#[derive(Debug, Clone)]
pub struct SqliteVectorIndex {
    db: SqliteDatabase,
    cache: Arc<RwLock<HashMap<String, Arc<RwLock<Namespace>>>>>,
    approximate: Option<ApproximateSearch>,
    snapshots: Arc<GraphSnapshots>,
    /// Held by a write from inside its transaction until its change is applied to the
    /// cache, so this instance's changes reach the cache in commit order (a change applied out of
    /// order finds the cache at another version and drops it: the next search would load
    /// the whole namespace again, and concurrent writers would make every search do so).
    publishing: Arc<tokio::sync::Mutex<()>>,
    /// Namespaces loaded from the file (see [`Self::namespace_loads`]).
    loads: Arc<std::sync::atomic::AtomicU64>,
    /// Each search's version check, shared with the searches that start beside it.
    versions: Arc<VersionReads>,
}

#[derive(Debug)]
struct Namespace {
    /// The version in the file when this was loaded or last written (`None`: no namespace).
    version: Option<i64>,
    model: Option<(String, usize)>,
    matrix: VectorMatrix,
    /// The approximate graph, level with `matrix` whenever it is here.
    graph: Option<VectorGraph>,
    /// A graph is being built or caught up in the background (then `graph` is `None`).
    building: bool,
    /// Changes since the graph's snapshot was last saved.
    unsaved: usize,
}

/// Bumps the write counter inside a write transaction; returns the new version.
async fn next_version(conn: &mut sqlx::SqliteConnection) -> Result<i64> {
    sqlx::query_scalar("UPDATE vector_epoch SET epoch = epoch + 1 WHERE id = 1 RETURNING epoch")
        .fetch_one(conn)
        .await
        .map_err(db)
}

/// The fields stored in columns `first..first + 3` (session, kind, time).
fn fields_from_row(row: &sqlx::sqlite::SqliteRow, first: usize) -> VectorFields {
    VectorFields {
        session: row.get(first),
        kind: row.get(first + 1),
        time: row.get::<Option<i64>, _>(first + 2).map(Timestamp),
    }
}

/// The SQL condition of `filter` on table alias `v`; its values are bound in this order:
/// session, kind, from, to (values are always bound, never spliced into the SQL).
fn filter_sql(filter: &VectorFilter) -> String {
    let mut sql = String::new();
    for (set, condition) in [
        (filter.session.is_some(), " AND v.session = ?"),
        (filter.kind.is_some(), " AND v.kind = ?"),
        (filter.from.is_some(), " AND v.time >= ?"),
        (filter.to.is_some(), " AND v.time < ?"),
    ] {
        if set {
            sql.push_str(condition);
        }
    }
    sql
}

fn poisoned() -> MemoryError {
    crate::error::invariant("vector cache lock poisoned")
}

fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(MemoryError::serialization(format!(
            "vector blob of {} bytes is not a whole number of f32s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

impl SqliteVectorIndex {
    /// The index over an open database, with approximate search at its defaults.
    pub fn new(db: SqliteDatabase) -> Self {
        let snapshots = Arc::new(GraphSnapshots::new(&db.path));
        Self {
            db,
            cache: Arc::new(RwLock::new(HashMap::new())),
            approximate: Some(ApproximateSearch::default()),
            snapshots,
            publishing: Arc::new(tokio::sync::Mutex::new(())),
            loads: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            versions: Arc::new(VersionReads::default()),
        }
    }

    /// How many times this instance loaded a namespace's vectors from the file: on first use,
    /// after the write that made the namespace or a `clear`, and after another instance or
    /// process wrote it; never for this instance's other writes, however many run at once.
    /// A diagnostic (each load reads every vector of the namespace).
    pub fn namespace_loads(&self) -> u64 {
        self.loads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many vectors the namespace's approximate graph holds, or `None` while it has none
    /// (below [`ApproximateSearch::from_rows`], or being built: searches scan exactly). A
    /// diagnostic, as [`Self::namespace_loads`] is.
    pub async fn graph_len(&self, namespace: &str) -> Result<Option<usize>> {
        let ns = self.namespace(namespace).await?;
        let ns = ns.read().map_err(|_| poisoned())?;
        Ok(ns.graph.as_ref().map(VectorGraph::len))
    }

    /// Whether a graph of any namespace is being built or caught up in the background (a
    /// thread that holds this index's state): such an index must not be closed yet.
    pub(crate) fn is_building(&self) -> bool {
        let Ok(cache) = self.cache.read() else {
            return true;
        };
        cache
            .values()
            .any(|ns| ns.read().map_or(true, |ns| ns.building))
    }

    /// Loads the namespace and waits until its graph (if it should have one) is built, so
    /// that the next search does not scan exactly: a warm-up for servers and benchmarks. A
    /// graph that fails to build three times is an error (searches still scan exactly).
    pub async fn prepare(&self, namespace: &str) -> Result<()> {
        let mut attempts = 0;
        loop {
            let ns = self.namespace(namespace).await?;
            let (ready, idle) = {
                let ns = ns.read().map_err(|_| poisoned())?;
                let wanted = self
                    .approximate
                    .is_some_and(|a| ns.model.is_some() && ns.matrix.len() >= a.from_rows);
                (
                    !wanted || (ns.graph.is_some() && !ns.building),
                    !ns.building,
                )
            };
            if ready {
                return Ok(());
            }
            if idle {
                if attempts == 3 {
                    return Err(crate::error::graph(
                        "building",
                        format!("namespace {namespace:?}: failed three times"),
                    ));
                }
                attempts += 1;
                let due = self.ready_graph_off_worker(namespace, &ns, None).await?;
                self.publish_snapshot(namespace, due).await;
                continue;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Sets when the approximate graph is used; `None` scans every search exactly.
    pub fn with_approximate(mut self, approximate: Option<ApproximateSearch>) -> Self {
        self.approximate = approximate;
        self
    }

    /// The exact top `k`: every vector of the namespace that matches the filter scored in
    /// `f32`, with neither the graph nor the int8 pre-scan. The truth to measure the
    /// approximate search against (`memory bench long-term` does); a full scan per call.
    pub async fn search_exhaustive(
        &self,
        namespace: &str,
        query: &VectorQuery,
    ) -> Result<Vec<VectorHit>> {
        self.search_by(namespace, query, Scan::Exhaustive).await
    }

    /// A search of `namespace` by `scan`. A walk of the graph without a filter, for no more
    /// than the configured candidates, visits a bounded few thousand vectors (well under a
    /// millisecond, as a Tantivy search is), so it runs on the caller's thread when the
    /// namespace is not locked by a write. A scan, a filtered search (which may end in a
    /// scan of every row) or a deeper walk runs on a blocking thread: concurrent channels
    /// scan in parallel and no async worker is held for long.
    async fn search_by(
        &self,
        namespace: &str,
        query: &VectorQuery,
        scan: Scan,
    ) -> Result<Vec<VectorHit>> {
        let ns = self.namespace(namespace).await?;
        let approximate = self.approximate;
        let bounded = approximate.is_some_and(|a| 2 * query.k <= a.candidates);
        if matches!(scan, Scan::AsConfigured) && bounded && query.filter.is_empty() {
            // `try_read`: a write catching the graph up holds the lock for a while, and an
            // async worker must not wait for it.
            if let Ok(guard) = ns.try_read()
                && guard.graph.is_some()
            {
                return search_namespace(&guard, namespace, query, scan, approximate);
            }
        }
        let (query, name) = (query.clone(), namespace.to_owned());
        let search = move || {
            let guard = ns.read().map_err(|_| poisoned())?;
            search_namespace(&guard, &name, &query, scan, approximate)
        };
        tokio::task::spawn_blocking(search)
            .await
            .map_err(crate::error::task_failed)?
    }

    /// Whether the namespace's graph needs building, catching up or saving: a cheap look, so
    /// that most writes and loads skip [`Self::maintain`]'s thread hop.
    fn maintenance_due(&self, ns: &Arc<RwLock<Namespace>>) -> bool {
        let Some(settings) = self.approximate else {
            return false;
        };
        let Ok(ns) = ns.read() else {
            return false;
        };
        let unbuilt = ns.graph.is_none()
            && !ns.building
            && ns.model.is_some()
            && ns.matrix.len() >= settings.from_rows;
        let unsaved =
            ns.graph.is_some() && ns.unsaved >= settings.save_after.max(ns.matrix.len() / 4);
        unbuilt || unsaved
    }

    /// [`Self::ready_graph`] on a blocking thread: a catch-up, a scrub and a snapshot's
    /// encoding are CPU work (a 100,000-vector graph encodes to about 50 MB) that must not
    /// hold an async worker. `saved` also reads the namespace's snapshot there, as the base
    /// when `base` is `None`.
    async fn ready_graph_off_worker(
        &self,
        namespace: &str,
        ns: &Arc<RwLock<Namespace>>,
        base: Option<VectorGraph>,
    ) -> Result<Option<Snapshot>> {
        let (index, name, shared) = (self.clone(), namespace.to_owned(), Arc::clone(ns));
        tokio::task::spawn_blocking(move || index.ready_graph(&name, &shared, base))
            .await
            .map_err(crate::error::task_failed)?
    }

    /// Builds, catches up and saves the namespace's graph as due (off the async workers). A
    /// failure is logged: the rows are committed and searches scan exactly meanwhile.
    async fn maintain(
        &self,
        namespace: &str,
        ns: &Arc<RwLock<Namespace>>,
        base: Option<VectorGraph>,
    ) {
        if base.is_none() && !self.maintenance_due(ns) {
            return;
        }
        match self.ready_graph_off_worker(namespace, ns, base).await {
            Ok(due) => self.publish_snapshot(namespace, due).await,
            Err(error) => {
                tracing::warn!(namespace, %error, "the vector graph could not be built; searches scan exactly");
            }
        }
    }

    /// Brings the namespace's graph level with its matrix if it should have one: in this
    /// thread when little is missing, else in a background thread (searches scan exactly
    /// until it is done). `base` is a graph to start from (an earlier one, or a snapshot).
    fn ready_graph(
        &self,
        namespace: &str,
        ns: &Arc<RwLock<Namespace>>,
        base: Option<VectorGraph>,
    ) -> Result<Option<Snapshot>> {
        let Some(settings) = self.approximate else {
            return Ok(None);
        };
        let mut guard = ns.write().map_err(|_| poisoned())?;
        if guard.graph.is_some() || guard.building || guard.matrix.len() < settings.from_rows {
            drop(guard);
            return self.due_snapshot(ns, settings);
        }
        let Some((_, dims)) = guard.model.clone() else {
            return Ok(None);
        };
        // A graph holding too many rows shrunk to its scale is rebuilt, fitted anew.
        let base = match base.filter(|g| g.dims() == dims && !g.refit_due()) {
            Some(graph) => graph,
            None => VectorGraph::new(dims)?,
        };
        if base.differences(&guard.matrix) <= INLINE_CATCH_UP {
            let mut graph = base;
            let changes = self.catch_up(namespace, &mut graph, &guard.matrix)?;
            guard.unsaved += changes.added + changes.removed;
            guard.graph = Some(graph);
            drop(guard);
            return self.due_snapshot(ns, settings);
        }
        guard.building = true;
        let snapshot = guard.matrix.clone();
        drop(guard);
        let (index, name, shared) = (self.clone(), namespace.to_owned(), Arc::clone(ns));
        let runtime = tokio::runtime::Handle::try_current().ok();
        let spawned = std::thread::Builder::new()
            .name("vector-graph".into())
            .spawn(move || {
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    index.build_graph(&name, &shared, base, &snapshot, settings)
                }));
                match (built, runtime) {
                    (Ok(Ok(due)), Some(runtime)) => {
                        runtime.block_on(index.publish_snapshot(&name, due));
                    }
                    (Ok(Ok(_)), None) => {}
                    (Ok(Err(error)), _) => {
                        tracing::warn!(namespace = %name, %error, "building the vector graph failed; searches scan exactly");
                    }
                    (Err(_), _) => {
                        tracing::warn!(namespace = %name, "building the vector graph panicked; searches scan exactly");
                    }
                }
                // Even after a panic (a poisoned lock still hands out its data).
                let mut guard = shared.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                guard.building = false;
            });
        if let Err(error) = spawned {
            ns.write().map_err(|_| poisoned())?.building = false;
            return Err(crate::error::io(
                std::path::PathBuf::from("vector-graph thread"),
                error,
            ));
        }
        Ok(None)
    }

    /// Brings `graph` level with `matrix`; when that removed anything, the snapshot the graph
    /// may have started from (which holds what is gone) is erased.
    fn catch_up(
        &self,
        namespace: &str,
        graph: &mut VectorGraph,
        matrix: &VectorMatrix,
    ) -> Result<crate::vector_graph::Changes> {
        let changes = graph.catch_up(matrix)?;
        if changes.removed > 0 {
            self.snapshots.erase(namespace)?;
        }
        Ok(changes)
    }

    /// The background part of [`Self::ready_graph`]: the graph caught up with a copy of the
    /// matrix, then (under the lock) with the writes made meanwhile, installed and saved.
    fn build_graph(
        &self,
        namespace: &str,
        ns: &Arc<RwLock<Namespace>>,
        mut graph: VectorGraph,
        snapshot: &VectorMatrix,
        settings: ApproximateSearch,
    ) -> Result<Option<Snapshot>> {
        let started = std::time::Instant::now();
        self.catch_up(namespace, &mut graph, snapshot)?;
        let mut guard = ns.write().map_err(|_| poisoned())?;
        self.catch_up(namespace, &mut graph, &guard.matrix)?;
        tracing::debug!(namespace, rows = graph.len(), elapsed = ?started.elapsed(), "vector graph ready");
        guard.graph = Some(graph);
        // A new graph is saved at once (`building` stays set until that is done).
        guard.unsaved = guard.matrix.len().max(settings.save_after);
        drop(guard);
        self.due_snapshot(ns, settings)
    }

    /// The graph's snapshot when enough changed since the last one (removed vectors
    /// scrubbed out first), to be published by [`Self::publish_snapshot`].
    fn due_snapshot(
        &self,
        ns: &Arc<RwLock<Namespace>>,
        settings: ApproximateSearch,
    ) -> Result<Option<Snapshot>> {
        let mut guard = ns.write().map_err(|_| poisoned())?;
        if guard.unsaved < settings.save_after.max(guard.matrix.len() / 4) {
            return Ok(None);
        }
        let Some(version) = guard.version else {
            return Ok(None);
        };
        let Some(graph) = guard.graph.as_mut() else {
            return Ok(None);
        };
        if let Err(error) = graph.scrub() {
            // A half-scrubbed graph is not trusted: searches scan exactly until a rebuild.
            guard.graph = None;
            return Err(error);
        }
        let bytes = graph.encode(version)?;
        guard.unsaved = 0;
        Ok(Some(Snapshot { version, bytes }))
    }

    /// Writes a snapshot and publishes it if the namespace is still at its version (checked
    /// under the database's write lock, so an erasure committed meanwhile wins). A snapshot is
    /// a cache: a failure is logged, never the caller's error.
    async fn publish_snapshot(&self, namespace: &str, snapshot: Option<Snapshot>) {
        let Some(Snapshot { version, bytes }) = snapshot else {
            return;
        };
        let snapshots = Arc::clone(&self.snapshots);
        let name = namespace.to_owned();
        let published = async {
            let written = tokio::task::spawn_blocking(move || snapshots.write(&name, &bytes))
                .await
                .map_err(crate::error::task_failed)??;
            let mut tx = self.db.write().await?;
            if stored_version(&mut tx, namespace).await? == Some(version) {
                written.publish()?;
            }
            tx.rollback().await.map_err(db)
        };
        if let Err(error) = published.await {
            tracing::warn!(namespace, %error, "the vector graph's snapshot was not saved");
        }
    }

    /// The snapshot saved for `namespace`, if one is readable (a damaged one is ignored: the
    /// graph is rebuilt from the rows).
    fn saved_graph(&self, namespace: &str) -> Option<VectorGraph> {
        self.approximate?;
        match self
            .snapshots
            .read(namespace)
            .and_then(|bytes| match bytes {
                Some(bytes) => VectorGraph::decode(&bytes).map(|(_, graph)| Some(graph)),
                None => Ok(None),
            }) {
            Ok(graph) => graph,
            Err(error) => {
                tracing::warn!(namespace, %error, "ignoring an unreadable vector graph snapshot");
                None
            }
        }
    }

    /// The cached namespace, if any.
    fn cached(&self, namespace: &str) -> Result<Option<Arc<RwLock<Namespace>>>> {
        Ok(self
            .cache
            .read()
            .map_err(|_| poisoned())?
            .get(namespace)
            .map(Arc::clone))
    }

    /// `cached` when it is at `version` (a poisoned entry, after a panic under its lock, is
    /// treated as stale).
    fn at_version(
        cached: &Option<Arc<RwLock<Namespace>>>,
        version: Option<i64>,
    ) -> Option<Arc<RwLock<Namespace>>> {
        cached
            .as_ref()
            .filter(|ns| ns.read().is_ok_and(|ns| ns.version == version))
            .map(Arc::clone)
    }

    /// The namespace's matrix: the cached one while its version matches the file's, else
    /// loaded afresh (on first use, and after a write by another instance or process).
    async fn namespace(&self, namespace: &str) -> Result<Arc<RwLock<Namespace>>> {
        let current = self.versions.read(&self.db.reader, namespace).await?;
        let mut cached = self.cached(namespace)?;
        if let Some(ns) = Self::at_version(&cached, current) {
            return Ok(ns);
        }
        if cached.is_some() {
            // The file is ahead of the cache: perhaps by a write of this instance, committed
            // and not yet applied. Once none is (no commit happens while this is held), look
            // again: a cache still behind was passed by another instance or process.
            let _applied = self.publishing.lock().await;
            let current = stored_version(&mut *self.db.reader.acquire().await?, namespace).await?;
            cached = self.cached(namespace)?;
            if let Some(ns) = Self::at_version(&cached, current) {
                return Ok(ns);
            }
        }
        // A stale cache's graph is the best start for the new one (it needs only a catch-up).
        let earlier = match cached {
            Some(ns) => ns.write().ok().and_then(|mut ns| ns.graph.take()),
            None => None,
        };
        // One read transaction: the version, the model and the rows agree.
        self.loads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut reader = self.db.reader.acquire().await?;
        let mut tx = sqlx::Connection::begin(&mut *reader).await.map_err(db)?;
        let head =
            sqlx::query("SELECT model, dims, version FROM vector_namespaces WHERE namespace = ?")
                .bind(namespace)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        let version = head.as_ref().map(|r| r.get::<i64, _>(2));
        let model = head.map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
        let mut matrix = VectorMatrix::new(model.as_ref().map_or(0, |m| m.1));
        let rows = sqlx::query(
            "SELECT id, vector, session, kind, time FROM vectors WHERE namespace = ? ORDER BY id",
        )
        .bind(namespace)
        .fetch_all(&mut *tx)
        .await
        .map_err(db)?;
        for row in rows {
            matrix.upsert(
                row.get::<&str, _>(0),
                &decode(row.get::<&[u8], _>(1))?,
                fields_from_row(&row, 2),
            );
        }
        tx.commit().await.map_err(db)?;
        // Back before the graph work below, which may take seconds.
        drop(reader);
        let loaded = Arc::new(RwLock::new(Namespace {
            version,
            model,
            matrix,
            graph: None,
            building: false,
            unsaved: 0,
        }));
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .insert(namespace.to_owned(), Arc::clone(&loaded));
        let base = match earlier {
            Some(graph) => Some(graph),
            None if self.maintenance_due(&loaded) => {
                // Reading and decoding a snapshot is blocking work too.
                let (index, name) = (self.clone(), namespace.to_owned());
                tokio::task::spawn_blocking(move || index.saved_graph(&name))
                    .await
                    .map_err(crate::error::task_failed)?
            }
            None => None,
        };
        self.maintain(namespace, &loaded, base).await;
        Ok(loaded)
    }

    /// After a write that moved the namespace from `before` to `after`: apply it to the
    /// cached namespace when the cache is exactly at `before` (then its graph is maintained),
    /// leave a cache loaded after the commit (it is at `after`: it holds the write), and drop
    /// any other (the next read reloads). `publishing` is the write's hold on
    /// [`Self::publishing`], let go once the cache is settled (before any maintenance).
    async fn after_write(
        &self,
        publishing: tokio::sync::MutexGuard<'_, ()>,
        namespace: &str,
        before: Option<i64>,
        after: Option<i64>,
        apply: impl FnOnce(&mut Namespace) -> Result<()>,
    ) -> Result<()> {
        let Some(ns) = self.cached(namespace)? else {
            return Ok(());
        };
        let applied = {
            let mut cached = ns.write().map_err(|_| poisoned())?;
            if cached.version == after {
                return Ok(());
            }
            let applies = cached.version == before && cached.model.is_some();
            if applies {
                let result = apply(&mut cached);
                cached.version = after;
                if let Err(error) = result {
                    // The rows are committed; a graph that missed them must not answer.
                    cached.graph = None;
                    tracing::warn!(namespace, %error, "the vector graph missed a write; rebuilding");
                }
            }
            applies
        };
        if !applied {
            let mut cache = self.cache.write().map_err(|_| poisoned())?;
            if cache.get(namespace).is_some_and(|c| Arc::ptr_eq(c, &ns)) {
                cache.remove(namespace);
            }
            return Ok(());
        }
        drop(publishing);
        self.maintain(namespace, &ns, None).await;
        Ok(())
    }
}

#[async_trait]
impl VectorIndex for SqliteVectorIndex {
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        VectorRecord::check_finite(&records)?;
        // Loaded (or checked) first, so the write is applied to a cache at its version.
        self.namespace(namespace).await?;
        // The namespace's model is read inside the write transaction (writes are serialised),
        // so two writers with different models can never both win.
        let mut tx = self.db.write().await?;
        // Taken inside the transaction: writes take it in commit order, and a search waits
        // behind at most the one write between its commit and its apply.
        let publishing = self.publishing.lock().await;
        let head =
            sqlx::query("SELECT model, dims, version FROM vector_namespaces WHERE namespace = ?")
                .bind(namespace)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        let before = head.as_ref().map(|r| r.get::<i64, _>(2));
        let stored = head.map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1) as usize));
        let (model, dims) = stored
            .clone()
            .unwrap_or_else(|| (records[0].model.clone(), records[0].vector.len()));
        if dims == 0 {
            return Err(MemoryError::invalid("an empty vector cannot be indexed"));
        }
        if let Some(bad) = records
            .iter()
            .find(|r| r.model != model || r.vector.len() != dims)
        {
            return Err(MemoryError::invalid(format!(
                "namespace {namespace:?} holds {dims}-dimension vectors of model {model:?}; \
                 got {} dimensions of model {:?} (clear the namespace to re-embed)",
                bad.vector.len(),
                bad.model
            )));
        }
        let version = next_version(&mut tx).await?;
        sqlx::query(
            "INSERT INTO vector_namespaces(namespace, model, dims, version) VALUES (?, ?, ?, ?) \
             ON CONFLICT(namespace) DO UPDATE SET version = excluded.version",
        )
        .bind(namespace)
        .bind(&model)
        .bind(dims as i64)
        .bind(version)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        for record in &records {
            sqlx::query(
                "INSERT INTO vectors(namespace, id, vector, session, kind, time) \
                 VALUES (?, ?, ?, ?, ?, ?) \
                 ON CONFLICT(namespace, id) DO UPDATE SET vector = excluded.vector, \
                 session = excluded.session, kind = excluded.kind, time = excluded.time",
            )
            .bind(namespace)
            .bind(&record.id)
            .bind(encode(&record.vector))
            .bind(&record.fields.session)
            .bind(&record.fields.kind)
            .bind(record.fields.time.map(Timestamp::millis))
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        tx.commit().await.map_err(db)?;
        self.after_write(publishing, namespace, before, Some(version), |cached| {
            for record in &records {
                cached
                    .matrix
                    .upsert(&record.id, &record.vector, record.fields.clone());
            }
            let Some(graph) = cached.graph.as_mut() else {
                return Ok(());
            };
            // The row as stored (the last of repeated ids wins, as in the matrix).
            let mut seen = std::collections::HashSet::new();
            for record in &records {
                if seen.insert(record.id.as_str())
                    && let Some((row, hash, unit)) = cached.matrix.row_of(&record.id)
                {
                    graph.insert(&record.id, unit, hash, row)?;
                }
            }
            let refit = graph.refit_due();
            cached.unsaved += records.len();
            if refit {
                // Too many rows came after the graph's fit and are held shrunk: it is rebuilt
                // from the rows in the background (searches scan exactly meanwhile).
                cached.graph = None;
                tracing::info!(namespace, "refitting the vector graph to its rows");
            }
            Ok(())
        })
        .await
    }

    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64> {
        // Loaded (or checked) first, so the write is applied to a cache at its version.
        self.namespace(namespace).await?;
        let mut tx = self.db.write().await?;
        let publishing = self.publishing.lock().await;
        let Some(before) = stored_version(&mut tx, namespace).await? else {
            return Ok(0);
        };
        let mut removed = 0;
        for id in ids {
            removed += sqlx::query("DELETE FROM vectors WHERE namespace = ? AND id = ?")
                .bind(namespace)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db)?
                .rows_affected();
        }
        let after = if removed > 0 {
            let version = next_version(&mut tx).await?;
            sqlx::query("UPDATE vector_namespaces SET version = ? WHERE namespace = ?")
                .bind(version)
                .bind(namespace)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
            version
        } else {
            before
        };
        if removed > 0 {
            // No saved snapshot keeps an erased vector: it goes before the commit, under the
            // write lock every publication takes (a later save scrubs the graph first).
            self.snapshots.erase(namespace)?;
        }
        tx.commit().await.map_err(db)?;
        self.after_write(publishing, namespace, Some(before), Some(after), |cached| {
            // Every id leaves the matrix, even after the graph failed one (the graph is
            // then dropped): the matrix must match the committed rows.
            let mut failed = Ok(());
            for id in ids {
                let vacated = cached.matrix.remove(id);
                let Some(graph) = cached.graph.as_mut().filter(|_| failed.is_ok()) else {
                    continue;
                };
                failed = graph.remove(id).map(|_| ());
                // The matrix moved its last row into the removed one's place.
                if let Some(row) = vacated
                    && let Some(moved) = cached.matrix.id_at(row)
                {
                    graph.relocate(moved, row);
                }
            }
            cached.unsaved += ids.len();
            failed
        })
        .await?;
        Ok(removed)
    }

    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>> {
        self.search_by(namespace, query, Scan::AsConfigured).await
    }
    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64> {
        let sql = format!(
            "SELECT count(*) FROM vectors v WHERE v.namespace = ?{}",
            filter_sql(filter)
        );
        let mut query = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql)).bind(namespace);
        for text in [&filter.session, &filter.kind].into_iter().flatten() {
            query = query.bind(text);
        }
        for time in [filter.from, filter.to].into_iter().flatten() {
            query = query.bind(time.millis());
        }
        let count = query
            .fetch_one(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        Ok(count.max(0) as u64)
    }

    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // CROSS JOIN keeps the asked ids the outer loop: left to itself the planner may scan
        // the whole namespace and probe the id list for each vector (13 s for 1,000 ids in a
        // namespace of 100,000 instead of milliseconds).
        let rows = sqlx::query(
            "SELECT v.id, v.vector, n.model, v.session, v.kind, v.time FROM json_each(?) j \
             CROSS JOIN vectors v ON v.namespace = ? AND v.id = j.value \
             JOIN vector_namespaces n ON n.namespace = v.namespace ORDER BY j.key",
        )
        .bind(serde_json::to_string(ids)?)
        .bind(namespace)
        .fetch_all(&mut *self.db.reader.acquire().await?)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|r| {
                Ok(VectorRecord {
                    id: r.get(0),
                    vector: decode(r.get::<&[u8], _>(1))?,
                    model: r.get(2),
                    fields: fields_from_row(r, 3),
                })
            })
            .collect()
    }

    async fn model(&self, namespace: &str) -> Result<Option<String>> {
        let ns = self.namespace(namespace).await?;
        let ns = ns.read().map_err(|_| poisoned())?;
        Ok(ns.model.as_ref().map(|(m, _)| m.clone()))
    }

    /// One statement for all of them, and no namespace loaded (a search loads what it needs).
    async fn models(&self, namespaces: &[&str]) -> Result<Vec<Option<String>>> {
        if namespaces.is_empty() {
            return Ok(Vec::new());
        }
        let marks = vec!["?"; namespaces.len()].join(", ");
        let sql =
            format!("SELECT namespace, model FROM vector_namespaces WHERE namespace IN ({marks})");
        let mut query = sqlx::query_as::<_, (String, String)>(sqlx::AssertSqlSafe(sql));
        for namespace in namespaces {
            query = query.bind(*namespace);
        }
        let rows = query
            .fetch_all(&mut *self.db.reader.acquire().await?)
            .await
            .map_err(db)?;
        Ok(namespaces
            .iter()
            .map(|namespace| {
                rows.iter()
                    .find(|(name, _)| name == namespace)
                    .map(|(_, model)| model.clone())
            })
            .collect())
    }

    async fn clear(&self, namespace: &str) -> Result<()> {
        let mut tx = self.db.write().await?;
        next_version(&mut tx).await?;
        sqlx::query("DELETE FROM vector_namespaces WHERE namespace = ?")
            .bind(namespace)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        self.snapshots.erase(namespace)?;
        tx.commit().await.map_err(db)?;
        self.cache
            .write()
            .map_err(|_| poisoned())?
            .remove(namespace);
        Ok(())
    }
}

/// The search of one namespace, by `scan`: through the graph when it has one and
/// `approximate` is set, else by the int8 pre-scan, or every row in `f32`.
fn search_namespace(
    ns: &Namespace,
    name: &str,
    query: &VectorQuery,
    scan: Scan,
    approximate: Option<ApproximateSearch>,
) -> Result<Vec<VectorHit>> {
    let Some((_, dims)) = &ns.model else {
        return Ok(Vec::new());
    };
    let VectorQuery { vector, k, filter } = query;
    if *dims != vector.len() {
        return Err(MemoryError::invalid(format!(
            "query vector has {} dimensions; namespace {name:?} holds {dims}",
            vector.len()
        )));
    }
    let hits = match (scan, &ns.graph, approximate) {
        (Scan::Exhaustive, _, _) => ns.matrix.exhaustive(vector, *k, filter),
        (Scan::AsConfigured, Some(graph), Some(settings)) => {
            approximate_top_k(&ns.matrix, graph, vector, *k, filter, settings)
        }
        _ => ns.matrix.top_k(vector, *k, filter),
    };
    Ok(hits
        .into_iter()
        .map(|(id, score)| VectorHit { id, score })
        .collect())
}

/// The `k` best rows for `query` through the graph, rescored exactly: a filter that matches
/// few rows scans them exactly instead, and a graph walk that comes back short of what the
/// filter matches is answered by the exact scan.
fn approximate_top_k(
    matrix: &VectorMatrix,
    graph: &VectorGraph,
    query: &[f32],
    k: usize,
    filter: &VectorFilter,
    settings: ApproximateSearch,
) -> Vec<(String, f32)> {
    let matching = matrix.count_matching(filter, settings.exact_below.max(k));
    if !filter.is_empty() && matching < settings.exact_below {
        return matrix.top_k(query, k, filter);
    }
    let unit = normalised(query);
    let count = settings.candidates.max(2 * k);
    let keep: &dyn Fn(usize) -> bool = &|row| matrix.row_matches(row, filter);
    let found = match graph.search(&unit, count, (!filter.is_empty()).then_some(keep)) {
        Ok(found) => found,
        Err(error) => {
            // More concurrent searches than the graph keeps contexts for: scan this one.
            tracing::debug!(%error, "the vector graph refused a search; scanning exactly");
            return matrix.top_k(query, k, filter);
        }
    };
    let hits = matrix.rescore(&unit, found, k, filter);
    if hits.len() < k.min(matching) {
        return matrix.top_k(query, k, filter);
    }
    hits
}
