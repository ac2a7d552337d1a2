//! Keeping a table fast as it grows, and erasure:
//!
//! - **compaction**: every write adds a data file (a fragment); once there are many small
//!   ones they are merged, and versions older than [`KEEP_VERSIONS_MINUTES`] are pruned with
//!   the files only they referenced;
//! - **field indexes** (scalar indexes on session, kind and time) past
//!   [`LanceOptions::field_index_threshold`] rows, so filtered searches and counts read
//!   only the matching rows;
//! - **the approximate index** (IVF-PQ) past [`LanceOptions::index_threshold`] rows,
//!   retrained when the table has grown fourfold since it was trained;
//! - **index updates** once enough rows are not covered by an index;
//! - **erasure**: compaction of every fragment with a deleted row, then pruning of every
//!   older version.

use lancedb::index::Index;
use lancedb::index::scalar::{BTreeIndexBuilder, BitmapIndexBuilder};
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::table::{CompactionOptions, Duration, OptimizeAction, OptimizeOptions};
use lancedb::{DistanceType, Table};
use memory_core::Result;
use tracing::info;

use crate::LanceOptions;
use crate::error::lance_error;
use crate::layout::{IndexLayout, index_layouts};
use crate::records::{KIND, SESSION, TIME, VECTOR};

/// Growth since training after which the index is trained again (its partitions were
/// learned from a quarter of today's rows).
const RETRAIN_GROWTH: usize = 4;
/// Unindexed rows (a share of the indexed ones, and at least a count) before they are added
/// to the indexes: searches scan them until then, and each update writes index files.
const UPDATE_SHARE: usize = 10;
const UPDATE_AT_LEAST: usize = 1_000;
/// Small fragments (fewer than 100,000 rows, LanceDB's measure) that start a compaction.
const COMPACT_AT_SMALL_FRAGMENTS: usize = 8;
/// The rows of a fragment compaction writes. Compaction rewrites every fragment smaller than
/// this, so it bounds what a compaction rewrites (LanceDB's default, about 1,000,000 rows,
/// would rewrite a large table's last big fragment for every few small writes); a
/// 1,000,000-row table has ten.
const ROWS_PER_FRAGMENT: usize = 100_000;
/// How long versions replaced by compaction stay readable (a search that started on one
/// still finds its files) before their files are removed.
const KEEP_VERSIONS_MINUTES: i64 = 10;

/// The columns with a field index, and the kind of each: a B-tree for the many sessions
/// and the time ranges, a bitmap for the few kinds.
fn field_indexes() -> [(&'static str, Index); 3] {
    [
        (SESSION, Index::BTree(BTreeIndexBuilder::default())),
        (KIND, Index::Bitmap(BitmapIndexBuilder::default())),
        (TIME, Index::BTree(BTreeIndexBuilder::default())),
    ]
}

/// PQ sub-vectors: the largest divisor of `dims` no larger than `dims / 8` (48 for 384), so
/// each sub-vector covers at least 8 dimensions.
fn sub_vectors(dims: usize) -> u32 {
    let most = (dims / 8).max(1);
    let chosen = (1..=most)
        .rev()
        .find(|d| dims.is_multiple_of(*d))
        .unwrap_or(1);
    u32::try_from(chosen).unwrap_or(1)
}

/// IVF partitions for `rows`: about the square root, as LanceDB advises.
fn partitions(rows: usize) -> u32 {
    let root = (rows as f64).sqrt() as u32;
    root.clamp(1, 4_096)
}

/// Trains the vector index on the table as it is now (replacing an older one).
async fn train(table: &Table, dims: usize, rows: usize) -> Result<()> {
    let builder = IvfPqIndexBuilder::default()
        .distance_type(DistanceType::Cosine)
        .num_partitions(partitions(rows))
        .num_sub_vectors(sub_vectors(dims));
    info!(rows, dims, "training the vector index");
    table
        .create_index(&[VECTOR], Index::IvfPq(builder))
        .replace(true)
        .execute()
        .await
        .map_err(lance_error)
}

/// Merges small fragments once there are [`COMPACT_AT_SMALL_FRAGMENTS`] of them (indexes
/// are remapped to the new files), then prunes the versions this made old once they are
/// [`KEEP_VERSIONS_MINUTES`] minutes old; returns the table's live rows (which compaction
/// keeps).
async fn compact(table: &Table) -> Result<usize> {
    let stats = table.stats().await.map_err(lance_error)?;
    if stats.fragment_stats.num_small_fragments < COMPACT_AT_SMALL_FRAGMENTS {
        return Ok(stats.num_rows);
    }
    info!(
        fragments = stats.fragment_stats.num_fragments,
        "compacting the vector table"
    );
    let keep = Duration::minutes(KEEP_VERSIONS_MINUTES);
    rewrite_and_prune(table, CompactionOptions::default(), keep, false).await?;
    Ok(stats.num_rows)
}

/// Compacts into fragments of [`ROWS_PER_FRAGMENT`] rows (`options` says which fragments
/// qualify), then removes the versions older than `keep` and the files only they named
/// (`delete_unverified`: also files no version names, which a running write may still be
/// adding: only for erasure).
async fn rewrite_and_prune(
    table: &Table,
    options: CompactionOptions,
    keep: Duration,
    delete_unverified: bool,
) -> Result<()> {
    table
        .optimize(OptimizeAction::Compact {
            options: CompactionOptions {
                target_rows_per_fragment: ROWS_PER_FRAGMENT,
                ..options
            },
            remap_options: None,
        })
        .await
        .map_err(lance_error)?;
    table
        .optimize(OptimizeAction::Prune {
            older_than: Some(keep),
            delete_unverified: Some(delete_unverified),
            error_if_tagged_old_versions: Some(false),
        })
        .await
        .map_err(lance_error)?;
    Ok(())
}

/// Whether a table of `rows` rows with the vector index `vector` (if it has one) needs it
/// trained: it has none, or it has grown fourfold since.
fn untrained(vector: Option<&IndexLayout>, rows: usize) -> bool {
    vector.is_none_or(|index| index.indexed_rows.saturating_mul(RETRAIN_GROWTH) <= rows)
}

/// Whether any index leaves enough rows uncovered to be worth an update: any row at all when
/// `thorough`.
fn stale(indexes: &[IndexLayout], thorough: bool) -> bool {
    indexes.iter().any(|index| {
        index.unindexed_rows > 0
            && (thorough
                || index.unindexed_rows >= (index.indexed_rows / UPDATE_SHARE).max(UPDATE_AT_LEAST))
    })
}

/// Compacts the table and builds, updates or retrains its indexes as its size asks;
/// returns whether it has a vector index afterwards. `thorough` (an explicit call, not the
/// background's) adds every uncovered row to the indexes, however few.
pub(crate) async fn maintain(
    table: &Table,
    dims: usize,
    options: &LanceOptions,
    thorough: bool,
) -> Result<bool> {
    let rows = compact(table).await?;
    let mut indexes = index_layouts(table).await?;
    let has = |indexes: &[IndexLayout], column: &str| indexes.iter().any(|i| i.column == column);
    if rows >= options.field_index_threshold.max(1) {
        let mut built = false;
        for (column, index) in field_indexes() {
            if !has(&indexes, column) {
                info!(rows, column, "building a field index");
                table
                    .create_index(&[column], index)
                    .execute()
                    .await
                    .map_err(lance_error)?;
                built = true;
            }
        }
        if built {
            indexes = index_layouts(table).await?;
        }
    }
    let vector = indexes.iter().find(|i| i.column == VECTOR);
    let has_vector_index = vector.is_some();
    if rows >= options.index_threshold.max(1) && untrained(vector, rows) {
        train(table, dims, rows).await?;
        if !thorough {
            return Ok(true);
        }
        indexes = index_layouts(table).await?;
    }
    if stale(&indexes, thorough) {
        update(table).await?;
    }
    Ok(has_vector_index || rows >= options.index_threshold.max(1))
}

/// Adds the rows no index covers yet to every index, merged into the index itself (not left
/// as a delta that every search opens). The vector index keeps its partitions: LanceDB's
/// default would rebalance them, and joined 1,000 partitions of a 1,000,000-row index into
/// 31, so that every search compared all rows (30 ms instead of 7).
async fn update(table: &Table) -> Result<()> {
    table
        .optimize(OptimizeAction::Index(OptimizeOptions::merge(1)))
        .await
        .map_err(lance_error)?;
    Ok(())
}

/// Rewrites the table's data files without deleted rows, then removes every version but
/// the current one, so nothing deleted stays on the storage.
pub(crate) async fn erase_deleted(table: &Table) -> Result<()> {
    // Rewrite every fragment with a deleted row, however few.
    let options = CompactionOptions {
        materialize_deletions: true,
        materialize_deletions_threshold: 0.0,
        ..CompactionOptions::default()
    };
    rewrite_and_prune(table, options, Duration::zero(), true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pq_and_ivf_sizes() {
        assert_eq!(sub_vectors(384), 48);
        assert_eq!(sub_vectors(100), 10);
        assert_eq!(sub_vectors(2), 1);
        assert_eq!(partitions(1_000_000), 1_000);
        assert_eq!(partitions(0), 1);
    }

    fn index(column: &str, indexed_rows: usize, unindexed_rows: usize) -> IndexLayout {
        IndexLayout {
            column: column.to_owned(),
            indexed_rows,
            unindexed_rows,
        }
    }

    #[test]
    fn trained_again_after_fourfold_growth() {
        assert!(untrained(None, 10));
        assert!(!untrained(Some(&index(VECTOR, 100_000, 0)), 399_999));
        assert!(untrained(Some(&index(VECTOR, 100_000, 0)), 400_000));
    }

    #[test]
    fn updated_once_enough_rows_are_uncovered() {
        let covered = [index(VECTOR, 100_000, 0), index(KIND, 100_000, 0)];
        assert!(!stale(&covered, true));
        let few = [index(VECTOR, 100_000, 0), index(KIND, 100_000, 999)];
        assert!(!stale(&few, false));
        assert!(stale(&few, true));
        let a_tenth = [index(SESSION, 100_000, 10_000)];
        assert!(stale(&a_tenth, false));
        let small = [index(TIME, 2_000, 1_000)];
        assert!(stale(&small, false));
        assert!(!stale(&[index(TIME, 2_000, 999)], false));
    }
}
