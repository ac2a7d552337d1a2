//! Making an engine-written text index match the records, safe when several processes do it
//! for the same documents at once.
//!
//! A sync reads the records, then writes their documents. Two processes syncing the same
//! record can interleave so that the one that read first writes last: the index would keep
//! the older version (a deleted document back, a new one deleted) with nothing left to
//! replay. So after writing, a sync reads the records again; when they still make the same
//! documents it is done, else it writes the newer ones and checks again. The last write of a
//! document is then always one made from a read taken after every record change that came
//! before it: a change after that read is synced by its own writer after its store write.
//! A rebuild (`reindex`) writes each page it reads the same way, so it can run while other
//! processes write.

use memory_core::ports::{TextDocument, TextIndex};
use memory_core::{MemoryError, Result};

/// Rounds before a sync gives up (the outbox entry stays, and is replayed later).
const MOST_ROUNDS: usize = 5;

/// What the index must hold for a set of ids: the documents of those that exist with text,
/// and the ids of the others.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Documents {
    /// Upserted.
    pub(crate) present: Vec<TextDocument>,
    /// Deleted.
    pub(crate) gone: Vec<String>,
}

impl Documents {
    /// The documents of `ids`, given the documents of those that have one.
    pub(crate) fn of(
        ids: &[String],
        mut present: Vec<TextDocument>,
        id_of: impl Fn(&str) -> String,
    ) -> Self {
        // Stores need not return rows in one order: two reads compare in id order.
        present.sort_by(|a, b| a.id.cmp(&b.id));
        let gone = ids
            .iter()
            .map(|id| id_of(id))
            .filter(|doc_id| !present.iter().any(|d| d.id == *doc_id))
            .collect();
        Self { present, gone }
    }

    async fn write(&self, index: &dyn TextIndex, namespace: &str) -> Result<()> {
        if !self.present.is_empty() {
            index.upsert(namespace, self.present.clone()).await?;
        }
        if !self.gone.is_empty() {
            index.delete(namespace, &self.gone).await?;
        }
        Ok(())
    }
}

/// Writes what `read` says the namespace must hold, then reads again until two reads agree.
pub(crate) async fn converge<F, Fut>(index: &dyn TextIndex, namespace: &str, read: F) -> Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Documents>>,
{
    let wanted = read().await?;
    converge_from(index, namespace, wanted, read).await
}

/// [`converge`] from documents already read (a page of a rebuild): written, then checked
/// against `read` like any sync.
pub(crate) async fn converge_from<F, Fut>(
    index: &dyn TextIndex,
    namespace: &str,
    mut wanted: Documents,
    read: F,
) -> Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Documents>>,
{
    for _ in 0..MOST_ROUNDS {
        wanted.write(index, namespace).await?;
        let now = read().await?;
        if now == wanted {
            return Ok(());
        }
        wanted = now;
    }
    Err(MemoryError::transient(
        index.backend_name(),
        "the records changed under every sync of their documents; the update is replayed later",
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use memory_core::ports::TextQuery;
    use memory_testkit::in_memory::InMemoryTextIndex;

    use super::*;

    /// Syncs the one document `m`, whose record reads as `version(n)` at the n-th read
    /// (`None`: gone, as after a delete by another process); the outcome and the reads.
    async fn sync_with(
        index: &InMemoryTextIndex,
        version: impl Fn(usize) -> Option<&'static str>,
    ) -> (Result<()>, usize) {
        let reads = AtomicUsize::new(0);
        let outcome = converge(index, "n", || {
            let n = reads.fetch_add(1, Ordering::SeqCst);
            let present = version(n).map(|text| TextDocument::new("m", text));
            async move {
                let present = present.into_iter().collect();
                Ok(Documents::of(&["m".to_owned()], present, str::to_owned))
            }
        })
        .await;
        (outcome, reads.load(Ordering::SeqCst))
    }

    async fn finds(index: &InMemoryTextIndex, word: &str) -> bool {
        !index
            .search("n", &TextQuery::new(word, 5))
            .await
            .unwrap()
            .is_empty()
    }

    /// A record changed by another process between this sync's read and its write: the
    /// second read sees the change and the index ends with the newer document.
    #[tokio::test]
    async fn a_record_changed_during_the_sync_ends_up_as_its_newer_document() {
        let index = InMemoryTextIndex::new();
        let (outcome, reads) = sync_with(&index, |n| {
            Some(if n == 0 { "old words" } else { "new words" })
        })
        .await;
        outcome.unwrap();
        assert_eq!(reads, 3, "read, changed, read again, same");
        assert!(finds(&index, "new").await);
        assert!(!finds(&index, "old").await);
    }

    /// A record deleted during the sync is deleted from the index, though the first read
    /// still had it.
    #[tokio::test]
    async fn a_record_deleted_during_the_sync_leaves_no_document() {
        let index = InMemoryTextIndex::new();
        let (outcome, _) = sync_with(&index, |n| (n == 0).then_some("secret words")).await;
        outcome.unwrap();
        assert_eq!(index.count("n").await.unwrap(), 0);
    }

    /// Records that never hold still are left to the outbox as a transient failure.
    #[tokio::test]
    async fn records_that_never_settle_fail_as_transient() {
        let index = InMemoryTextIndex::new();
        let (outcome, reads) = sync_with(&index, |n| {
            Some(if n % 2 == 0 {
                "even words"
            } else {
                "odd words"
            })
        })
        .await;
        let error = outcome.unwrap_err();
        assert!(error.is_transient(), "{error}");
        assert_eq!(reads, MOST_ROUNDS + 1);
    }
}
