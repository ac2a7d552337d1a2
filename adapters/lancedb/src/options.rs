//! How a [`crate::LanceVectorIndex`] searches and when it builds its approximate index.

use std::time::Duration;

/// Options of a [`crate::LanceVectorIndex`].
///
/// ```
/// use memory_lancedb::LanceOptions;
/// let options = LanceOptions::default()
///     .index_threshold(50_000)
///     .storage_option("aws_endpoint", "http://127.0.0.1:8333");
/// assert_eq!(options.index_threshold, 50_000);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanceOptions {
    /// Rows at which a table gets an approximate (IVF-PQ) index; below it every search is
    /// exact. Default 100,000 (an exact scan of 100,000 vectors of 384 dimensions is still
    /// quick).
    pub index_threshold: usize,
    /// Rows at which a table gets its field indexes (B-trees on session and time, a bitmap
    /// on kind), so filtered searches and counts read only the matching rows instead of
    /// scanning the table. Default 10,000.
    pub field_index_threshold: usize,
    /// Rows a filter may match and still be searched exactly over those rows (reading each
    /// one's vector from the files); a filter more rows match goes through the approximate
    /// index, filtered first, probing more partitions than [`Self::nprobes`] the narrower it
    /// is. Default 5,000: at 1,000,000 rows an exact search of 10,000 rows scattered over the
    /// table took 81 ms, through the index 11–17 ms at recall@10 0.93–0.99
    /// (`docs/benchmarks.md`).
    pub exact_filter_limit: usize,
    /// IVF partitions probed per search (more: closer to exact, slower). Default 80: recall@10
    /// 0.957 against exact search at 1,000,000 vectors of 384 dimensions, where 20 gave 0.739.
    /// The index has about √rows partitions, so larger tables need more: at 5,000,000 rows 80
    /// gave 0.949 and 120 gave 0.974 at the same p50 (`docs/benchmarks.md`).
    pub nprobes: usize,
    /// Candidates re-ranked by exact distance per hit wanted (`k × refine_factor` are read
    /// back and re-scored, so scores are exact cosine similarities). Default 10.
    pub refine_factor: u32,
    /// How stale a read may be against writes of other processes: zero (the default) checks
    /// for a newer version of the table before every read.
    pub read_consistency: Duration,
    /// Options of the object store (`aws_endpoint`, `aws_region`, credentials, ...), passed
    /// to LanceDB as they are.
    pub storage_options: Vec<(String, String)>,
}

impl Default for LanceOptions {
    fn default() -> Self {
        Self {
            index_threshold: 100_000,
            field_index_threshold: 10_000,
            exact_filter_limit: 5_000,
            nprobes: 80,
            refine_factor: 10,
            read_consistency: Duration::ZERO,
            storage_options: Vec::new(),
        }
    }
}

impl LanceOptions {
    /// Sets the row count at which the approximate index is built.
    pub fn index_threshold(mut self, rows: usize) -> Self {
        self.index_threshold = rows;
        self
    }

    /// Sets the row count at which the field indexes are built.
    pub fn field_index_threshold(mut self, rows: usize) -> Self {
        self.field_index_threshold = rows;
        self
    }

    /// Sets the most rows a filter may match and still be searched exactly.
    pub fn exact_filter_limit(mut self, rows: usize) -> Self {
        self.exact_filter_limit = rows;
        self
    }

    /// Sets the partitions probed per search.
    pub fn nprobes(mut self, nprobes: usize) -> Self {
        self.nprobes = nprobes;
        self
    }

    /// Sets the re-ranking factor.
    pub fn refine_factor(mut self, factor: u32) -> Self {
        self.refine_factor = factor;
        self
    }

    /// Adds an object-store option.
    pub fn storage_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.storage_options.push((key.into(), value.into()));
        self
    }
}
