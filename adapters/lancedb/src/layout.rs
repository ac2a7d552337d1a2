//! What a table looks like on storage: rows, data files and indexes, for operators and for
//! tests of the maintenance.

use lancedb::Table;
use memory_core::Result;

use crate::error::lance_error;

/// How a namespace's table is laid out on storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLayout {
    /// Live rows.
    pub rows: usize,
    /// Data fragments: each write adds one until compaction merges them.
    pub fragments: usize,
    /// The indexes, by column: `vector` once the approximate index is built, `kind`,
    /// `session` and `time` once the field indexes are.
    pub indexes: Vec<IndexLayout>,
    /// The table's version (each commit adds one).
    pub version: u64,
}

/// One index of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLayout {
    /// The column it covers.
    pub column: String,
    /// Rows it covers.
    pub indexed_rows: usize,
    /// Rows written since it was built or updated, which searches scan beside it.
    pub unindexed_rows: usize,
}

impl TableLayout {
    /// The columns that have an index, sorted.
    pub fn indexed_columns(&self) -> Vec<&str> {
        let mut columns: Vec<&str> = self.indexes.iter().map(|i| i.column.as_str()).collect();
        columns.sort_unstable();
        columns
    }
}

/// The layout of `table` now.
pub(crate) async fn layout(table: &Table) -> Result<TableLayout> {
    let stats = table.stats().await.map_err(lance_error)?;
    Ok(TableLayout {
        rows: stats.num_rows,
        fragments: stats.fragment_stats.num_fragments,
        indexes: index_layouts(table).await?,
        version: table.version().await.map_err(lance_error)?,
    })
}

/// The table's indexes and the rows each covers (one read of the index list, one of each
/// index's statistics).
pub(crate) async fn index_layouts(table: &Table) -> Result<Vec<IndexLayout>> {
    let mut layouts = Vec::new();
    for index in table.list_indices().await.map_err(lance_error)? {
        let Some(column) = index.columns.first() else {
            continue;
        };
        let stats = table.index_stats(&index.name).await.map_err(lance_error)?;
        layouts.push(IndexLayout {
            column: column.clone(),
            indexed_rows: stats.as_ref().map_or(0, |s| s.num_indexed_rows),
            unindexed_rows: stats.as_ref().map_or(0, |s| s.num_unindexed_rows),
        });
    }
    Ok(layouts)
}
