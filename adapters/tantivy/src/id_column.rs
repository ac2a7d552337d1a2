//! Document ids from the fast `id` column, each segment's dictionary read once. Tantivy's own
//! ordinal-to-text lookup decompresses and scans a dictionary block for every call, which
//! costs more than reading the stored documents; a segment never changes, so its ids are
//! read in one pass the first time a search meets it and kept while it is searched.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use memory_core::{MemoryError, Result};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader};

use crate::error::{BACKEND, tantivy_error};
use crate::schema::ID;

/// One segment's ids: each document's ordinal in the column, and the ids in ordinal order.
pub(crate) struct SegmentIds {
    ords: Column<u64>,
    /// Every id, one after the other, in ordinal order.
    text: String,
    /// Where each id ends in `text`.
    ends: Vec<usize>,
}

impl SegmentIds {
    /// Reads the segment's whole id dictionary.
    fn load(segment: &SegmentReader) -> Result<Self> {
        let column = segment
            .fast_fields()
            .str(ID)
            .map_err(tantivy_error)?
            .ok_or_else(|| MemoryError::backend(BACKEND, "the index has no id column"))?;
        let unreadable =
            |e: std::io::Error| MemoryError::backend(BACKEND, format!("reading the ids: {e}"));
        let dictionary = column.dictionary();
        let mut text = String::new();
        let mut ends = Vec::with_capacity(dictionary.num_terms());
        let mut terms = dictionary.stream().map_err(unreadable)?;
        while terms.advance() {
            let id = std::str::from_utf8(terms.key())
                .map_err(|e| MemoryError::backend(BACKEND, format!("an id is not UTF-8: {e}")))?;
            text.push_str(id);
            ends.push(text.len());
        }
        Ok(Self {
            ords: column.ords().clone(),
            text,
            ends,
        })
    }

    /// The id of document `doc` (`None` for a document without one).
    pub(crate) fn id(&self, doc: DocId) -> Option<&str> {
        let ord = usize::try_from(self.ords.first(doc)?).ok()?;
        let end = *self.ends.get(ord)?;
        let start = match ord {
            0 => 0,
            _ => self.ends[ord - 1],
        };
        self.text.get(start..end)
    }
}

/// The ids of the segments searched lately, by segment.
#[derive(Default)]
pub(crate) struct IdCache {
    segments: Mutex<HashMap<SegmentId, Arc<SegmentIds>>>,
}

impl IdCache {
    /// The ids of each of `searcher`'s segments, by segment ordinal: segments not seen before
    /// are read, and segments no longer searched are forgotten.
    pub(crate) fn segments(&self, searcher: &Searcher) -> Result<Vec<Arc<SegmentIds>>> {
        let readers = searcher.segment_readers();
        let known: Vec<Option<Arc<SegmentIds>>> = {
            let cached = self.lock();
            readers
                .iter()
                .map(|r| cached.get(&r.segment_id()).cloned())
                .collect()
        };
        if known.iter().all(Option::is_some) {
            return Ok(known.into_iter().flatten().collect());
        }
        // Read outside the lock: other searches go on meanwhile.
        let mut all = Vec::with_capacity(readers.len());
        for (reader, known) in readers.iter().zip(known) {
            all.push(match known {
                Some(ids) => ids,
                None => Arc::new(SegmentIds::load(reader)?),
            });
        }
        let mut cached = self.lock();
        cached.retain(|id, _| readers.iter().any(|r| r.segment_id() == *id));
        for (reader, ids) in readers.iter().zip(&all) {
            cached.insert(reader.segment_id(), Arc::clone(ids));
        }
        Ok(all)
    }

    /// How many segments' ids are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SegmentId, Arc<SegmentIds>>> {
        // The map holds only finished reads: one a panic interrupted is still whole.
        self.segments.lock().unwrap_or_else(|p| p.into_inner())
    }
}
