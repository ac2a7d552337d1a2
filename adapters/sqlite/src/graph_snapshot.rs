//! Where the vector graphs' snapshots live: one file per namespace in a directory beside the
//! database file (`memory.db` → `memory.db.vectors/`).
//!
//! A snapshot is written to a temporary file and synced; it replaces the published one by a
//! rename only while the caller holds the database's write lock and has checked that the
//! namespace's version is still the one the snapshot reflects. An erasure commits its
//! delete first and removes the published snapshot after: either the snapshot was published
//! before the erasure began (and is removed by it), or the version check fails and the copy
//! is discarded. This holds across processes, since the lock is SQLite's.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memory_core::Result;

/// The snapshot directory of one database.
#[derive(Debug)]
pub(crate) struct GraphSnapshots {
    dir: PathBuf,
    /// Numbers this process's temporary files.
    temporaries: AtomicU64,
}

/// The snapshot directory beside `database`.
pub(crate) fn snapshot_dir(database: &Path) -> PathBuf {
    PathBuf::from(format!("{}.vectors", database.display()))
}

/// A namespace's file name: its bytes in hex, so any namespace is a safe file name.
fn file_name(namespace: &str) -> String {
    let hex: String = namespace.bytes().map(|b| format!("{b:02x}")).collect();
    format!("ns-{hex}.graph")
}

/// A written, synced snapshot not yet published.
#[derive(Debug)]
pub(crate) struct Unpublished {
    temporary: PathBuf,
    target: PathBuf,
}

impl Unpublished {
    /// Makes it the namespace's snapshot (call holding the database's write lock, after the
    /// version check).
    pub(crate) fn publish(self) -> Result<()> {
        std::fs::rename(&self.temporary, &self.target).map_err(|e| {
            let _ = std::fs::remove_file(&self.temporary);
            crate::error::io(&self.target, e)
        })
    }

    /// Deletes it (the namespace changed since it was taken).
    pub(crate) fn discard(self) {
        let _ = std::fs::remove_file(&self.temporary);
    }
}

impl GraphSnapshots {
    /// Snapshots for the database at `database`.
    pub(crate) fn new(database: &Path) -> Self {
        Self {
            dir: snapshot_dir(database),
            temporaries: AtomicU64::new(0),
        }
    }

    /// The namespace's snapshot, if one was saved.
    pub(crate) fn read(&self, namespace: &str) -> Result<Option<Vec<u8>>> {
        let path = self.dir.join(file_name(namespace));
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(crate::error::io(path, e)),
        }
    }

    /// Writes and syncs `bytes` as a temporary file, to be published or discarded.
    pub(crate) fn write(&self, namespace: &str, bytes: &[u8]) -> Result<Unpublished> {
        std::fs::create_dir_all(&self.dir).map_err(|e| crate::error::io(&self.dir, e))?;
        let number = self.temporaries.fetch_add(1, Ordering::Relaxed);
        let temporary = self.dir.join(format!(
            "{}.{}-{number}.tmp",
            file_name(namespace),
            std::process::id()
        ));
        let written = (|| {
            let mut file = std::fs::File::create(&temporary)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(crate::error::io(temporary, e));
        }
        Ok(Unpublished {
            temporary,
            target: self.dir.join(file_name(namespace)),
        })
    }

    /// Deletes the namespace's published snapshot (after an erasure committed, or when the
    /// namespace is cleared).
    pub(crate) fn erase(&self, namespace: &str) -> Result<()> {
        let path = self.dir.join(file_name(namespace));
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(crate::error::io(path, e)),
        }
    }
}

/// Removes a database's snapshot directory (when the database itself is deleted).
pub(crate) fn remove_all(database: &Path) -> Result<()> {
    let dir = snapshot_dir(database);
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(crate::error::io(dir, e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn published_snapshots_replace_and_erase_and_discards_leave_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("p.db");
        let snapshots = GraphSnapshots::new(&database);
        assert_eq!(snapshots.read("a/b").unwrap(), None);
        snapshots.write("a/b", b"one").unwrap().publish().unwrap();
        snapshots.write("a/b", b"two").unwrap().publish().unwrap();
        assert_eq!(snapshots.read("a/b").unwrap().unwrap(), b"two");
        snapshots.write("a/b", b"stale").unwrap().discard();
        snapshots.erase("a/b").unwrap();
        snapshots.erase("a/b").unwrap();
        assert_eq!(snapshots.read("a/b").unwrap(), None);
        let left: Vec<_> = std::fs::read_dir(snapshot_dir(&database))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "no temporary file is left: {left:?}");
        remove_all(&database).unwrap();
        assert!(!snapshot_dir(&database).exists());
    }
}
