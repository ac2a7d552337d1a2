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
//!
//! Within a process, [`DocumentLocks`] keeps two syncs of the same document from running at
//! once (so an older read never overwrites a newer write's documents even before the second
//! read), while syncs of different documents run together and share the index's commits.

use std::hash::{DefaultHasher, Hash, Hasher};

use futures::lock::{Mutex, MutexGuard};
use memory_core::ports::{TextDocument, TextIndex};
use memory_core::{MemoryError, Result};

/// Rounds before a sync gives up (the outbox entry stays, and is replayed later).
const MOST_ROUNDS: usize = 5;

/// Lock stripes of a [`DocumentLocks`]: syncs of different documents wait for each other
/// only when their ids share a stripe.
const STRIPES: usize = 64;

/// Locks by document: a sync holds the stripes of every document it touches, taken in
/// stripe order (so two syncs never wait for each other in a cycle).
pub(crate) struct DocumentLocks {
    stripes: Vec<Mutex<()>>,
}

impl DocumentLocks {
    pub(crate) fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    /// Waits for, and holds until the guards drop, the stripes of `keys` (each key names one
    /// document: a namespace and an id, say).
    pub(crate) async fn lock<K: Hash>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = keys.into_iter().map(|key| stripe_of(&key)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut guards = Vec::with_capacity(stripes.len());
        for stripe in stripes {
            guards.push(self.stripes[stripe].lock().await);
        }
        guards
    }
}

/// The stripe a key falls in (the same in every run: the hasher's keys are fixed).
fn stripe_of(key: &impl Hash) -> usize {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() % STRIPES as u64) as usize
}

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

    /// Two document keys whose locks fall in different stripes.
    fn keys_on_two_stripes() -> ((&'static str, String), (&'static str, String)) {
        let a = ("raw", "doc-0".to_owned());
        let b = (1..)
            .map(|n| ("raw", format!("doc-{n}")))
            .find(|key| stripe_of(key) != stripe_of(&a))
            .unwrap();
        (a, b)
    }

    /// Syncs of different documents hold their locks together; a sync of a document already
    /// held waits until that lock is let go, whatever order its other documents come in.
    #[tokio::test]
    async fn document_locks_part_only_syncs_of_a_same_document() {
        use futures::FutureExt;

        let locks = DocumentLocks::new();
        let (a, b) = keys_on_two_stripes();

        let held_a = locks.lock([&a]).await;
        let held_b = locks
            .lock([&b])
            .now_or_never()
            .expect("another document's lock is free");
        let mut waiting = Box::pin(locks.lock([&b, &a]));
        assert!((&mut waiting).now_or_never().is_none(), "a is held");
        drop(held_b);
        assert!((&mut waiting).now_or_never().is_none(), "a is still held");
        drop(held_a);
        let both = waiting.now_or_never().expect("both are free");
        assert_eq!(both.len(), 2);
    }

    /// Two syncs taking the same documents in opposite orders never wait for each other in a
    /// cycle: the stripes are always taken in one order.
    #[tokio::test]
    async fn document_locks_in_opposite_orders_never_deadlock() {
        use futures::FutureExt;

        let locks = DocumentLocks::new();
        let (a, b) = keys_on_two_stripes();
        // While a third party holds `a`, one sync waits for [a, b] and the other for [b, a].
        // Taken in the order given, the second would hold b and wait for a while the first,
        // once a is let go, took a and waited for b: a cycle. In stripe order neither holds
        // anything the other has before it has all it needs.
        let held = locks.lock([&a]).await;
        let mut forward = Box::pin(locks.lock([&a, &b]));
        let mut backward = Box::pin(locks.lock([&b, &a]));
        assert!((&mut forward).now_or_never().is_none());
        assert!((&mut backward).now_or_never().is_none());
        drop(held);
        let both = async {
            drop(forward.await);
            backward.await.len()
        };
        let taken = tokio::time::timeout(std::time::Duration::from_secs(10), both)
            .await
            .expect("no deadlock");
        assert_eq!(taken, 2);
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
