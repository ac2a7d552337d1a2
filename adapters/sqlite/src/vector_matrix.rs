//! An in-memory matrix of unit vectors with top-k cosine search.
//!
//! Scanning 100,000 × 384 `f32`s reads 150 MB per query, so a large matrix is first scanned
//! in an int8 copy (a quarter of the bytes), and the best `4k + 64` candidates are rescored
//! exactly in `f32`. Each row is quantised on its own scale ([`quantised`]: its largest
//! component becomes ±127), so a dense 384-dimension embedding's typical ±0.05 component
//! becomes about ±35 rather than the ±6 a fixed `x × 127` leaves it. The result is the exact top k
//! unless more than `4k + 64` rows score within the quantisation's error of the k-th best
//! (thousands of near-duplicates); the returned scores are always exact `f32` cosines. A test
//! compares against the exhaustive scan, which [`VectorMatrix::exhaustive`] also offers.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use memory_core::ports::{VectorFields, VectorFilter};
use simsimd::SpatialSimilarity;

/// Rows of L2-normalised vectors, contiguous, with their ids and filterable fields.
#[derive(Debug, Clone, Default)]
pub(crate) struct VectorMatrix {
    dims: usize,
    ids: Vec<String>,
    fields: Vec<VectorFields>,
    rows: HashMap<String, usize>,
    data: Vec<f32>,
    codes: Vec<i8>,
    /// Each row's code scale: its codes times this are its unit vector, approximately.
    code_scales: Vec<f32>,
    /// A hash of each row's unit vector: how the approximate graph tells a changed row.
    hashes: Vec<u64>,
}

/// FNV-1a over a unit vector's bits, a component at a time: equal vectors, equal hashes.
fn vector_hash(unit: &[f32]) -> u64 {
    unit.iter().fold(0xcbf2_9ce4_8422_2325, |hash: u64, x| {
        (hash ^ u64::from(x.to_bits())).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Below this many rows the exact scan is cheap enough on its own.
const QUANTISED_FROM: usize = 4_096;

/// A vector's int8 codes on its own scale, and that scale: the largest component becomes ±127
/// and `codes × scale ≈ vector`. A quarter of the bytes of `f32`; a dense unit vector of a few
/// hundred dimensions (components near ±0.05, the largest near ±0.2) gets codes near ±35 for
/// its typical components, where a fixed `x × 127` would give ±6. The zero vector gets zero
/// codes.
///
/// ```text
/// quantised([0.1, -0.05, 0.0]) == ([127, -64, 0], 0.1 / 127)
/// ```
pub(crate) fn quantised(vector: &[f32]) -> (Vec<i8>, f32) {
    let largest = largest_component(vector);
    if !largest.is_finite() || largest <= 0.0 {
        return (vec![0; vector.len()], 0.0);
    }
    let codes = vector
        .iter()
        .map(|x| (x * 127.0 / largest).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (codes, largest / 127.0)
}

/// A vector's largest component, in absolute value.
pub(crate) fn largest_component(vector: &[f32]) -> f32 {
    vector.iter().fold(0.0f32, |m, x| m.max(x.abs()))
}

/// Integer dot product through SimSIMD, which picks the CPU's best kernel at run time
/// (AVX-512 VNNI, AVX2, NEON, ...); plain Rust if the lengths differ.
fn dot_quantised(a: &[i8], b: &[i8]) -> i32 {
    match <i8 as SpatialSimilarity>::dot(a, b) {
        Some(d) => d as i32,
        None => a
            .iter()
            .zip(b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum(),
    }
}

/// `v / |v|`; the zero vector stays zero (it matches nothing).
pub(crate) fn normalised(v: &[f32]) -> Vec<f32> {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter().map(|x| x / norm).collect()
    } else {
        v.to_vec()
    }
}

/// `f32` dot product through SimSIMD (run-time kernel choice).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    match <f32 as SpatialSimilarity>::dot(a, b) {
        Some(d) => d as f32,
        None => a.iter().zip(b).map(|(x, y)| x * y).sum(),
    }
}

/// A row's score in the int8 pre-scan (ordered by score, then row).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f32,
    row: usize,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| self.row.cmp(&other.row))
    }
}

/// A candidate in the bounded heap: the worst kept hit sits on top.
struct Scored<'a> {
    score: f32,
    row: usize,
    id: &'a str,
}

impl PartialEq for Scored<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored<'_> {}
impl PartialOrd for Scored<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored<'_> {
    /// "Greater" = worse: lower score, then later id.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.id.cmp(other.id))
    }
}

impl VectorMatrix {
    /// An empty matrix of `dims` columns.
    pub(crate) fn new(dims: usize) -> Self {
        Self {
            dims,
            ..Self::default()
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Columns per row.
    #[cfg(test)]
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Every row: its id, the hash of its vector, and its unit vector.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, u64, &[f32])> {
        self.ids
            .iter()
            .zip(&self.hashes)
            .zip(self.data.chunks_exact(self.dims.max(1)))
            .map(|((id, hash), vector)| (id.as_str(), *hash, vector))
    }

    /// A row's index, vector hash and unit vector, if the id is a row.
    pub(crate) fn row_of(&self, id: &str) -> Option<(usize, u64, &[f32])> {
        self.rows.get(id).map(|&row| {
            (
                row,
                self.hashes[row],
                &self.data[row * self.dims..(row + 1) * self.dims],
            )
        })
    }

    /// The id of row `row`, if there is such a row.
    pub(crate) fn id_at(&self, row: usize) -> Option<&str> {
        self.ids.get(row).map(String::as_str)
    }

    /// The hash of a row's vector, if the id is a row.
    pub(crate) fn hash_of(&self, id: &str) -> Option<u64> {
        self.rows.get(id).map(|&row| self.hashes[row])
    }

    /// Whether row `row` exists and matches `filter`.
    pub(crate) fn row_matches(&self, row: usize, filter: &VectorFilter) -> bool {
        self.fields
            .get(row)
            .is_some_and(|fields| filter.is_empty() || filter.matches(fields))
    }

    /// How many rows match `filter`, counting no further than `enough`.
    pub(crate) fn count_matching(&self, filter: &VectorFilter, enough: usize) -> usize {
        if filter.is_empty() {
            return self.ids.len().min(enough);
        }
        let mut count = 0;
        for fields in &self.fields {
            if filter.matches(fields) {
                count += 1;
                if count >= enough {
                    break;
                }
            }
        }
        count
    }

    /// Exact scores of `rows` that match `filter`, best `k` first; ties by id. Rows past the
    /// last are skipped.
    pub(crate) fn rescore(
        &self,
        query: &[f32],
        rows: impl IntoIterator<Item = usize>,
        k: usize,
        filter: &VectorFilter,
    ) -> Vec<(String, f32)> {
        let query = normalised(query);
        let rows = rows
            .into_iter()
            .filter(|&row| self.row_matches(row, filter));
        self.exact(&query, rows, k)
    }

    /// Inserts or replaces a row (the vector is normalised here).
    pub(crate) fn upsert(&mut self, id: &str, vector: &[f32], fields: VectorFields) {
        let unit = normalised(vector);
        match self.rows.get(id) {
            Some(&row) => {
                self.fields[row] = fields;
                let range = row * self.dims..(row + 1) * self.dims;
                self.hashes[row] = vector_hash(&unit);
                self.data[range.clone()].copy_from_slice(&unit);
                let (codes, scale) = quantised(&unit);
                self.codes[range].copy_from_slice(&codes);
                self.code_scales[row] = scale;
            }
            None => {
                self.rows.insert(id.to_owned(), self.ids.len());
                self.ids.push(id.to_owned());
                self.fields.push(fields);
                self.hashes.push(vector_hash(&unit));
                self.data.extend_from_slice(&unit);
                let (codes, scale) = quantised(&unit);
                self.codes.extend_from_slice(&codes);
                self.code_scales.push(scale);
            }
        }
    }

    /// Removes a row; the row it was, if it existed. The last row moves into the hole (so
    /// [`Self::id_at`] that row names the moved one, unless the removed row was the last).
    pub(crate) fn remove(&mut self, id: &str) -> Option<usize> {
        let row = self.rows.remove(id)?;
        let last = self.ids.len() - 1;
        if row != last {
            let (head, tail) = self.data.split_at_mut(last * self.dims);
            head[row * self.dims..(row + 1) * self.dims].copy_from_slice(&tail[..self.dims]);
            let (head, tail) = self.codes.split_at_mut(last * self.dims);
            head[row * self.dims..(row + 1) * self.dims].copy_from_slice(&tail[..self.dims]);
            self.ids.swap(row, last);
            self.fields.swap(row, last);
            self.hashes.swap(row, last);
            self.code_scales.swap(row, last);
            self.rows.insert(self.ids[row].clone(), row);
        }
        self.ids.pop();
        self.fields.pop();
        self.hashes.pop();
        self.code_scales.pop();
        self.data.truncate(last * self.dims);
        self.codes.truncate(last * self.dims);
        Some(row)
    }

    /// The `k` rows most similar to `query` (cosine) among those that match `filter`, best
    /// first; ties by id.
    pub(crate) fn top_k(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Vec<(String, f32)> {
        if k == 0 || self.dims == 0 {
            return Vec::new();
        }
        let query = normalised(query);
        let unfiltered = filter.is_empty();
        let matches = |row: &usize| unfiltered || filter.matches(&self.fields[*row]);
        if self.ids.len() < QUANTISED_FROM {
            return self.exact(&query, (0..self.ids.len()).filter(matches), k);
        }
        // The query's own scale multiplies every row's score alike, so it is left out.
        let (codes, _) = quantised(&query);
        let pool = (4 * k + 64).min(self.ids.len());
        let mut heap: BinaryHeap<std::cmp::Reverse<Candidate>> =
            BinaryHeap::with_capacity(pool + 1);
        for ((row, row_codes), scale) in self
            .codes
            .chunks_exact(self.dims)
            .enumerate()
            .zip(&self.code_scales)
        {
            if !matches(&row) {
                continue;
            }
            let score = dot_quantised(&codes, row_codes) as f32 * scale;
            if heap.len() == pool
                && let Some(std::cmp::Reverse(worst)) = heap.peek()
                && score <= worst.score
            {
                continue;
            }
            heap.push(std::cmp::Reverse(Candidate { score, row }));
            if heap.len() > pool {
                heap.pop();
            }
        }
        let candidates: Vec<usize> = heap
            .into_iter()
            .map(|std::cmp::Reverse(candidate)| candidate.row)
            .collect();
        self.exact(&query, candidates, k)
    }

    /// The `k` rows most similar to `query` among those that match `filter`, every row scored
    /// exactly in `f32` (no int8 pre-scan): the truth approximate searches are measured
    /// against. Best first; ties by id.
    pub(crate) fn exhaustive(
        &self,
        query: &[f32],
        k: usize,
        filter: &VectorFilter,
    ) -> Vec<(String, f32)> {
        if k == 0 || self.dims == 0 {
            return Vec::new();
        }
        let query = normalised(query);
        let rows = (0..self.ids.len())
            .filter(|row| filter.is_empty() || filter.matches(&self.fields[*row]));
        self.exact(&query, rows, k)
    }

    /// Exact scores of `rows`, best `k` first; ties by id.
    fn exact(
        &self,
        query: &[f32],
        rows: impl IntoIterator<Item = usize>,
        k: usize,
    ) -> Vec<(String, f32)> {
        let mut heap: BinaryHeap<Scored> = BinaryHeap::with_capacity(k + 1);
        for row in rows {
            let vector = &self.data[row * self.dims..(row + 1) * self.dims];
            let candidate = Scored {
                score: dot(query, vector),
                row,
                id: &self.ids[row],
            };
            if heap.len() == k
                && let Some(worst) = heap.peek()
                && candidate >= *worst
            {
                continue;
            }
            heap.push(candidate);
            if heap.len() > k {
                heap.pop();
            }
        }
        let mut hits: Vec<(String, f32)> = heap
            .into_iter()
            .map(|s| (self.ids[s.row].clone(), s.score))
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits
    }
}

/// Dense vectors crowded in a narrow cone (one shared direction plus a little noise of
/// each vector's own), as a sentence model embeds texts of one kind; the same from the same
/// seed.
#[cfg(test)]
pub(crate) struct NarrowCone {
    state: u64,
    centre: Vec<f32>,
}

#[cfg(test)]
impl NarrowCone {
    /// A cone of `dims` dimensions around a centre drawn from `seed` (non-zero).
    pub(crate) fn new(dims: usize, seed: u64) -> Self {
        let mut cone = Self {
            state: seed,
            centre: Vec::new(),
        };
        cone.centre = (0..dims).map(|_| cone.next_uniform()).collect();
        cone
    }

    /// A uniform draw from -1..=1 in steps of 0.001 (xorshift).
    fn next_uniform(&mut self) -> f32 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        (self.state % 2_001) as f32 / 1_000.0 - 1.0
    }

    /// The centre plus `spread` times uniform noise in each component (not normalised).
    pub(crate) fn near(&mut self, spread: f32) -> Vec<f32> {
        (0..self.centre.len())
            .map(|i| self.centre[i] + spread * self.next_uniform())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_is_exact_and_ordered() {
        let mut m = VectorMatrix::new(3);
        m.upsert("x", &[1.0, 0.0, 0.0], VectorFields::default());
        m.upsert("y", &[0.0, 1.0, 0.0], VectorFields::default());
        m.upsert("xy", &[1.0, 1.0, 0.0], VectorFields::default());
        let hits = m.top_k(&[2.0, 0.1, 0.0], 2, &VectorFilter::default());
        assert_eq!(hits[0].0, "x");
        assert_eq!(hits[1].0, "xy");
        assert!(hits[0].1 > hits[1].1);
    }

    #[test]
    fn remove_moves_the_last_row_and_keeps_lookups_right() {
        let mut m = VectorMatrix::new(2);
        for (id, v) in [("a", [1.0, 0.0]), ("b", [0.0, 1.0]), ("c", [1.0, 1.0])] {
            m.upsert(id, &v, VectorFields::default());
        }
        // "a" was row 0: the last row, "c", moved into it.
        assert_eq!(m.remove("a"), Some(0));
        assert_eq!(m.id_at(0), Some("c"));
        assert_eq!(m.remove("a"), None);
        assert_eq!(m.len(), 2);
        assert_eq!(m.row_of("c").map(|(row, _, _)| row), Some(0));
        assert_eq!(m.remove("b"), Some(1), "the last row moves nowhere");
        assert_eq!(m.id_at(1), None);
        m.upsert("b", &[0.0, 1.0], VectorFields::default());
        m.upsert("c", &[0.0, 1.0], VectorFields::default());
        let hits = m.top_k(&[0.0, 1.0], 5, &VectorFilter::default());
        assert_eq!(hits.len(), 2);
        assert!((hits[0].1 - 1.0).abs() < 1e-6 && (hits[1].1 - 1.0).abs() < 1e-6);
        assert_eq!(hits[0].0, "b", "ties go to the smaller id");
    }

    #[test]
    fn the_quantised_scan_returns_the_exact_top_k() {
        let dims = 64;
        let mut m = VectorMatrix::new(dims);
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 2_001) as f32 / 1_000.0 - 1.0
        };
        let rows: Vec<Vec<f32>> = (0..QUANTISED_FROM + 3_000)
            .map(|_| (0..dims).map(|_| next()).collect())
            .collect();
        for (i, v) in rows.iter().enumerate() {
            m.upsert(&format!("{i:05}"), v, VectorFields::default());
        }
        for _ in 0..20 {
            let q: Vec<f32> = (0..dims).map(|_| next()).collect();
            let fast = m.top_k(&q, 10, &VectorFilter::default());
            let exhaustive = m.exhaustive(&q, 10, &VectorFilter::default());
            assert_eq!(fast, exhaustive);
        }
    }

    #[test]
    fn codes_use_the_whole_int8_range_of_each_vector() {
        let (codes, scale) = quantised(&[0.1, -0.05, 0.0]);
        assert_eq!(codes, [127, -64, 0]);
        assert!((scale - 0.1 / 127.0).abs() < 1e-9);
        assert_eq!(quantised(&[0.0, 0.0]), (vec![0, 0], 0.0));
        assert_eq!(quantised(&[f32::NAN, 1.0]).1, 1.0 / 127.0);
    }

    /// Dense embeddings crowded in a narrow cone (a shared direction plus a little noise of
    /// their own), as a sentence model puts texts of one kind: a fixed `x × 127` code keeps
    /// about 3 bits of each ±0.05 component and rounds the noise that ranks them away.
    #[test]
    fn the_quantised_scan_keeps_the_exact_top_k_of_a_narrow_cone() {
        let dims = 384;
        let mut cone = NarrowCone::new(dims, 0x2545_f491_4f6c_dd1d);
        let mut m = VectorMatrix::new(dims);
        for i in 0..10_000 {
            m.upsert(
                &format!("{i:05}"),
                &cone.near(0.15),
                VectorFields::default(),
            );
        }
        let mut same = 0;
        for _ in 0..20 {
            let q = cone.near(0.15);
            let fast = m.top_k(&q, 10, &VectorFilter::default());
            let exhaustive = m.exhaustive(&q, 10, &VectorFilter::default());
            same += fast.iter().filter(|hit| exhaustive.contains(hit)).count();
        }
        assert!(same >= 198, "{same} of 200 of the exact top ten");
    }

    #[test]
    fn the_quantised_scan_ranks_only_matching_rows() {
        let dims = 16;
        let mut m = VectorMatrix::new(dims);
        for i in 0..QUANTISED_FROM + 1_000 {
            let mut v = vec![0.0; dims];
            v[0] = 1.0;
            v[1] = i as f32 * 1e-4;
            let rare = i % 1_000 == 7;
            let fields = VectorFields {
                kind: Some(if rare { "rare" } else { "common" }.into()),
                ..VectorFields::default()
            };
            if rare {
                v[0] = -1.0;
            }
            m.upsert(&format!("{i:05}"), &v, fields);
        }
        let filter = VectorFilter {
            kind: Some("rare".into()),
            ..VectorFilter::default()
        };
        let mut query = vec![0.0; dims];
        query[0] = 1.0;
        let hits = m.top_k(&query, 10, &filter);
        let mut ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["00007", "01007", "02007", "03007", "04007", "05007"]);
        assert!(m.top_k(&query, 10, &VectorFilter::default()).len() == 10);
    }

    #[test]
    fn many_rows_match_a_sort_of_all_scores() {
        let mut m = VectorMatrix::new(9);
        let mut all = Vec::new();
        for i in 0..500u32 {
            let v: Vec<f32> = (0..9)
                .map(|j| ((i * 31 + j * 17) % 13) as f32 - 6.0)
                .collect();
            m.upsert(&format!("{i:04}"), &v, VectorFields::default());
            all.push(format!("{i:04}"));
        }
        let q = [1.0, -2.0, 0.5, 0.0, 3.0, 1.0, -1.0, 2.0, 0.25];
        let top = m.top_k(&q, 17, &VectorFilter::default());
        let mut expected = m.top_k(&q, 500, &VectorFilter::default());
        expected.truncate(17);
        assert_eq!(top, expected);
        assert_eq!(m.top_k(&q, 500, &VectorFilter::default()).len(), 500);
    }
}
