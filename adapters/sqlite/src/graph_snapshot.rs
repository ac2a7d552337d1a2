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
}

/// Numbers this process's temporary files (process-wide: two indexes on one database never
/// pick the same name).
static TEMPORARIES: AtomicU64 = AtomicU64::new(0);

/// The snapshot directory beside `database`.
pub(crate) fn snapshot_dir(database: &Path) -> PathBuf {
    PathBuf::from(format!("{}.vectors", database.display()))
}

/// A namespace's file name: its bytes in hex, so any namespace is a safe file name.
fn file_name(namespace: &str) -> String {
    let hex: String = namespace.bytes().map(|b| format!("{b:02x}")).collect();
    format!("ns-{hex}.graph")
}

/// A written, synced snapshot not yet published; dropped unpublished (discarded, or its
/// caller went away), its file is deleted.
#[derive(Debug)]
pub(crate) struct Unpublished {
    temporary: PathBuf,
    target: PathBuf,
    published: bool,
}

impl Unpublished {
    /// Makes it the namespace's snapshot (call holding the database's write lock, after the
    /// version check). A temporary file an erasure removed meanwhile is not published.
    pub(crate) fn publish(mut self) -> Result<()> {
        match std::fs::rename(&self.temporary, &self.target) {
            Ok(()) => {
                self.published = true;
                sync_dir(&self.target);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(crate::error::io(&self.target, e)),
        }
    }
}

impl Drop for Unpublished {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Syncs the directory holding `path`, so a rename or an unlink in it is durable.
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
}

impl GraphSnapshots {
    /// Snapshots for the database at `database`.
    pub(crate) fn new(database: &Path) -> Self {
        Self {
            dir: snapshot_dir(database),
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
        let number = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
        let temporary = self.dir.join(format!(
            "{}.{}-{number}.tmp",
            file_name(namespace),
            std::process::id()
        ));
        let unpublished = Unpublished {
            temporary,
            target: self.dir.join(file_name(namespace)),
            published: false,
        };
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&unpublished.temporary)?;
            file.write_all(bytes)?;
            file.sync_all()
        })();
        match written {
            Ok(()) => Ok(unpublished),
            Err(e) => Err(crate::error::io(&unpublished.temporary, e)),
        }
    }

    /// Deletes the namespace's snapshot and any temporary copy of it a save is writing or
    /// left behind (an erasure, or a cleared namespace), durably.
    pub(crate) fn erase(&self, namespace: &str) -> Result<()> {
        let name = file_name(namespace);
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(crate::error::io(&self.dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| crate::error::io(&self.dir, e))?;
            let file = entry.file_name().to_string_lossy().into_owned();
            if file == name || (file.starts_with(&format!("{name}.")) && file.ends_with(".tmp")) {
                match std::fs::remove_file(entry.path()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(crate::error::io(entry.path(), e)),
                }
            }
        }
        sync_dir(&self.dir.join(name));
        Ok(())
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
        drop(snapshots.write("a/b", b"dropped").unwrap());
        let in_flight = snapshots.write("a/b", b"in flight").unwrap();
        snapshots.erase("a/b").unwrap();
        assert_eq!(
            std::fs::read_dir(snapshot_dir(&database)).unwrap().count(),
            0
        );
        in_flight.publish().unwrap();
        assert_eq!(
            snapshots.read("a/b").unwrap(),
            None,
            "an erased copy is never published"
        );
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
