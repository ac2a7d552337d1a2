//! Which segments the index merges: Tantivy's log policy, set to keep fewer segments.
//!
//! A search pays for every segment: each query term is looked up in each segment's term
//! dictionary, and each segment gets scorers of its own before a document is scored.
//! Tantivy's default merges a level once it holds eight segments, so an index committed in
//! batches keeps up to seven per level: eleven segments after 200,000 documents written a
//! thousand at a time. Merging at four keeps at most three per level: five there.
//!
//! Tantivy's default also puts every segment under 10,000 documents on one level, so the
//! small commits of a live profile are merged again and again into one growing segment.
//! Levels from 1,000 documents up merge them by size instead. Simulated on the policy's own
//! rules, documents are written about 6.8 times (commits of 50) and 4.5 times (commits of
//! 100) on their way to 10,000, against 15 and 8.5 with the default; commits of 1,000 up to
//! 200,000 documents write them 3.9 times against 3.2 (`docs/benchmarks.md`, the twentieth
//! step).

use tantivy::indexer::LogMergePolicy;

/// Segments of one level merged together, at the least.
const MIN_SEGMENTS_IN_MERGE: usize = 4;
/// Segments below this many documents count as this size when grouped into levels.
const MIN_LAYER_DOCUMENTS: u32 = 1_000;

/// The policy both writers ask (the writer thread and the shared writer).
pub(crate) fn merge_policy() -> LogMergePolicy {
    let mut policy = LogMergePolicy::default();
    policy.set_min_num_segments(MIN_SEGMENTS_IN_MERGE);
    policy.set_min_layer_size(MIN_LAYER_DOCUMENTS);
    policy
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use tantivy::Index;
    use tantivy::index::{SegmentId, SegmentMeta};
    use tantivy::indexer::MergePolicy;
    use tantivy::schema::{STRING, Schema};

    use super::*;

    fn segments(index: &Index, sizes: &[u32]) -> Vec<SegmentMeta> {
        sizes
            .iter()
            .map(|&docs| index.new_segment_meta(SegmentId::generate_random(), docs))
            .collect()
    }

    fn index() -> Index {
        let mut schema = Schema::builder();
        schema.add_text_field("id", STRING);
        Index::create_in_ram(schema.build())
    }

    /// Four segments of a size are merged (Tantivy's default waits for eight).
    #[test]
    fn four_segments_of_a_size_are_merged() {
        let index = index();
        let four = segments(&index, &[20_000, 21_000, 22_000, 23_000]);
        let merges = merge_policy().compute_merge_candidates(&four);
        assert_eq!(merges.len(), 1);
        assert_eq!(merges[0].0.len(), 4);
        assert!(
            LogMergePolicy::default()
                .compute_merge_candidates(&four)
                .is_empty()
        );
    }

    /// Small segments are grouped by size from 1,000 documents up: a 9,000-document segment
    /// is not rewritten with three small commits (the default puts all four on one level).
    #[test]
    fn a_large_small_segment_waits_for_its_own_level() {
        let index = index();
        let mixed = segments(&index, &[9_000, 60, 50, 40]);
        assert!(merge_policy().compute_merge_candidates(&mixed).is_empty());
        let small = segments(&index, &[9_000, 60, 50, 40, 30]);
        let merges = merge_policy().compute_merge_candidates(&small);
        assert_eq!(merges.len(), 1);
        assert_eq!(
            merges[0].0.len(),
            4,
            "the four small ones, not the large one"
        );
    }
}
