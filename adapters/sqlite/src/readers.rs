//! The read connections of a database, handed out without sqlx's pool.
//!
//! sqlx's `Pool` takes a connection back by spawning a task that pings it (a round trip to
//! the connection's worker thread) before it may be handed out again, whatever the pool's
//! options. For a SQLite read of a few microseconds that doubles the thread hand-offs a
//! statement costs: a recall runs about ten reads, an append one. Here a connection goes
//! back to the idle list when its guard drops, and nothing else happens: a SQLite connection
//! does not go stale, a read cut off mid-statement is reset by the worker before its next
//! command, and a transaction dropped open is rolled back by sqlx's own guard before the
//! connection is reused (its rollback is queued on the worker ahead of any later command).
//!
//! What the pool did that this does not: close connections idle for ten minutes (an open
//! database keeps the readers it has opened, at most `readers`, until it is closed), time out
//! an acquire after 30 seconds (no code here waits for a reader while holding another), and
//! drop a connection whose worker thread died (its reads keep failing with that error).

use std::sync::{Arc, Mutex};

use memory_core::Result;
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::db;

/// Up to `max` read-only connections, opened when first needed. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Readers {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    options: SqliteConnectOptions,
    max: u32,
    idle: Mutex<Vec<SqliteConnection>>,
    permits: Arc<Semaphore>,
}

impl Readers {
    /// Readers over `options` (which should open read-only), at most `max` at once.
    pub(crate) fn new(options: SqliteConnectOptions, max: u32) -> Self {
        let max = max.max(1);
        Self {
            shared: Arc::new(Shared {
                options,
                max,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(
                    usize::try_from(max).map_or(Semaphore::MAX_PERMITS, |max| {
                        max.min(Semaphore::MAX_PERMITS)
                    }),
                )),
            }),
        }
    }

    /// A connection of its own until the guard drops (waits while all `max` are out). Fails
    /// after [`Readers::close`].
    pub(crate) async fn acquire(&self) -> Result<ReadConnection> {
        let permit = Arc::clone(&self.shared.permits)
            .acquire_owned()
            .await
            .map_err(|_| db(sqlx::Error::PoolClosed))?;
        let idle = self.idle().pop();
        let connection = match idle {
            Some(connection) => connection,
            None => self.shared.options.connect().await.map_err(db)?,
        };
        Ok(ReadConnection {
            connection: Some(connection),
            shared: Arc::clone(&self.shared),
            _permit: permit,
        })
    }

    /// Waits for every connection out to come back (as sqlx's `Pool::close` does: a caller
    /// may remove the files next), refuses every later [`Readers::acquire`], and closes them.
    pub(crate) async fn close(&self) {
        // All permits back means no guard is out; a closed semaphore (a second close) means
        // the first one already waited.
        let every = self.shared.permits.acquire_many(self.shared.max).await;
        self.shared.permits.close();
        drop(every);
        let idle = std::mem::take(&mut *self.idle());
        for connection in idle {
            if let Err(error) = sqlx::Connection::close(connection).await {
                tracing::debug!(%error, "closing a read connection");
            }
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<SqliteConnection>> {
        self.shared.idle.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A read connection, back to its [`Readers`] when dropped. Derefs to the connection, so
/// `&mut *guard` is an executor and `guard.begin()` a read transaction.
#[derive(Debug)]
pub(crate) struct ReadConnection {
    connection: Option<SqliteConnection>,
    shared: Arc<Shared>,
    _permit: OwnedSemaphorePermit,
}

impl std::ops::Deref for ReadConnection {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        // Present from construction until `drop` takes it.
        self.connection.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl std::ops::DerefMut for ReadConnection {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        self.connection.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for ReadConnection {
    fn drop(&mut self) {
        // Back before the permit is released (fields drop after this body), so the next
        // caller the permit admits finds it idle rather than opening another.
        // Decided under the idle list's lock, which `close` takes only after closing the
        // permits: a connection is never pushed onto a list `close` has already emptied.
        if let Some(connection) = self.connection.take() {
            let mut idle = self.shared.idle.lock().unwrap_or_else(|p| p.into_inner());
            if !self.shared.permits.is_closed() {
                idle.push(connection);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::{SqliteConfig, SqliteDatabase};

    /// Closing waits for a connection out (a caller may delete the files next), then refuses.
    #[tokio::test]
    async fn close_waits_for_a_connection_out_and_then_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDatabase::open(SqliteConfig::new(dir.path().join("r.db")))
            .await
            .unwrap();
        let out = db.reader.acquire().await.unwrap();
        let readers = db.reader.clone();
        let closing = tokio::spawn(async move { readers.close().await });
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert!(!closing.is_finished(), "close did not wait");
        drop(out);
        closing.await.unwrap();
        assert!(db.reader.acquire().await.is_err());
        assert!(db.reader.idle().is_empty(), "no connection left open");
    }
}
