//! An approximate nearest-neighbour graph over one namespace's vectors: HNSW from the
//! `usearch` crate, its vectors quantised to int8 here, all on one scale fitted to the rows
//! ([`codes`]), and compared by their inner product (which, the codes being of one length,
//! orders neighbours as the cosine does for a third of the arithmetic).
//! usearch's own conversion would scale every unit vector by 127, leaving a dense embedding's
//! ±0.05 components at about ±6: too coarse to tell apart sentences a model puts close
//! together; the fitted scale gives them about ±30.
//!
//! The graph is a derived structure. The vectors in SQLite stay the truth: every write
//! lands there first, and the graph is brought level with the rows it should hold by
//! [`VectorGraph::catch_up`], which compares ids and the hash of each vector. Candidates
//! the graph finds are rescored exactly in `f32` by the caller, so returned scores are
//! exact cosines; only which rows are found is approximate.
//!
//! [`VectorGraph::encode`] writes a self-describing snapshot (the namespace version it
//! reflects, each id's key and vector hash, then usearch's own serialisation). usearch
//! frees a removed vector's slot but keeps its bytes (and saves them), so before a snapshot
//! [`VectorGraph::scrub`] overwrites every free slot with a random filler vector; the
//! snapshot records how many slots are free.

use std::collections::HashMap;

use memory_core::{MemoryError, Result};
use rustc_hash::FxHashMap;
use usearch::{Index, IndexOptions, Key, MetricKind, ScalarKind};

use crate::vector_matrix::{VectorMatrix, largest_component as largest};

/// Links per node: usearch's default, a common HNSW choice for a few hundred dimensions.
const CONNECTIVITY: usize = 16;
/// Candidate list while inserting: higher builds a better graph, more slowly.
const EXPANSION_ADD: usize = 128;
/// Searches and adds the graph serves at once: usearch keeps a context per concurrent caller
/// and refuses a caller beyond them (the index then scans exactly).
const CONCURRENT_CALLERS: usize = 128;
/// A catch-up adding at least this many vectors spreads them over the cores.
const PARALLEL_ADDS_FROM: usize = 2_048;
/// The least candidate list while searching (a search for more results uses as many).
const EXPANSION_SEARCH: usize = 64;
/// The first bytes of a snapshot file, with the format's version.
const MAGIC: &[u8; 8] = b"MEMANN05";
/// The first bytes of snapshots of earlier formats (`01`: usearch's own int8 conversion; `02`:
/// walked by inner product, briefly; `03`: each vector on its own scale, walked by cosine; `04`:
/// this format's graph as usearch 2.26 saved it): not read, the graph is rebuilt from the rows.
const EARLIER_MAGICS: [&[u8; 8]; 4] = [b"MEMANN01", b"MEMANN02", b"MEMANN03", b"MEMANN04"];
/// The code scale of a graph fitted to no rows: any unit vector fits (`x × 127`).
const UNFITTED_SCALE: f32 = 127.0;
/// A graph is refitted (rebuilt from the rows) once more than one member in this many is
/// held shrunk: rows added after the fit whose largest component passes the fitted one.
const SHRUNK_ONE_IN: usize = 100;

/// An HNSW graph, the mapping from the namespace's ids to the graph's keys, and from each key
/// to its row in the namespace's [`VectorMatrix`] (so a search's candidates are rescored
/// without looking up their ids).
pub(crate) struct VectorGraph {
    index: Index,
    dims: usize,
    /// Every member's codes are its unit vector times this (see [`codes`]).
    scale: f32,
    /// Members held shrunk (their largest component times `scale` passed 127).
    shrunk: usize,
    by_id: HashMap<String, Member>,
    /// Each member's row in the matrix the graph was last brought level with
    /// ([`Self::catch_up`]), kept in step by [`Self::insert`] and [`Self::relocate`];
    /// [`UNLINKED`] until then (a graph read from a snapshot). Hashed by Fx: a search looks
    /// up each of its candidates here, and SipHash was most of that lookup's cost.
    rows: FxHashMap<Key, usize>,
    next_key: Key,
    /// Slots freed by removals and not yet reused: usearch keeps their old bytes.
    free: usize,
    /// Some free slot may still hold a removed vector's bytes.
    unscrubbed: bool,
}

/// The row of a member not yet linked to a matrix (past any matrix's last row: a search
/// skips it).
const UNLINKED: usize = usize::MAX;

/// Keys of the filler vectors that overwrite free slots (never a member's key: those count up
/// from zero).
const FILLER_KEYS: Key = u64::MAX / 2;

/// One id in the graph.
#[derive(Debug, Clone, Copy)]
struct Member {
    key: Key,
    hash: u64,
    /// Held shrunk to fit the scale: its inner products, and so its rank, are lower.
    shrunk: bool,
}

impl std::fmt::Debug for VectorGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorGraph")
            .field("dims", &self.dims)
            .field("scale", &self.scale)
            .field("shrunk", &self.shrunk)
            .field("len", &self.by_id.len())
            .field("free", &self.free)
            .finish()
    }
}

/// What a catch-up changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    pub(crate) added: usize,
    pub(crate) removed: usize,
}

impl Changes {
    /// Whether anything changed.
    #[cfg(test)]
    pub(crate) fn any(&self) -> bool {
        self.added + self.removed > 0
    }
}

fn graph_error(what: &'static str, error: impl std::fmt::Display) -> MemoryError {
    crate::error::graph(what, error.to_string())
}

fn options(dims: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dims,
        metric: MetricKind::IP,
        quantization: ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    }
}

impl VectorGraph {
    /// An empty graph for `dims`-dimension vectors.
    pub(crate) fn new(dims: usize) -> Result<Self> {
        let index = Index::new(&options(dims)).map_err(|e| graph_error("creating", e))?;
        Ok(Self {
            index,
            dims,
            scale: UNFITTED_SCALE,
            shrunk: 0,
            by_id: HashMap::new(),
            rows: FxHashMap::default(),
            next_key: 0,
            free: 0,
            unscrubbed: false,
        })
    }

    /// Dimensions of the graph's vectors.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors in the graph.
    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the graph should be rebuilt from the rows, fitted anew: more than one member in
    /// [`SHRUNK_ONE_IN`] is held shrunk (rows came after the fit whose largest component
    /// passes every fitted row's). A shrunk member ranks lower than its cosine says.
    pub(crate) fn refit_due(&self) -> bool {
        self.shrunk * SHRUNK_ONE_IN > self.by_id.len()
    }

    /// Adds `id`, at matrix row `row`, or replaces it when its vector changed (`hash` tells).
    /// The vector is a unit vector of the graph's dimensions.
    pub(crate) fn insert(&mut self, id: &str, unit: &[f32], hash: u64, row: usize) -> Result<()> {
        if let Some(member) = self.by_id.get(id) {
            if member.hash == hash {
                self.rows.insert(member.key, row);
                return Ok(());
            }
            self.remove(id)?;
        }
        if self.index.size() + 1 > self.index.capacity() {
            let grown = (self.index.capacity() * 2).max(1_024);
            self.index
                .reserve_capacity_and_threads(grown, CONCURRENT_CALLERS)
                .map_err(|e| graph_error("reserving", e))?;
        }
        let key = self.next_key;
        self.index
            .add(key, &codes(unit, self.scale))
            .map_err(|e| graph_error("adding", e))?;
        // An add takes a free slot first.
        self.free = self.free.saturating_sub(1);
        self.next_key += 1;
        let shrunk = shrinks(unit, self.scale);
        self.shrunk += usize::from(shrunk);
        self.by_id
            .insert(id.to_owned(), Member { key, hash, shrunk });
        self.rows.insert(key, row);
        Ok(())
    }

    /// Records that member `id` is now at matrix row `row` (the matrix moved its last row into
    /// a removed one's place); nothing when `id` is no member.
    pub(crate) fn relocate(&mut self, id: &str, row: usize) {
        if let Some(member) = self.by_id.get(id) {
            self.rows.insert(member.key, row);
        }
    }

    /// Removes `id`; true if it was there.
    pub(crate) fn remove(&mut self, id: &str) -> Result<bool> {
        let Some(member) = self.by_id.remove(id) else {
            return Ok(false);
        };
        self.rows.remove(&member.key);
        self.shrunk -= usize::from(member.shrunk);
        self.index
            .remove(member.key)
            .map_err(|e| graph_error("removing", e))?;
        self.free += 1;
        self.unscrubbed = true;
        Ok(true)
    }

    /// Brings the graph level with `matrix`: adds what is missing or changed, removes what
    /// is gone, and links every member to its row.
    pub(crate) fn catch_up(&mut self, matrix: &VectorMatrix) -> Result<Changes> {
        let mut changes = Changes::default();
        let gone: Vec<String> = self
            .by_id
            .keys()
            .filter(|id| matrix.hash_of(id).is_none())
            .cloned()
            .collect();
        for id in gone {
            if self.remove(&id)? {
                changes.removed += 1;
            }
        }
        if self.by_id.is_empty() {
            // A graph with no members takes the scale that fits the rows it is about to hold.
            self.scale = fitted_scale(matrix);
        }
        let mut new = Vec::new();
        for (row, (id, hash, unit)) in matrix.entries().enumerate() {
            match self.by_id.get(id) {
                Some(member) if member.hash == hash => {
                    self.rows.insert(member.key, row);
                }
                Some(_) => {
                    // Changed: out with the old vector, then in with the new one.
                    self.remove(id)?;
                    changes.removed += 1;
                    new.push((row, id, hash, unit));
                }
                None => new.push((row, id, hash, unit)),
            }
        }
        changes.added = new.len();
        self.add_all(&new)?;
        Ok(changes)
    }

    /// Adds ids the graph does not hold, on every core when there are many (usearch takes
    /// concurrent adds, each caller with its own context).
    fn add_all(&mut self, rows: &[(usize, &str, u64, &[f32])]) -> Result<()> {
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(CONCURRENT_CALLERS);
        if rows.len() < PARALLEL_ADDS_FROM || threads < 2 {
            for (row, id, hash, unit) in rows {
                self.insert(id, unit, *hash, *row)?;
            }
            return Ok(());
        }
        let needed = self.index.size() + rows.len();
        if needed > self.index.capacity() {
            self.index
                .reserve_capacity_and_threads(needed.max(1_024), CONCURRENT_CALLERS)
                .map_err(|e| graph_error("reserving", e))?;
        }
        let first = self.next_key;
        let (index, scale) = (&self.index, self.scale);
        let chunk = rows.len().div_ceil(threads);
        let added: Vec<Result<()>> = std::thread::scope(|scope| {
            let workers: Vec<_> = rows
                .chunks(chunk)
                .enumerate()
                .map(|(c, part)| {
                    scope.spawn(move || {
                        for (i, (_, _, _, unit)) in part.iter().enumerate() {
                            let key = first + (c * chunk + i) as Key;
                            index
                                .add(key, &codes(unit, scale))
                                .map_err(|e| graph_error("adding", e))?;
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|_| Err(crate::error::invariant("a graph insert panicked")))
                })
                .collect()
        });
        // Every key is recorded, added or not, so a failure leaves no unknown node behind.
        for (i, (row, id, hash, unit)) in rows.iter().enumerate() {
            let key = first + i as Key;
            let shrunk = shrinks(unit, self.scale);
            self.shrunk += usize::from(shrunk);
            self.by_id.insert(
                (*id).to_owned(),
                Member {
                    key,
                    hash: *hash,
                    shrunk,
                },
            );
            self.rows.insert(key, *row);
        }
        self.next_key = first + rows.len() as Key;
        self.free = self.free.saturating_sub(rows.len());
        added.into_iter().collect()
    }

    /// How many adds and removals [`Self::catch_up`] would make to match `matrix`.
    pub(crate) fn differences(&self, matrix: &VectorMatrix) -> usize {
        let gone = self
            .by_id
            .keys()
            .filter(|id| matrix.hash_of(id).is_none())
            .count();
        let changed = matrix
            .entries()
            .filter(|(id, hash, _)| self.by_id.get(*id).is_none_or(|m| m.hash != *hash))
            .count();
        gone + changed
    }

    /// The matrix rows of up to `count` vectors near `unit` (approximately the nearest) among
    /// those `keep` accepts (by row); the candidate list is `count` long, at least 64. A graph
    /// not yet linked to a matrix ([`Self::catch_up`]) finds nothing.
    pub(crate) fn search(
        &self,
        unit: &[f32],
        count: usize,
        keep: Option<&dyn Fn(usize) -> bool>,
    ) -> Result<Vec<usize>> {
        if count == 0 || self.by_id.is_empty() {
            return Ok(Vec::new());
        }
        let query = codes(unit, self.scale);
        let found = match keep {
            None => self.index.search(&query, count),
            Some(keep) => self.index.filtered_search(&query, count, |key| {
                self.rows
                    .get(&key)
                    .is_some_and(|&row| row != UNLINKED && keep(row))
            }),
        }
        .map_err(|e| graph_error("searching", e))?;
        Ok(found
            .keys
            .iter()
            .filter_map(|key| self.rows.get(key).copied())
            .filter(|&row| row != UNLINKED)
            .collect())
    }

    /// Overwrites every free slot: random filler vectors are added (each add takes a free
    /// slot) and removed again, so no removed vector's bytes are left in memory or in a
    /// snapshot.
    pub(crate) fn scrub(&mut self) -> Result<()> {
        if !self.unscrubbed {
            return Ok(());
        }
        // Random unit vectors, not zeros: a filler is linked into the graph while it is there,
        // and zero vectors (all at distance 0 of each other) would link mostly to each other.
        let mut state: u64 = 0x2545_f491_4f6c_dd1d ^ self.next_key;
        let mut filler = || -> Vec<f32> {
            let v: Vec<f32> = (0..self.dims)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % 2_001) as f32 / 1_000.0 - 1.0
                })
                .collect();
            crate::vector_matrix::normalised(&v)
        };
        // The fillers take free slots only, so the capacity suffices; reserve anyway in case.
        let needed = self.index.size() + self.free;
        if needed > self.index.capacity() {
            self.index
                .reserve_capacity_and_threads(needed, CONCURRENT_CALLERS)
                .map_err(|e| graph_error("reserving", e))?;
        }
        let fillers = FILLER_KEYS..FILLER_KEYS + self.free as Key;
        for key in fillers.clone() {
            self.index
                .add(key, &codes(&filler(), self.scale))
                .map_err(|e| graph_error("scrubbing", e))?;
        }
        for key in fillers {
            self.index
                .remove(key)
                .map_err(|e| graph_error("scrubbing", e))?;
        }
        self.unscrubbed = false;
        Ok(())
    }

    /// A snapshot of the graph as of namespace `version`. Scrub it first: a snapshot taken
    /// with removals pending would keep the removed vectors.
    pub(crate) fn encode(&self, version: i64) -> Result<Vec<u8>> {
        if self.unscrubbed {
            return Err(crate::error::invariant(
                "a vector graph with removals is scrubbed before it is saved",
            ));
        }
        let length = self.index.serialized_length();
        let mut out = Vec::with_capacity(length + 64 + self.by_id.len() * 96);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&(self.dims as u64).to_le_bytes());
        out.extend_from_slice(&u64::from(self.scale.to_bits()).to_le_bytes());
        out.extend_from_slice(&self.next_key.to_le_bytes());
        out.extend_from_slice(&(self.by_id.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.free as u64).to_le_bytes());
        for (id, member) in &self.by_id {
            out.extend_from_slice(&member.key.to_le_bytes());
            out.extend_from_slice(&member.hash.to_le_bytes());
            out.push(u8::from(member.shrunk));
            out.extend_from_slice(&(id.len() as u64).to_le_bytes());
            out.extend_from_slice(id.as_bytes());
        }
        out.extend_from_slice(&(length as u64).to_le_bytes());
        let start = out.len();
        out.resize(start + length, 0);
        self.index
            .save_to_buffer(&mut out[start..])
            .map_err(|e| graph_error("saving", e))?;
        Ok(out)
    }

    /// A graph from a snapshot, with the namespace version it reflects; [`Self::catch_up`]
    /// links it to a matrix before it finds anything.
    pub(crate) fn decode(bytes: &[u8]) -> Result<(i64, Self)> {
        let mut reader = Reader { bytes, at: 0 };
        match reader.take(MAGIC.len())? {
            magic if magic == MAGIC => {}
            magic if EARLIER_MAGICS.iter().any(|earlier| magic == *earlier) => {
                return Err(crate::error::invariant(
                    "a vector graph snapshot of an earlier format is rebuilt, not read",
                ));
            }
            _ => return Err(corrupt()),
        }
        let version = reader.u64()? as i64;
        let dims = reader.u64()? as usize;
        // A scale below 127 would waste codes, one above 127 √dims would shrink every unit
        // vector: neither is written, so neither is read.
        let scale = u32::try_from(reader.u64()?)
            .map(f32::from_bits)
            .ok()
            .filter(|s| (UNFITTED_SCALE..=UNFITTED_SCALE * (dims as f32).sqrt()).contains(s))
            .ok_or_else(corrupt)?;
        let next_key = reader.u64()?;
        let members = reader.u64()? as usize;
        let free = reader.u64()? as usize;
        let mut by_id = HashMap::with_capacity(members.min(bytes.len() / 24));
        let mut rows =
            FxHashMap::with_capacity_and_hasher(members.min(bytes.len() / 24), Default::default());
        for _ in 0..members {
            let key = reader.u64()?;
            let hash = reader.u64()?;
            let shrunk = match reader.take(1)? {
                [0] => false,
                [1] => true,
                _ => return Err(corrupt()),
            };
            let length = reader.u64()? as usize;
            let id = std::str::from_utf8(reader.take(length)?).map_err(|_| corrupt())?;
            by_id.insert(id.to_owned(), Member { key, hash, shrunk });
            rows.insert(key, UNLINKED);
        }
        let length = reader.u64()? as usize;
        let index = Index::new(&options(dims)).map_err(|e| graph_error("creating", e))?;
        index
            .load_from_buffer(reader.take(length)?)
            .map_err(|e| graph_error("loading", e))?;
        // The free slots are stored nodes beyond the members: no more than the index holds.
        if free > index.capacity().saturating_sub(index.size()) {
            return Err(corrupt());
        }
        index
            .reserve_capacity_and_threads(index.capacity().max(1_024), CONCURRENT_CALLERS)
            .map_err(|e| graph_error("reserving", e))?;
        if index.size() != by_id.len() || index.dimensions() != dims {
            return Err(corrupt());
        }
        Ok((
            version,
            Self {
                index,
                dims,
                scale,
                shrunk: by_id.values().filter(|m| m.shrunk).count(),
                by_id,
                rows,
                next_key,
                free,
                unscrubbed: false,
            },
        ))
    }
}

/// A unit vector's codes at `scale`: `x × scale`, rounded. One scale for every member keeps
/// the codes' lengths equal (rounding moves them by a few hundredths of a percent at the
/// scales fitted here), so their inner product, one integer dot product, orders neighbours as
/// the cosine would with three. A vector whose largest component would pass ±127 (one that
/// came after the fit, see [`fitted_scale`]) is shrunk whole to fit: its direction is kept,
/// its length, and so its rank, are lower, and [`VectorGraph::refit_due`] counts it.
///
/// ```text
/// codes([0.6, -0.8], 100.0) == [60, -80]
/// codes([0.6, -0.8], 200.0) == [95, -127]   // shrunk to fit
/// ```
fn codes(unit: &[f32], scale: f32) -> Vec<i8> {
    let scale = match shrinks(unit, scale) {
        true => 127.0 / largest(unit),
        false => scale,
    };
    unit.iter()
        .map(|x| (x * scale).round().clamp(-127.0, 127.0) as i8)
        .collect()
}

/// Whether [`codes`] shrinks `unit` at `scale`.
fn shrinks(unit: &[f32], scale: f32) -> bool {
    largest(unit) * scale > 127.0
}

/// The finest scale that codes every row of `matrix` without shrinking it: 127 over the
/// largest component of any row. A dense sentence embedding's largest component is near 0.2
/// (0.27 at most among 100,000 of the local model's), so its typical ±0.05 components get
/// codes near ±25, where `x × 127` would give ±6. An empty matrix gets [`UNFITTED_SCALE`].
fn fitted_scale(matrix: &VectorMatrix) -> f32 {
    let top = matrix
        .entries()
        .map(|(_, _, unit)| largest(unit))
        .filter(|m| m.is_finite())
        .fold(0.0f32, f32::max);
    if top <= 0.0 {
        return UNFITTED_SCALE;
    }
    // `top × (127 / top)` may round to just past 127, which would shrink that very row.
    let mut scale = 127.0 / top;
    while top * scale > 127.0 {
        scale = scale.next_down();
    }
    scale.max(UNFITTED_SCALE)
}

fn corrupt() -> MemoryError {
    crate::error::invariant("a vector graph snapshot is malformed")
}

/// Reads a snapshot front to back.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).ok_or_else(corrupt)?;
        let slice = self.bytes.get(self.at..end).ok_or_else(corrupt)?;
        self.at = end;
        Ok(slice)
    }

    fn u64(&mut self) -> Result<u64> {
        let mut word = [0; 8];
        word.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(word))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::vector_matrix::{NarrowCone, normalised};
    use memory_core::ports::{VectorFields, VectorFilter};

    /// Clustered unit vectors, as sentence embeddings are: a few hundred centres, noise.
    fn clustered(n: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 20_001) as f32 / 10_000.0 - 1.0
        };
        let centres: Vec<Vec<f32>> = (0..200)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        (0..n)
            .map(|i| {
                let centre = &centres[(i * 7919) % centres.len()];
                normalised(
                    &centre
                        .iter()
                        .map(|c| c + 0.6 * next())
                        .collect::<Vec<f32>>(),
                )
            })
            .collect()
    }

    fn matrix_of(vectors: &[Vec<f32>]) -> VectorMatrix {
        let mut matrix = VectorMatrix::new(vectors[0].len());
        for (i, v) in vectors.iter().enumerate() {
            matrix.upsert(&format!("{i:06}"), v, VectorFields::default());
        }
        matrix
    }

    fn graph_of(matrix: &VectorMatrix) -> VectorGraph {
        let mut graph = VectorGraph::new(matrix.dims()).unwrap();
        graph.catch_up(matrix).unwrap();
        graph
    }

    /// The ids of the matrix rows a search found.
    fn ids(matrix: &VectorMatrix, rows: Vec<usize>) -> Vec<&str> {
        rows.into_iter()
            .map(|row| matrix.id_at(row).unwrap())
            .collect()
    }

    #[test]
    fn finds_nearly_all_of_the_exact_top_ten() {
        let vectors = clustered(6_000, 48, 7);
        let matrix = matrix_of(&vectors);
        let graph = graph_of(&matrix);
        let queries = clustered(50, 48, 99);
        let (mut found, mut total) = (0, 0);
        for q in &queries {
            let exact = matrix.top_k(q, 10, &VectorFilter::default());
            let ids = graph.search(q, 40, None).unwrap();
            let approximate = matrix.rescore(q, ids, 10, &VectorFilter::default());
            total += exact.len();
            found += exact.iter().filter(|hit| approximate.contains(hit)).count();
        }
        let recall = found as f64 / total as f64;
        assert!(recall >= 0.95, "recall@10 against exact: {recall}");
    }

    #[test]
    fn catch_up_adds_changes_and_removes_by_hash() {
        let vectors = clustered(300, 16, 3);
        let mut matrix = matrix_of(&vectors);
        let mut graph = graph_of(&matrix);
        assert_eq!(graph.len(), 300);
        matrix.remove("000001");
        matrix.upsert("000002", &vectors[9], VectorFields::default());
        matrix.upsert("new", &vectors[5], VectorFields::default());
        let changes = graph.catch_up(&matrix).unwrap();
        assert_eq!(
            changes,
            Changes {
                added: 2,
                removed: 2
            }
        );
        assert_eq!(graph.len(), 300);
        let again = graph.catch_up(&matrix).unwrap();
        assert!(!again.any());
        let near_nine = ids(&matrix, graph.search(&vectors[9], 2, None).unwrap());
        assert!(near_nine.contains(&"000002") && near_nine.contains(&"000009"));
    }

    /// As the index applies writes to a namespace with a graph: a removal moves the matrix's
    /// last row into the hole (the graph is told), a changed vector is replaced in place.
    /// Every member's row is still its own: its own vector finds it.
    #[test]
    fn rows_follow_the_matrix_through_removals_and_changes() {
        let vectors = clustered(1_100, 16, 29);
        let mut matrix = matrix_of(&vectors[..1_000]);
        let mut graph = graph_of(&matrix);
        for i in (0..1_000).step_by(3) {
            let id = format!("{i:06}");
            let vacated = matrix.remove(&id);
            graph.remove(&id).unwrap();
            if let Some(row) = vacated
                && let Some(moved) = matrix.id_at(row)
            {
                graph.relocate(moved, row);
            }
        }
        for (n, i) in (1..1_000).step_by(10).enumerate() {
            let id = format!("{i:06}");
            matrix.upsert(&id, &vectors[1_000 + n], VectorFields::default());
            let (row, hash, unit) = matrix.row_of(&id).unwrap();
            graph.insert(&id, unit, hash, row).unwrap();
        }
        assert_eq!(graph.len(), matrix.len());
        let found = matrix
            .entries()
            .enumerate()
            .filter(|(row, (_, _, unit))| graph.search(unit, 5, None).unwrap().contains(row))
            .count();
        assert!(
            found * 100 >= matrix.len() * 99,
            "{found} of {} rows found by their own vector",
            matrix.len()
        );
        // A catch-up finds nothing to change, and links the same rows.
        assert!(!graph.catch_up(&matrix).unwrap().any());
    }

    #[test]
    fn a_filter_keeps_only_what_it_accepts() {
        let vectors = clustered(2_000, 16, 5);
        let matrix = matrix_of(&vectors);
        let graph = graph_of(&matrix);
        let even = |row: usize| {
            matrix
                .id_at(row)
                .is_some_and(|id| id.ends_with(['0', '2', '4', '6', '8']))
        };
        let rows = graph.search(&vectors[3], 10, Some(&even)).unwrap();
        assert_eq!(rows.len(), 10);
        assert!(rows.iter().all(|&row| even(row)));
    }

    #[test]
    fn a_snapshot_round_trips_and_refuses_garbage() {
        let vectors = clustered(500, 16, 11);
        let mut matrix = matrix_of(&vectors);
        let mut graph = graph_of(&matrix);
        matrix.remove("000004");
        graph.catch_up(&matrix).unwrap();
        assert!(graph.encode(7).is_err(), "removals are scrubbed first");
        graph.scrub().unwrap();
        let bytes = graph.encode(7).unwrap();
        let (version, mut loaded) = VectorGraph::decode(&bytes).unwrap();
        assert_eq!((version, loaded.len()), (7, 499));
        // Rows are the matrix's, not the snapshot's: a loaded graph finds nothing until linked.
        assert!(loaded.search(&vectors[8], 5, None).unwrap().is_empty());
        assert!(!loaded.catch_up(&matrix).unwrap().any());
        assert_eq!(
            graph.search(&vectors[8], 5, None).unwrap(),
            loaded.search(&vectors[8], 5, None).unwrap()
        );
        assert!(VectorGraph::decode(&bytes[..bytes.len() / 2]).is_err());
        assert!(VectorGraph::decode(b"not a graph").is_err());
        // Graphs of earlier formats held other codes: they are rebuilt, not read.
        for earlier in EARLIER_MAGICS {
            let mut old = bytes.clone();
            old[..earlier.len()].copy_from_slice(earlier);
            let refused = VectorGraph::decode(&old).err().map(|e| e.to_string());
            assert!(refused.is_some_and(|e| e.contains("earlier format")));
        }
    }

    /// Dense vectors crowded in a narrow cone, as a sentence model embeds texts of one kind:
    /// the graph holds them on one fine scale and, walking by inner product with a long
    /// enough candidate list, finds nearly all of the exact top ten (2,000 rows are added one
    /// by one, so the graph is the same every run).
    #[test]
    fn finds_the_exact_top_ten_in_a_narrow_cone() {
        let mut cone = NarrowCone::new(384, 0x9e37_79b9_7f4a_7c15);
        let mut near = |spread: f32| normalised(&cone.near(spread));
        let vectors: Vec<Vec<f32>> = (0..2_000).map(|_| near(0.15)).collect();
        let matrix = matrix_of(&vectors);
        let graph = graph_of(&matrix);
        // Every member is held at the one fitted scale, finer than usearch's own conversion
        // (`x × 127`, which would leave these components below ±25), and none is shrunk.
        assert!(graph.scale > 2.0 * UNFITTED_SCALE, "scale {}", graph.scale);
        assert_eq!(graph.shrunk, 0);
        let mut at_the_edge = 0;
        for (id, _, unit) in matrix.entries() {
            let held: Vec<i8> = stored_codes(&graph, id)
                .into_iter()
                .map(|b| b as i8)
                .collect();
            assert_eq!(held, codes(unit, graph.scale));
            at_the_edge += usize::from(held.iter().any(|c| c.unsigned_abs() == 127));
        }
        assert!(
            at_the_edge >= 1,
            "the row with the largest component reaches ±127"
        );
        let (mut found, mut total) = (0, 0);
        for _ in 0..40 {
            let q = near(0.15);
            let exact = matrix.exhaustive(&q, 10, &VectorFilter::default());
            let ids = graph.search(&q, 128, None).unwrap();
            let approximate = matrix.rescore(&q, ids, 10, &VectorFilter::default());
            total += exact.len();
            found += exact.iter().filter(|hit| approximate.contains(hit)).count();
        }
        let recall = found as f64 / total as f64;
        assert!(recall >= 0.95, "recall@10 against exact: {recall}");
    }

    #[test]
    fn codes_keep_one_scale_and_shrink_what_would_not_fit() {
        assert_eq!(codes(&[0.6, -0.8], 100.0), [60, -80]);
        // 0.8 × 200 would pass 127: the vector is shrunk whole, its direction kept.
        assert_eq!(codes(&[0.6, -0.8], 200.0), [95, -127]);
        assert_eq!(codes(&[0.0, 0.0], 300.0), [0, 0]);
    }

    /// A unit vector with all its length in one component (a one-word text's hashed vector).
    fn spike(dims: usize, at: usize) -> Vec<f32> {
        let mut v = vec![0.0; dims];
        v[at] = 1.0;
        v
    }

    #[test]
    fn the_scale_fits_every_row_and_rows_past_it_are_shrunk_counted_and_found() {
        let vectors = clustered(3_000, 64, 19);
        let top = vectors.iter().map(|v| largest(v)).fold(0.0f32, f32::max);
        let mut matrix = matrix_of(&vectors);
        let fitted = fitted_scale(&matrix);
        assert!(top * fitted <= 127.0 && fitted > 0.999_999 * (127.0 / top));
        assert_eq!(fitted_scale(&VectorMatrix::new(64)), UNFITTED_SCALE);
        let mut graph = graph_of(&matrix);
        assert_eq!((graph.shrunk, graph.refit_due()), (0, false));
        // Spikes come after the fit: each is held shrunk, and still found by its own vector.
        let add_spikes =
            |matrix: &mut VectorMatrix, graph: &mut VectorGraph, ns: std::ops::Range<usize>| {
                for n in ns {
                    matrix.upsert(
                        &format!("spike{n:02}"),
                        &spike(64, n),
                        VectorFields::default(),
                    );
                }
                graph.catch_up(matrix).unwrap();
            };
        add_spikes(&mut matrix, &mut graph, 0..30);
        assert_eq!((graph.shrunk, graph.refit_due()), (30, false));
        let found = graph.search(&spike(64, 3), 1, None).unwrap();
        assert_eq!(ids(&matrix, found), ["spike03"]);
        // Past one in a hundred, the graph asks to be rebuilt; a snapshot remembers the count.
        add_spikes(&mut matrix, &mut graph, 30..40);
        assert_eq!((graph.shrunk, graph.refit_due()), (40, true));
        let (_, loaded) = VectorGraph::decode(&graph.encode(3).unwrap()).unwrap();
        assert_eq!((loaded.shrunk, loaded.refit_due()), (40, true));
        matrix.remove("spike39");
        graph.catch_up(&matrix).unwrap();
        assert_eq!(graph.shrunk, 39, "a removed member leaves the count");
        // Rebuilt from the rows, the graph fits them all: a spike's component sets the scale.
        let rebuilt = graph_of(&matrix);
        assert_eq!((rebuilt.scale, rebuilt.shrunk), (UNFITTED_SCALE, 0));
    }

    #[test]
    fn a_snapshot_with_a_scale_no_graph_writes_is_refused() {
        let graph = graph_of(&matrix_of(&clustered(200, 16, 23)));
        let bytes = graph.encode(1).unwrap();
        // The scale's bits follow the format, the version and the dimensions.
        for scale in [0.0f32, 1.0, 127.0 * 4.0 + 1.0, f32::NAN] {
            let mut bad = bytes.clone();
            bad[24..32].copy_from_slice(&u64::from(scale.to_bits()).to_le_bytes());
            assert!(VectorGraph::decode(&bad).is_err(), "scale {scale}");
        }
    }

    /// The int8 form of a member's vector usearch holds.
    fn stored_codes(graph: &VectorGraph, id: &str) -> Vec<u8> {
        let mut out = vec![0i8; graph.dims];
        graph.index.get(graph.by_id[id].key, &mut out).unwrap();
        out.into_iter().map(|x| x as u8).collect()
    }

    #[test]
    fn a_scrubbed_snapshot_holds_no_removed_vector() {
        let vectors = clustered(300, 16, 13);
        let mut matrix = matrix_of(&vectors);
        let mut graph = graph_of(&matrix);
        let holds = |bytes: &[u8], c: &[u8]| bytes.windows(c.len()).any(|w| w == c);
        let (first, second) = (
            stored_codes(&graph, "000017"),
            stored_codes(&graph, "000018"),
        );
        assert!(holds(&graph.encode(1).unwrap(), &first));
        matrix.remove("000017");
        graph.catch_up(&matrix).unwrap();
        graph.scrub().unwrap();
        // A second removal while the first slot is still free: both are overwritten.
        matrix.remove("000018");
        graph.catch_up(&matrix).unwrap();
        graph.scrub().unwrap();
        let bytes = graph.encode(2).unwrap();
        assert!(!holds(&bytes, &first) && !holds(&bytes, &second));
        let (_, mut loaded) = VectorGraph::decode(&bytes).unwrap();
        assert_eq!(loaded.free, 2, "a loaded graph knows its free slots");
        loaded.catch_up(&matrix).unwrap();
        let near = loaded.search(&vectors[19], 1, None).unwrap();
        assert_eq!(ids(&matrix, near), ["000019"]);
    }

    #[test]
    fn many_concurrent_searches_are_served() {
        let vectors = clustered(3_000, 16, 17);
        let graph = graph_of(&matrix_of(&vectors));
        std::thread::scope(|scope| {
            for t in 0..48 {
                let (graph, vectors) = (&graph, &vectors);
                scope.spawn(move || {
                    for q in 0..20 {
                        let found = graph.search(&vectors[(t * 20 + q) % 3_000], 10, None);
                        assert_eq!(found.unwrap().len(), 10);
                    }
                });
            }
        });
    }
}
