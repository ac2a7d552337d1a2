//! The approximate index of a table: built once the table passes the size threshold,
//! brought up to date as rows arrive, retrained when the table has grown fourfold since it
//! was trained; and erasure (compaction plus pruning of old versions).

use lancedb::index::Index;
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::table::{CompactionOptions, Duration, OptimizeAction};
use lancedb::{DistanceType, Table};
use memory_core::Result;
use tracing::info;

use crate::error::lance_error;
use crate::records::VECTOR;

/// Growth since training after which the index is trained again (its partitions were
/// learned from a quarter of today's rows).
const RETRAIN_GROWTH: usize = 4;
/// Unindexed rows (a share of the indexed ones, and at least a count) before they are added
/// to the index: searches scan them exactly until then, and each update writes index files.
const UPDATE_SHARE: usize = 10;
const UPDATE_AT_LEAST: usize = 1_000;

/// The name of the table's vector index, if it has one.
async fn vector_index(table: &Table) -> Result<Option<String>> {
    Ok(table
        .list_indices()
        .await
        .map_err(lance_error)?
        .into_iter()
        .find(|index| index.columns.iter().any(|c| c == VECTOR))
        .map(|index| index.name))
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

/// Trains the index on the table as it is now (replacing an older one).
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

/// Builds, updates or retrains the table's index as its size asks; returns whether it has
/// one afterwards.
pub(crate) async fn maintain(table: &Table, dims: usize, threshold: usize) -> Result<bool> {
    let rows = table.count_rows(None).await.map_err(lance_error)?;
    let existing = vector_index(table).await?;
    if rows < threshold.max(1) {
        return Ok(existing.is_some());
    }
    let Some(name) = existing else {
        train(table, dims, rows).await?;
        return Ok(true);
    };
    let stats = table.index_stats(&name).await.map_err(lance_error)?;
    let indexed = stats.as_ref().map_or(0, |s| s.num_indexed_rows);
    let unindexed = stats.as_ref().map_or(rows, |s| s.num_unindexed_rows);
    if indexed.saturating_mul(RETRAIN_GROWTH) <= rows {
        train(table, dims, rows).await?;
    } else if unindexed >= (indexed / UPDATE_SHARE).max(UPDATE_AT_LEAST) {
        table
            .optimize(OptimizeAction::Index(Default::default()))
            .await
            .map_err(lance_error)?;
    }
    Ok(true)
}

/// Rewrites the table's data files without deleted rows, then removes every version but
/// the current one, so nothing deleted stays on the storage.
pub(crate) async fn erase_deleted(table: &Table) -> Result<()> {
    table
        .optimize(OptimizeAction::Compact {
            // Rewrite every fragment with a deleted row, however few.
            options: CompactionOptions {
                materialize_deletions: true,
                materialize_deletions_threshold: 0.0,
                ..CompactionOptions::default()
            },
            remap_options: None,
        })
        .await
        .map_err(lance_error)?;
    table
        .optimize(OptimizeAction::Prune {
            older_than: Some(Duration::zero()),
            delete_unverified: Some(true),
            error_if_tagged_old_versions: Some(false),
        })
        .await
        .map_err(lance_error)?;
    Ok(())
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
}
