//! `[storage]`: which backend serves each storage role, and how to reach it.
//!
//! ```toml
//! [storage]
//! records = "postgres"     # long-term records (and sessions, unless `sessions` says)
//! sessions = "redis"       # sessions, messages, overlays, stored skills (default: records')
//! text = "tantivy"         # full-text indexes
//! session_text = "sqlite"  # the session messages' index (default: text's)
//! profile_text = "tantivy" # the long-term profiles' indexes (default: text's when text is
//!                          # named; Tantivy beside embedded records otherwise)
//! vectors = "lancedb"      # embeddings
//! jobs = "redis"           # the ingest job queue
//! kv = "redis"             # blocks, cached prompts, index outbox
//! blobs = "s3"             # skills, exports, backups
//!
//! [storage.postgres]
//! url_env = "MEMORY_POSTGRES_URL"   # the URL (credentials included) is read from this variable
//! ```
//!
//! Every role defaults to the embedded SQLite files in the data directory (blobs to plain
//! files; the profiles' full-text indexes to Tantivy, shared, beside them), so an absent
//! section is the zero-configuration default.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use memory_core::{TextLanguage, validate_profile_name};
use serde::Deserialize;

/// The longest `commit_interval_ms` accepted: a write never waits longer to be committed.
pub const MAX_COMMIT_INTERVAL_MS: u64 = 10_000;

/// A storage backend a deployment can pick for a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Embedded SQLite files in the data directory (the default for every role but blobs).
    Sqlite,
    /// PostgreSQL (with pgvector for vectors).
    Postgres,
    /// Redis.
    Redis,
    /// An S3-compatible object store (AWS S3, Cloudflare R2, MinIO, SeaweedFS).
    S3,
    /// Tantivy indexes on disk.
    Tantivy,
    /// LanceDB tables on disk or in object storage.
    Lancedb,
    /// Plain files in a directory (the default for blobs).
    Fs,
}

impl Backend {
    /// The name used in `memory.toml` (and for the Cargo feature that builds its adapter).
    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
            Self::Redis => "redis",
            Self::S3 => "s3",
            Self::Tantivy => "tantivy",
            Self::Lancedb => "lancedb",
            Self::Fs => "fs",
        }
    }

    /// The roles this backend can serve.
    pub fn roles(self) -> &'static [Role] {
        use Role::*;
        match self {
            Self::Sqlite | Self::Postgres => &[
                Records,
                Sessions,
                Text,
                SessionText,
                ProfileText,
                Vectors,
                Jobs,
                Kv,
            ],
            Self::Redis => &[Sessions, Jobs, Kv],
            Self::S3 | Self::Fs => &[Blobs],
            Self::Tantivy => &[Text, SessionText, ProfileText],
            Self::Lancedb => &[Vectors],
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A storage role: one kind of data, served by one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Long-term records (profiles: raw messages and typed memories).
    Records,
    /// The session tier: session metadata, the message tree with its overlays, and stored
    /// skills. Served by the records' backend unless `[storage] sessions` names another.
    Sessions,
    /// Full-text indexes (of searchable blocks, and of whatever `session_text` and
    /// `profile_text` do not name).
    Text,
    /// The full-text index of session messages. Follows `text` unless `[storage]
    /// session_text` names another: SQLite here keeps each append and its index entry in one
    /// transaction beside SQLite sessions, while profiles' text goes to a search engine.
    SessionText,
    /// The full-text indexes of long-term profiles. Follows `text` when `text` is named,
    /// unless `[storage] profile_text` names another; when neither is named and the records
    /// are embedded, Tantivy (shared): a search engine here gives recall its top-k text
    /// search while blocks and session messages stay in SQLite (the engine keeps a profile's
    /// index in step with its records, and rebuilds it from them when it is missing).
    ProfileText,
    /// Embeddings.
    Vectors,
    /// Skills, exports, backups, archived sessions.
    Blobs,
    /// The background job queue.
    Jobs,
    /// Small named values (blocks, cached prompts, the index outbox).
    Kv,
}

impl Role {
    /// Every role, in the order `[storage]` lists them.
    pub const ALL: [Role; 9] = [
        Role::Records,
        Role::Sessions,
        Role::Text,
        Role::SessionText,
        Role::ProfileText,
        Role::Vectors,
        Role::Blobs,
        Role::Jobs,
        Role::Kv,
    ];

    /// The key in `[storage]`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Records => "records",
            Self::Sessions => "sessions",
            Self::Text => "text",
            Self::SessionText => "session_text",
            Self::ProfileText => "profile_text",
            Self::Vectors => "vectors",
            Self::Blobs => "blobs",
            Self::Jobs => "jobs",
            Self::Kv => "kv",
        }
    }
}

/// The default of `[storage] open_profiles`.
pub const DEFAULT_OPEN_PROFILES: usize = memory_core::open_handles::DEFAULT_OPEN_PROFILES;

/// The default of `[storage] profile_idle_secs`.
pub const DEFAULT_PROFILE_IDLE_SECS: u64 =
    memory_core::open_handles::DEFAULT_PROFILE_IDLE.as_secs();

/// The default of `[storage.sqlite] busy_timeout_ms`.
pub const DEFAULT_BUSY_TIMEOUT_MS: u64 = 5_000;

/// The default of `[storage.sqlite] approximate_from_rows`.
pub const DEFAULT_APPROXIMATE_FROM_ROWS: u64 = 20_000;

/// The default of `[storage.sqlite] profile_page_size`.
pub const DEFAULT_PROFILE_PAGE_SIZE: u32 = 512;

/// Embedded SQLite (`[storage.sqlite]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteSettings {
    /// The sessions database (default `<data dir>/memory.db`).
    pub path: PathBuf,
    /// The directory of profile databases and the job queue (default `<data dir>/profiles`).
    pub profiles: PathBuf,
    /// How long a write waits for another process's write lock before it fails as a
    /// transient "database is locked" (default 5000 ms). Long deletes run in bounded batches,
    /// so a wait stays short.
    pub busy_timeout_ms: u64,
    /// Zero freed pages in the sessions database, so a deleted session's text leaves no
    /// trace in the file (profiles always do). Costs some write I/O (default false).
    pub secure_delete: bool,
    /// Scan every vector search exactly instead of through an approximate graph (default
    /// false).
    pub exact_vectors: bool,
    /// A profile's vector namespace of at least this many vectors is searched through an
    /// approximate graph (HNSW) whose candidates are rescored exactly (default 20,000).
    pub approximate_from_rows: u64,
    /// Single appends of concurrent callers share one transaction in the sessions database
    /// (default true).
    pub group_commit: bool,
    /// The page size of profile databases made from now on, in bytes (a power of two from
    /// 512 to 65,536; default 512, so a small profile takes little room; 4,096 suits a
    /// deployment of a few large profiles best). Existing files keep theirs.
    pub profile_page_size: u32,
}

/// PostgreSQL (`[storage.postgres]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresSettings {
    /// The environment variable holding the connection URL (default `MEMORY_POSTGRES_URL`).
    pub url_env: String,
    /// The schema the tables live in (default `memory`).
    pub schema: String,
    /// Most connections in the pool (default 10).
    pub max_connections: u32,
}

/// Redis (`[storage.redis]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisSettings {
    /// The environment variable holding the connection URL (default `MEMORY_REDIS_URL`).
    pub url_env: String,
    /// Prefix of every key (default `memory:`).
    pub key_prefix: String,
}

/// An S3-compatible store (`[storage.s3]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Settings {
    /// The bucket.
    pub bucket: String,
    /// Prefix of every object key (default empty).
    pub prefix: String,
    /// A custom endpoint (R2, MinIO, SeaweedFS); `None` for AWS.
    pub endpoint: Option<String>,
    /// The region (default `us-east-1`; R2 uses `auto`).
    pub region: String,
    /// The environment variable holding the access key id (default `AWS_ACCESS_KEY_ID`).
    pub access_key_env: String,
    /// The environment variable holding the secret key (default `AWS_SECRET_ACCESS_KEY`).
    pub secret_key_env: String,
    /// A named profile of `~/.aws/credentials`, used when the key variables are unset.
    pub profile: Option<String>,
    /// Whether the server honours conditional writes (`If-None-Match`, `If-Match`; default
    /// true: AWS, R2, SeaweedFS and MinIO do). Off: create-only writes are refused as not
    /// supported instead of racing.
    pub conditional_writes: bool,
}

/// A directory backend (`[storage.tantivy]`, `[storage.lancedb]`, `[storage.fs]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectorySettings {
    /// Where the data lives (relative paths resolve against the config file's directory).
    pub path: PathBuf,
}

/// `[storage.tantivy]`: where the indexes live and the language they analyze text as.
///
/// ```toml
/// [storage.tantivy]
/// path = "tantivy"
/// language = "english"          # the general index and every profile's, by default
/// commit_interval_ms = 0         # how long a write waits to share a commit
/// shared = true                  # false: one process holds the indexes, another is refused
/// profiles_from_documents = 2000 # the embedded default: smaller profiles stay on SQLite FTS5
///
/// [storage.tantivy.profile_languages]
/// kenji = "cjk"                  # this profile's memories are Japanese
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TantivySettings {
    /// Where the indexes live (relative paths resolve against the config file's directory).
    pub path: PathBuf,
    /// The language of the general index (messages, blocks) and of profiles not named in
    /// `profile_languages`.
    pub language: TextLanguage,
    /// How long the first write of a batch waits for others to share its commit.
    pub commit_interval_ms: u64,
    /// Several processes on this host (`memory serve` twice, `memory worker`, the CLI) open
    /// the indexes at once: each commit takes the directory's lock in turn. Default: true
    /// (false: the first process holds the indexes, commits a little faster, and another
    /// process is refused).
    pub shared: bool,
    /// Profiles whose text is in another language.
    pub profile_languages: BTreeMap<String, TextLanguage>,
    /// With the embedded default (`profile_text` not named, records on SQLite), a profile's
    /// text stays in its own SQLite file's FTS5 index until the profile holds this many
    /// documents (raw messages and memories), and moves to Tantivy then: a small profile
    /// costs no Tantivy directory and no Tantivy commit per write. 0 puts every profile on
    /// Tantivy from its start, as does naming `profile_text = "tantivy"`. Profiles in
    /// another language than English (the deployment's, or `profile_languages`) are on
    /// Tantivy from their start.
    pub profiles_from_documents: u64,
}

/// The default of `[storage.tantivy] profiles_from_documents`.
pub const DEFAULT_PROFILES_FROM_DOCUMENTS: u64 = 2_000;

impl TantivySettings {
    /// The defaults, with the indexes under `data_dir/tantivy`.
    pub fn under(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join("tantivy"),
            language: TextLanguage::default(),
            commit_interval_ms: 0,
            shared: true,
            profile_languages: BTreeMap::new(),
            profiles_from_documents: DEFAULT_PROFILES_FROM_DOCUMENTS,
        }
    }
}

/// The defaults of `[storage.lancedb]`'s search settings.
pub const DEFAULT_LANCEDB_INDEX_THRESHOLD: usize = 100_000;
/// See [`DEFAULT_LANCEDB_INDEX_THRESHOLD`].
pub const DEFAULT_LANCEDB_FIELD_INDEX_THRESHOLD: usize = 10_000;
/// See [`DEFAULT_LANCEDB_INDEX_THRESHOLD`].
pub const DEFAULT_LANCEDB_EXACT_FILTER_LIMIT: usize = 5_000;
/// See [`DEFAULT_LANCEDB_INDEX_THRESHOLD`].
pub const DEFAULT_LANCEDB_NPROBES: usize = 80;
/// See [`DEFAULT_LANCEDB_INDEX_THRESHOLD`].
pub const DEFAULT_LANCEDB_REFINE_FACTOR: u32 = 10;

/// Where LanceDB keeps its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LancedbLocation {
    /// A directory on local disk.
    Directory(PathBuf),
    /// The `[storage.s3]` bucket, under its prefix and then this one (ending in `/`); the
    /// endpoint, region and credentials are `[storage.s3]`'s.
    S3 {
        /// The prefix inside `[storage.s3]`'s prefix.
        prefix: String,
    },
}

/// `[storage.lancedb]`: where the vector tables live and how they are searched.
///
/// ```toml
/// [storage.lancedb]
/// location = "s3"            # "disk" (default, under `path`) or "s3" ([storage.s3]'s bucket)
/// prefix = "lancedb/"        # with location = "s3": under [storage.s3]'s prefix
/// index_threshold = 100000   # rows from which a table gets its approximate index
/// field_index_threshold = 10000  # rows from which session, kind and time are indexed
/// exact_filter_limit = 5000  # a filter at most this many rows match is searched exactly
/// nprobes = 80               # IVF partitions searched
/// refine_factor = 10         # candidates re-ranked exactly per hit
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LancedbSettings {
    /// Where the tables live.
    pub location: LancedbLocation,
    /// Rows from which a table gets an approximate index (below: exact search).
    pub index_threshold: usize,
    /// Rows from which a table gets its field indexes (session, kind, time), so filtered
    /// searches read only the matching rows.
    pub field_index_threshold: usize,
    /// The most rows a filter may match and still be searched exactly over those rows (more:
    /// through the approximate index, filtered first).
    pub exact_filter_limit: usize,
    /// IVF partitions probed per search.
    pub nprobes: usize,
    /// Candidates re-ranked by exact distance per hit wanted.
    pub refine_factor: u32,
}

/// A validated `[storage]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageConfig {
    /// Long-term records.
    pub records: Backend,
    /// Sessions, messages, overlays and stored skills.
    pub sessions: Backend,
    /// Full-text indexes (searchable blocks).
    pub text: Backend,
    /// The session messages' full-text index.
    pub session_text: Backend,
    /// The long-term profiles' full-text indexes.
    pub profile_text: Backend,
    /// True when `profile_text` was not chosen (neither it nor `text` is named): the
    /// embedded default's Tantivy, which a build without Tantivy replaces with `text`'s
    /// backend ([`Self::without_tantivy_default`]).
    pub profile_text_defaulted: bool,
    /// Embeddings.
    pub vectors: Backend,
    /// Blobs.
    pub blobs: Backend,
    /// The job queue.
    pub jobs: Backend,
    /// Key-value.
    pub kv: Backend,
    /// Profiles whose files (a SQLite profile database, a Tantivy profile index) this
    /// process keeps open at once, per kind (default 16): the least recently used one not in
    /// use is closed to open another. Memory, threads and open files grow with this, never
    /// with the number of profiles.
    pub open_profiles: usize,
    /// Seconds after which a profile's files unused are closed (default 30).
    pub profile_idle_secs: u64,
    /// `[storage.sqlite]`.
    pub sqlite: SqliteSettings,
    /// `[storage.postgres]`, when a role uses it.
    pub postgres: Option<PostgresSettings>,
    /// `[storage.redis]`, when a role uses it.
    pub redis: Option<RedisSettings>,
    /// `[storage.s3]`, when a role uses it.
    pub s3: Option<S3Settings>,
    /// `[storage.tantivy]`, when a role uses it.
    pub tantivy: Option<TantivySettings>,
    /// `[storage.lancedb]`, when a role uses it.
    pub lancedb: Option<LancedbSettings>,
    /// `[storage.fs]` (blobs as files).
    pub fs: DirectorySettings,
}

impl StorageConfig {
    /// Everything embedded, under `data_dir`: SQLite files, blobs as files, and the
    /// profiles' full-text indexes on Tantivy (shared by the processes on this host).
    pub fn embedded(data_dir: &Path) -> Self {
        Self {
            records: Backend::Sqlite,
            sessions: Backend::Sqlite,
            text: Backend::Sqlite,
            session_text: Backend::Sqlite,
            profile_text: Backend::Tantivy,
            profile_text_defaulted: true,
            vectors: Backend::Sqlite,
            blobs: Backend::Fs,
            jobs: Backend::Sqlite,
            kv: Backend::Sqlite,
            open_profiles: DEFAULT_OPEN_PROFILES,
            profile_idle_secs: DEFAULT_PROFILE_IDLE_SECS,
            sqlite: SqliteSettings {
                busy_timeout_ms: DEFAULT_BUSY_TIMEOUT_MS,
                secure_delete: false,
                exact_vectors: false,
                approximate_from_rows: DEFAULT_APPROXIMATE_FROM_ROWS,
                group_commit: true,
                profile_page_size: DEFAULT_PROFILE_PAGE_SIZE,
                path: data_dir.join("memory.db"),
                profiles: data_dir.join("profiles"),
            },
            postgres: None,
            redis: None,
            s3: None,
            tantivy: Some(TantivySettings::under(data_dir)),
            lancedb: None,
            fs: DirectorySettings {
                path: data_dir.join("blobs"),
            },
        }
    }

    /// The same storage for a build without Tantivy: a defaulted `profile_text` follows
    /// `text` instead (a named one is kept, and fails to open with a clear error).
    pub fn without_tantivy_default(mut self) -> Self {
        if self.profile_text_defaulted && self.profile_text == Backend::Tantivy {
            self.profile_text = self.text;
            if !self.backends().contains(&Backend::Tantivy) {
                self.tantivy = None;
            }
        }
        self
    }

    /// The backend of a role.
    pub fn backend(&self, role: Role) -> Backend {
        match role {
            Role::Records => self.records,
            Role::Sessions => self.sessions,
            Role::Text => self.text,
            Role::SessionText => self.session_text,
            Role::ProfileText => self.profile_text,
            Role::Vectors => self.vectors,
            Role::Blobs => self.blobs,
            Role::Jobs => self.jobs,
            Role::Kv => self.kv,
        }
    }

    /// Every backend some role uses, each once, in role order.
    pub fn backends(&self) -> Vec<Backend> {
        let mut out = Vec::new();
        for role in Role::ALL {
            let backend = self.backend(role);
            if !out.contains(&backend) {
                out.push(backend);
            }
        }
        out
    }
}

/// `[storage]` as written (validated into [`StorageConfig`] by the model).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawStorage {
    pub records: Option<Backend>,
    pub sessions: Option<Backend>,
    pub text: Option<Backend>,
    pub session_text: Option<Backend>,
    pub profile_text: Option<Backend>,
    pub vectors: Option<Backend>,
    pub blobs: Option<Backend>,
    pub jobs: Option<Backend>,
    pub kv: Option<Backend>,
    pub open_profiles: Option<usize>,
    pub profile_idle_secs: Option<u64>,
    pub sqlite: Option<RawSqlite>,
    pub postgres: Option<RawPostgres>,
    pub redis: Option<RawRedis>,
    pub s3: Option<RawS3>,
    pub tantivy: Option<RawTantivy>,
    pub lancedb: Option<RawLancedb>,
    pub fs: Option<RawDirectory>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLancedb {
    pub location: Option<String>,
    pub path: Option<String>,
    pub prefix: Option<String>,
    pub index_threshold: Option<usize>,
    pub field_index_threshold: Option<usize>,
    pub exact_filter_limit: Option<usize>,
    pub nprobes: Option<usize>,
    pub refine_factor: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTantivy {
    pub path: Option<String>,
    pub language: Option<String>,
    pub commit_interval_ms: Option<u64>,
    pub shared: Option<bool>,
    #[serde(default)]
    pub profile_languages: BTreeMap<String, String>,
    pub profiles_from_documents: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSqlite {
    pub path: Option<String>,
    pub profiles: Option<String>,
    pub busy_timeout_ms: Option<u64>,
    pub secure_delete: Option<bool>,
    pub exact_vectors: Option<bool>,
    pub approximate_from_rows: Option<u64>,
    pub group_commit: Option<bool>,
    pub profile_page_size: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPostgres {
    pub url_env: Option<String>,
    pub schema: Option<String>,
    pub max_connections: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRedis {
    pub url_env: Option<String>,
    pub key_prefix: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawS3 {
    pub bucket: String,
    pub prefix: Option<String>,
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_env: Option<String>,
    pub secret_key_env: Option<String>,
    pub profile: Option<String>,
    pub conditional_writes: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDirectory {
    pub path: Option<String>,
}

/// A problem with `[storage]`: the key it concerns and what is wrong.
pub(crate) struct StorageProblem {
    pub key: String,
    pub message: String,
}

fn problem(key: impl Into<String>, message: impl Into<String>) -> StorageProblem {
    StorageProblem {
        key: key.into(),
        message: message.into(),
    }
}

fn env_name(key: &str, value: Option<String>, default: &str) -> Result<String, StorageProblem> {
    let name = value.unwrap_or_else(|| default.to_owned());
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(name)
    } else {
        Err(problem(
            key,
            format!(
                "{name:?} is not an environment variable name (A-Z, 0-9, '_'); \
                 name the variable that holds the secret, never the secret itself"
            ),
        ))
    }
}

impl RawStorage {
    /// Validates against `base` (the config file's directory, where relative paths start).
    pub(crate) fn validate(self, base: &Path) -> Result<StorageConfig, StorageProblem> {
        let resolve = |p: Option<String>, default: &str| base.join(p.as_deref().unwrap_or(default));
        let mut config = StorageConfig::embedded(base);
        let picks = [
            (Role::Records, self.records),
            // The session tier follows the records unless it is named.
            (Role::Sessions, self.sessions.or(self.records)),
            (Role::Text, self.text),
            // The messages' index follows the text unless it is named.
            (Role::SessionText, self.session_text.or(self.text)),
            // So do the profiles' indexes; neither named, they stay on Tantivy beside embedded
            // records (the default) and follow the records' text otherwise.
            (
                Role::ProfileText,
                match (self.profile_text.or(self.text), self.records) {
                    (Some(named), _) => Some(named),
                    (None, None | Some(Backend::Sqlite)) => None,
                    (None, Some(_)) => Some(Backend::Sqlite),
                },
            ),
            (Role::Vectors, self.vectors),
            (Role::Blobs, self.blobs),
            (Role::Jobs, self.jobs),
            (Role::Kv, self.kv),
        ];
        for (role, pick) in picks {
            let Some(backend) = pick else { continue };
            if !backend.roles().contains(&role) {
                let can: Vec<&str> = backend.roles().iter().map(|r| r.key()).collect();
                return Err(problem(
                    format!("storage.{}", role.key()),
                    format!(
                        "{backend} cannot serve {}; it serves {}",
                        role.key(),
                        can.join(", ")
                    ),
                ));
            }
            match role {
                Role::Records => config.records = backend,
                Role::Sessions => config.sessions = backend,
                Role::Text => config.text = backend,
                Role::SessionText => config.session_text = backend,
                Role::ProfileText => {
                    config.profile_text = backend;
                    config.profile_text_defaulted =
                        self.profile_text.is_none() && self.text.is_none();
                }
                Role::Vectors => config.vectors = backend,
                Role::Blobs => config.blobs = backend,
                Role::Jobs => config.jobs = backend,
                Role::Kv => config.kv = backend,
            }
        }
        if self.open_profiles == Some(0) {
            return Err(problem(
                "storage.open_profiles",
                "must be at least 1 (profiles open at once)",
            ));
        }
        config.open_profiles = self.open_profiles.unwrap_or(DEFAULT_OPEN_PROFILES);
        config.profile_idle_secs = self.profile_idle_secs.unwrap_or(DEFAULT_PROFILE_IDLE_SECS);
        let sqlite = self.sqlite.unwrap_or_default();
        let profile_page_size = sqlite
            .profile_page_size
            .unwrap_or(DEFAULT_PROFILE_PAGE_SIZE);
        if !(512..=65_536).contains(&profile_page_size) || !profile_page_size.is_power_of_two() {
            return Err(problem(
                "storage.sqlite.profile_page_size",
                format!("must be a power of two from 512 to 65536, not {profile_page_size}"),
            ));
        }
        config.sqlite = SqliteSettings {
            profile_page_size,
            path: resolve(sqlite.path, "memory.db"),
            profiles: resolve(sqlite.profiles, "profiles"),
            busy_timeout_ms: sqlite.busy_timeout_ms.unwrap_or(DEFAULT_BUSY_TIMEOUT_MS),
            secure_delete: sqlite.secure_delete.unwrap_or(false),
            exact_vectors: sqlite.exact_vectors.unwrap_or(false),
            approximate_from_rows: sqlite
                .approximate_from_rows
                .unwrap_or(DEFAULT_APPROXIMATE_FROM_ROWS),
            group_commit: sqlite.group_commit.unwrap_or(true),
        };
        config.fs = DirectorySettings {
            path: resolve(self.fs.unwrap_or_default().path, "blobs"),
        };
        let used = config.backends();
        let uses = |b: Backend| used.contains(&b);
        if uses(Backend::Postgres) || self.postgres.is_some() {
            let raw = self.postgres.unwrap_or_default();
            config.postgres = Some(PostgresSettings {
                url_env: env_name(
                    "storage.postgres.url_env",
                    raw.url_env,
                    "MEMORY_POSTGRES_URL",
                )?,
                schema: raw.schema.unwrap_or_else(|| "memory".into()),
                max_connections: raw.max_connections.unwrap_or(10).max(1),
            });
        }
        if uses(Backend::Redis) || self.redis.is_some() {
            let raw = self.redis.unwrap_or_default();
            config.redis = Some(RedisSettings {
                url_env: env_name("storage.redis.url_env", raw.url_env, "MEMORY_REDIS_URL")?,
                key_prefix: raw.key_prefix.unwrap_or_else(|| "memory:".into()),
            });
        }
        match self.s3 {
            Some(raw) => {
                if raw.bucket.is_empty() {
                    return Err(problem("storage.s3.bucket", "name the bucket"));
                }
                let prefix = raw.prefix.unwrap_or_default();
                if !(prefix.is_empty() || prefix.ends_with('/')) || prefix.starts_with('/') {
                    return Err(problem(
                        "storage.s3.prefix",
                        format!("{prefix:?} must be empty or end in '/' (and not start with one)"),
                    ));
                }
                config.s3 = Some(S3Settings {
                    bucket: raw.bucket,
                    prefix,
                    endpoint: raw.endpoint,
                    region: raw.region.unwrap_or_else(|| "us-east-1".into()),
                    access_key_env: env_name(
                        "storage.s3.access_key_env",
                        raw.access_key_env,
                        "AWS_ACCESS_KEY_ID",
                    )?,
                    secret_key_env: env_name(
                        "storage.s3.secret_key_env",
                        raw.secret_key_env,
                        "AWS_SECRET_ACCESS_KEY",
                    )?,
                    profile: raw.profile,
                    conditional_writes: raw.conditional_writes.unwrap_or(true),
                });
            }
            None if uses(Backend::S3) => {
                return Err(problem(
                    "storage.s3",
                    "blobs = \"s3\" needs a [storage.s3] section with at least `bucket`",
                ));
            }
            None => {}
        }
        if uses(Backend::Tantivy) || self.tantivy.is_some() {
            let raw = self.tantivy.unwrap_or_default();
            let language = |key: String, name: &str| {
                name.parse::<TextLanguage>()
                    .map_err(|e| problem(key, e.to_string()))
            };
            let mut profile_languages = BTreeMap::new();
            for (profile, name) in &raw.profile_languages {
                let key = format!("storage.tantivy.profile_languages.{profile}");
                validate_profile_name(profile).map_err(|e| problem(key.clone(), e.to_string()))?;
                profile_languages.insert(profile.clone(), language(key, name)?);
            }
            let mut settings = TantivySettings::under(base);
            if let Some(path) = raw.path {
                settings.path = base.join(path);
            }
            if let Some(name) = raw.language {
                settings.language = language("storage.tantivy.language".into(), &name)?;
            }
            if let Some(ms) = raw.commit_interval_ms {
                if ms > MAX_COMMIT_INTERVAL_MS {
                    return Err(problem(
                        "storage.tantivy.commit_interval_ms",
                        format!("{ms} is over the limit of {MAX_COMMIT_INTERVAL_MS} ms"),
                    ));
                }
                settings.commit_interval_ms = ms;
            }
            if let Some(shared) = raw.shared {
                settings.shared = shared;
            }
            if let Some(documents) = raw.profiles_from_documents {
                settings.profiles_from_documents = documents;
            }
            settings.profile_languages = profile_languages;
            config.tantivy = Some(settings);
        } else {
            config.tantivy = None;
        }
        if uses(Backend::Lancedb) || self.lancedb.is_some() {
            let raw = self.lancedb.unwrap_or_default();
            let location = match raw.location.as_deref().unwrap_or("disk") {
                "disk" => {
                    if raw.prefix.is_some() {
                        return Err(problem(
                            "storage.lancedb.prefix",
                            "a prefix is for location = \"s3\"; on disk, set `path`",
                        ));
                    }
                    LancedbLocation::Directory(resolve(raw.path, "lancedb"))
                }
                "s3" => {
                    if raw.path.is_some() {
                        return Err(problem(
                            "storage.lancedb.path",
                            "a path is for location = \"disk\"; in S3, set `prefix`",
                        ));
                    }
                    if config.s3.is_none() {
                        return Err(problem(
                            "storage.lancedb.location",
                            "location = \"s3\" needs a [storage.s3] section (bucket, endpoint, \
                             credentials)",
                        ));
                    }
                    let prefix = raw.prefix.unwrap_or_else(|| "lancedb/".into());
                    if !prefix.ends_with('/') || prefix.starts_with('/') || prefix.len() < 2 {
                        return Err(problem(
                            "storage.lancedb.prefix",
                            format!("{prefix:?} must end in '/' (and not start with one)"),
                        ));
                    }
                    LancedbLocation::S3 { prefix }
                }
                other => {
                    return Err(problem(
                        "storage.lancedb.location",
                        format!("{other:?} is not a location: \"disk\" or \"s3\""),
                    ));
                }
            };
            let at_least_one = |key: &str, value: Option<usize>, default: usize| match value {
                Some(0) => Err(problem(
                    format!("storage.lancedb.{key}"),
                    "must be at least 1",
                )),
                v => Ok(v.unwrap_or(default)),
            };
            config.lancedb = Some(LancedbSettings {
                location,
                index_threshold: at_least_one(
                    "index_threshold",
                    raw.index_threshold,
                    DEFAULT_LANCEDB_INDEX_THRESHOLD,
                )?,
                field_index_threshold: at_least_one(
                    "field_index_threshold",
                    raw.field_index_threshold,
                    DEFAULT_LANCEDB_FIELD_INDEX_THRESHOLD,
                )?,
                exact_filter_limit: raw
                    .exact_filter_limit
                    .unwrap_or(DEFAULT_LANCEDB_EXACT_FILTER_LIMIT),
                nprobes: at_least_one("nprobes", raw.nprobes, DEFAULT_LANCEDB_NPROBES)?,
                refine_factor: at_least_one(
                    "refine_factor",
                    raw.refine_factor.map(|f| f as usize),
                    DEFAULT_LANCEDB_REFINE_FACTOR as usize,
                )? as u32,
            });
        }
        Ok(config)
    }
}

/// The `memory.toml` section that puts every role but blobs on PostgreSQL, in `schema` (the
/// URL comes from `MEMORY_POSTGRES_URL`): what scratch deployments, benchmarks and examples
/// write.
///
/// ```
/// let toml = memory_config::all_on_postgres("scratch");
/// assert!(toml.contains("records = \"postgres\"") && toml.contains("schema = \"scratch\""));
/// ```
pub fn all_on_postgres(schema: &str) -> String {
    format!(
        "[storage]\nrecords = \"postgres\"\ntext = \"postgres\"\nvectors = \"postgres\"\n\
         jobs = \"postgres\"\nkv = \"postgres\"\n\n[storage.postgres]\nschema = \"{schema}\"\n"
    )
}
