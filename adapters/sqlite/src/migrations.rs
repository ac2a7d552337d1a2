//! The schema's migrations, embedded in the binary with `include_str!` and handed to sqlx's
//! migrator at run time. `sqlx::migrate!` would do the same at compile time, but its proc
//! macro builds sqlx's drivers (and SQLite's C code) a second time for the host, which cost
//! a first build about a minute; the files, versions and checksums are the same (a test
//! compares them with sqlx's own reading of the directory), so databases migrated before
//! see nothing new.

use sqlx::migrate::{Migration, MigrationType, Migrator};

/// One migration file: its name (`<version>_<words>.sql`) and its SQL.
struct EmbeddedMigration {
    name: &'static str,
    sql: &'static str,
}

macro_rules! embedded {
    ($dir:literal, $($name:literal),+ $(,)?) => {
        &[$(EmbeddedMigration { name: $name, sql: include_str!(concat!("../", $dir, "/", $name)) }),+]
    };
}

/// `migrations/`: the full schema of a deployment's database.
const FULL: &[EmbeddedMigration] = embedded!(
    "migrations",
    "0001_sessions_messages.sql",
    "0002_search_index_skills.sql",
    "0003_long_term_memory.sql",
    "0004_vectors_jobs.sql",
    "0005_text_fields_job_queue.sql",
    "0006_vector_versions.sql",
    "0007_vector_fields.sql",
    "0008_session_profile.sql",
    "0009_memory_metadata.sql",
    "0010_raw_metadata.sql",
    "0011_memory_expiry.sql",
    "0012_job_queue_profile_state.sql",
    "0013_memory_consolidation.sql",
);

/// `profile_migrations/`: a profile's own database, only the profile's tables.
const PROFILE: &[EmbeddedMigration] = embedded!(
    "profile_migrations",
    "0100_profile.sql",
    "0101_memory_consolidation.sql",
);

/// The migrator of the full schema.
pub(crate) fn full() -> Migrator {
    migrator(FULL)
}

/// The migrator of a profile-only database.
pub(crate) fn profile() -> Migrator {
    migrator(PROFILE)
}

fn migrator(files: &[EmbeddedMigration]) -> Migrator {
    Migrator::with_migrations(files.iter().map(migration).collect())
}

/// The migration sqlx would read from the file: the version is the name's leading digits,
/// the description its other words, and a file starting `-- no-transaction` runs outside a
/// transaction.
fn migration(file: &EmbeddedMigration) -> Migration {
    let stem = file.name.trim_end_matches(".sql");
    let (version, words) = stem.split_once('_').unwrap_or((stem, ""));
    Migration::new(
        version.parse().unwrap_or(-1),
        words.replace('_', " ").into(),
        MigrationType::Simple,
        sqlx::SqlStr::from_static(file.sql),
        file.sql.starts_with("-- no-transaction"),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// Every file of the directory is embedded, with the version, description and checksum
    /// sqlx's own reading gives it (the checksum is what a migrated database recorded).
    async fn same_as_sqlx_reads(dir: &str, embedded: Migrator) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let read = Migrator::new(path).await.unwrap();
        let read: Vec<_> = read.iter().collect();
        let embedded: Vec<_> = embedded.iter().cloned().collect();
        assert_eq!(read.len(), embedded.len(), "{dir}: a file is not embedded");
        for (read, embedded) in read.iter().zip(&embedded) {
            assert_eq!(read.version, embedded.version);
            assert_eq!(read.description, embedded.description);
            assert_eq!(read.checksum, embedded.checksum, "{dir}: {}", read.version);
            assert_eq!(read.no_tx, embedded.no_tx);
            assert_eq!(read.migration_type, embedded.migration_type);
        }
    }

    #[tokio::test]
    async fn the_embedded_migrations_are_the_directories() {
        same_as_sqlx_reads("migrations", full()).await;
        same_as_sqlx_reads("profile_migrations", profile()).await;
    }
}
