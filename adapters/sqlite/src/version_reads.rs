//! Reads of vector namespaces' versions that share a statement.
//!
//! Every vector search first reads its namespace's version (a primary-key lookup, so a
//! write by another instance or process is never missed), and each statement is a round
//! trip to a reader's thread. Searches that start together (a recall's memory and
//! raw-message channels, concurrent recalls) read their versions in one statement here.
//!
//! A read joins the batch being gathered, or starts one and leads it: the leader yields to
//! the scheduler once, so that reads started beside it can join, then takes the batch and
//! runs one statement for all of it. The statement starts after every read in its batch
//! arrived, so each sees every write committed before it asked. When the leader goes away
//! or its statement fails, the others in its batch read for themselves.

use std::collections::HashMap;
use std::sync::Mutex;

use memory_core::Result;
use sqlx::SqliteConnection;
use tokio::sync::oneshot;

use crate::error::db;
use crate::readers::Readers;

/// A read waiting in a batch, and where its version goes.
type Asked = (String, oneshot::Sender<Option<i64>>);

/// Namespace version reads, batched (see the module's documentation). One per index.
#[derive(Debug, Default)]
pub(crate) struct VersionReads {
    /// The batch being gathered: `Some` from its leader's arrival until the leader takes it.
    gathering: Mutex<Option<Vec<Asked>>>,
}

/// The namespace's version in the file, read on `conn`.
pub(crate) async fn stored_version(
    conn: &mut SqliteConnection,
    namespace: &str,
) -> Result<Option<i64>> {
    sqlx::query_scalar("SELECT version FROM vector_namespaces WHERE namespace = ?")
        .bind(namespace)
        .fetch_optional(conn)
        .await
        .map_err(db)
}

/// Takes the leader's batch when dropped (its readers then read for themselves), unless the
/// leader took it first.
struct Leading<'a> {
    reads: &'a VersionReads,
    taken: bool,
}

impl Leading<'_> {
    fn take(&mut self) -> Vec<Asked> {
        self.taken = true;
        self.reads.gathering().take().unwrap_or_default()
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.reads.gathering().take();
        }
    }
}

impl VersionReads {
    fn gathering(&self) -> std::sync::MutexGuard<'_, Option<Vec<Asked>>> {
        self.gathering.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The namespace's version in the file (`None`: no such namespace), read by a statement
    /// that started after this call did.
    pub(crate) async fn read(&self, readers: &Readers, namespace: &str) -> Result<Option<i64>> {
        let (sender, receiver) = oneshot::channel();
        let leads = {
            let mut gathering = self.gathering();
            match gathering.as_mut() {
                Some(batch) => {
                    batch.push((namespace.to_owned(), sender));
                    false
                }
                None => {
                    *gathering = Some(Vec::new());
                    true
                }
            }
        };
        if !leads {
            return match receiver.await {
                Ok(version) => Ok(version),
                // The leader went away or failed: read alone.
                Err(_) => stored_version(&mut *readers.acquire().await?, namespace).await,
            };
        }
        let mut leading = Leading {
            reads: self,
            taken: false,
        };
        tokio::task::yield_now().await;
        let batch = leading.take();
        let mut conn = readers.acquire().await?;
        if batch.is_empty() {
            return stored_version(&mut conn, namespace).await;
        }
        let mut names: Vec<&str> = batch.iter().map(|(name, _)| name.as_str()).collect();
        names.push(namespace);
        names.sort_unstable();
        names.dedup();
        let marks = vec!["?"; names.len()].join(", ");
        let sql = format!(
            "SELECT namespace, version FROM vector_namespaces WHERE namespace IN ({marks})"
        );
        let mut query = sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql));
        for name in &names {
            query = query.bind(*name);
        }
        let versions: HashMap<String, i64> = query
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?
            .into_iter()
            .collect();
        drop(conn);
        for (name, sender) in batch {
            // A reader that went away no longer wants its answer.
            let _ = sender.send(versions.get(&name).copied());
        }
        Ok(versions.get(namespace).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteDatabase;

    async fn database() -> (tempfile::TempDir, SqliteDatabase) {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(crate::SqliteConfig::new(dir.path().join("v.db")))
            .await
            .unwrap();
        let mut tx = db.write().await.unwrap();
        sqlx::query(
            "INSERT INTO vector_namespaces(namespace, model, dims, version) \
             VALUES ('a', 'm', 3, 7), ('b', 'm', 3, 9)",
        )
        .execute(&mut *tx)
        .await
        .unwrap();
        tx.commit().await.unwrap();
        (dir, db)
    }

    #[tokio::test]
    async fn reads_started_together_share_one_statement_and_each_gets_its_own() {
        let (_dir, db) = database().await;
        let reads = VersionReads::default();
        let (a, b, missing, a_again) = tokio::join!(
            reads.read(&db.reader, "a"),
            reads.read(&db.reader, "b"),
            reads.read(&db.reader, "none"),
            reads.read(&db.reader, "a"),
        );
        assert_eq!(
            (a.unwrap(), b.unwrap(), missing.unwrap(), a_again.unwrap()),
            (Some(7), Some(9), None, Some(7))
        );
        assert!(reads.gathering().is_none(), "no batch is left open");
    }

    #[tokio::test]
    async fn a_read_sees_a_write_committed_before_it_asked() {
        let (_dir, db) = database().await;
        let reads = VersionReads::default();
        assert_eq!(reads.read(&db.reader, "a").await.unwrap(), Some(7));
        let mut tx = db.write().await.unwrap();
        sqlx::query("UPDATE vector_namespaces SET version = 8 WHERE namespace = 'a'")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(reads.read(&db.reader, "a").await.unwrap(), Some(8));
    }

    #[tokio::test]
    async fn when_the_leader_goes_away_the_others_read_for_themselves() {
        let (_dir, db) = database().await;
        let reads = VersionReads::default();
        let mut leader = Box::pin(reads.read(&db.reader, "a"));
        // Polled once: it leads, and yields before taking its batch.
        assert!(futures::poll!(leader.as_mut()).is_pending());
        let follower = reads.read(&db.reader, "b");
        let mut follower = Box::pin(follower);
        assert!(futures::poll!(follower.as_mut()).is_pending());
        drop(leader);
        assert!(
            reads.gathering().is_none(),
            "the dropped leader's batch is let go"
        );
        assert_eq!(follower.await.unwrap(), Some(9));
    }
}
