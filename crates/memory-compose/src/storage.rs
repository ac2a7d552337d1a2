//! Opens the backend each storage role names, once, and hands out its ports.

use std::sync::Arc;

use memory_config::{Backend, Role, StorageConfig};
use memory_core::ports::{
    BlobStore, JobQueue, KeyValueStore, MemoryProfiles, MessageStore, SessionRegistry, SkillStore,
    TextIndex, TextIndexes, VectorIndexes,
};

use crate::error::{ComposeError, Result};

/// The error for a backend this build cannot open for a role.
fn unavailable(role: Role, backend: Backend) -> ComposeError {
    match backend {
        Backend::Sqlite | Backend::Fs => ComposeError::NotBuilt { role, backend },
        #[cfg(feature = "postgres")]
        Backend::Postgres => ComposeError::NotAvailable {
            role,
            backend,
            reason: "memory-postgres does not serve this role",
        },
        #[cfg(not(feature = "postgres"))]
        Backend::Postgres => ComposeError::NotBuilt { role, backend },
        #[cfg(feature = "redis")]
        Backend::Redis => ComposeError::NotAvailable {
            role,
            backend,
            reason: "memory-redis does not serve this role",
        },
        #[cfg(not(feature = "redis"))]
        Backend::Redis => ComposeError::NotBuilt { role, backend },
        #[cfg(not(feature = "s3"))]
        Backend::S3 => ComposeError::NotBuilt { role, backend },
        #[cfg(not(feature = "tantivy"))]
        Backend::Tantivy => ComposeError::NotBuilt { role, backend },
        #[cfg(not(feature = "lancedb"))]
        Backend::Lancedb => ComposeError::NotBuilt { role, backend },
        // Unreachable in a build without any adapter of these backends.
        #[allow(unreachable_patterns)]
        _ => ComposeError::NotAvailable {
            role,
            backend,
            reason: "no adapter for this backend is part of this workspace yet",
        },
    }
}

/// Opened backends, shared by every port handed out.
pub(crate) struct Stores {
    storage: StorageConfig,
    #[cfg(feature = "sqlite")]
    sessions_db: tokio::sync::OnceCell<memory_sqlite::SqliteDatabase>,
    #[cfg(feature = "sqlite")]
    jobs_db: tokio::sync::OnceCell<memory_sqlite::SqliteDatabase>,
    #[cfg(feature = "sqlite")]
    profiles: std::sync::OnceLock<Arc<memory_sqlite::SqliteProfiles>>,
    #[cfg(feature = "postgres")]
    postgres_db: tokio::sync::OnceCell<memory_postgres::PostgresDatabase>,
    #[cfg(feature = "redis")]
    redis_db: tokio::sync::OnceCell<memory_redis::RedisDatabase>,
    #[cfg(feature = "s3")]
    s3_bucket: tokio::sync::OnceCell<memory_s3::S3Bucket>,
    #[cfg(feature = "tantivy")]
    tantivy_general: tokio::sync::OnceCell<memory_tantivy::TantivyTextIndex>,
    #[cfg(feature = "tantivy")]
    tantivy_profiles: std::sync::OnceLock<Arc<memory_tantivy::TantivyTextIndexes>>,
    #[cfg(feature = "lancedb")]
    lancedb_profiles: std::sync::OnceLock<Arc<memory_lancedb::LanceVectorIndexes>>,
}

impl Stores {
    pub(crate) fn new(storage: StorageConfig) -> Self {
        // A build without Tantivy keeps the profiles' text where `text` is, unless named.
        #[cfg(not(feature = "tantivy"))]
        let storage = {
            let fitted = storage.clone().without_tantivy_default();
            if fitted.profile_text != storage.profile_text {
                tracing::warn!(
                    "this build leaves out Tantivy: the profiles' text stays on {} (the default \
                     is Tantivy; a process of a build with it would not see this one's writes \
                     in its index: set `[storage] profile_text` the same in every process)",
                    fitted.profile_text
                );
            }
            fitted
        };
        Self {
            storage,
            #[cfg(feature = "sqlite")]
            sessions_db: tokio::sync::OnceCell::new(),
            #[cfg(feature = "sqlite")]
            jobs_db: tokio::sync::OnceCell::new(),
            #[cfg(feature = "sqlite")]
            profiles: std::sync::OnceLock::new(),
            #[cfg(feature = "postgres")]
            postgres_db: tokio::sync::OnceCell::new(),
            #[cfg(feature = "redis")]
            redis_db: tokio::sync::OnceCell::new(),
            #[cfg(feature = "s3")]
            s3_bucket: tokio::sync::OnceCell::new(),
            #[cfg(feature = "tantivy")]
            tantivy_general: tokio::sync::OnceCell::new(),
            #[cfg(feature = "tantivy")]
            tantivy_profiles: std::sync::OnceLock::new(),
            #[cfg(feature = "lancedb")]
            lancedb_profiles: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn storage(&self) -> &StorageConfig {
        &self.storage
    }

    fn backend(&self, role: Role) -> Backend {
        self.storage.backend(role)
    }

    /// How long a profile's files stay open unused (`[storage] profile_idle_secs`).
    #[cfg(any(feature = "sqlite", feature = "tantivy"))]
    fn profile_idle(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.storage.profile_idle_secs)
    }

    /// The history tree.
    pub(crate) async fn message_store(&self) -> Result<Arc<dyn MessageStore>> {
        match self.backend(Role::Sessions) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteMessageStore::new(
                self.sessions_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresMessageStore::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "redis")]
            Backend::Redis => Ok(Arc::new(memory_redis::RedisMessageStore::new(
                self.redis_db().await?,
            ))),
            other => Err(unavailable(Role::Sessions, other)),
        }
    }

    /// Session metadata.
    pub(crate) async fn session_registry(&self) -> Result<Arc<dyn SessionRegistry>> {
        match self.backend(Role::Sessions) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteSessionRegistry::new(
                self.sessions_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresSessionRegistry::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "redis")]
            Backend::Redis => Ok(Arc::new(memory_redis::RedisSessionRegistry::new(
                self.redis_db().await?,
            ))),
            other => Err(unavailable(Role::Sessions, other)),
        }
    }

    /// Stored skills of a block: objects in the bucket when blobs are on S3 (where the
    /// reference keeps them), else the session tier's backend.
    pub(crate) async fn skill_store(&self) -> Result<SkillStores> {
        #[cfg(feature = "s3")]
        if self.backend(Role::Blobs) == Backend::S3 {
            let bucket = self.s3_bucket().await?;
            return Ok(Box::new(move |label: &str| -> Arc<dyn SkillStore> {
                Arc::new(memory_s3::S3SkillStore::new(bucket.clone(), label))
            }));
        }
        match self.backend(Role::Sessions) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => {
                let db = self.sessions_db().await?;
                Ok(Box::new(move |label: &str| -> Arc<dyn SkillStore> {
                    Arc::new(memory_sqlite::SqliteSkillStore::new(db.clone(), label))
                }))
            }
            #[cfg(feature = "postgres")]
            Backend::Postgres => {
                let db = self.postgres_db().await?;
                Ok(Box::new(move |label: &str| -> Arc<dyn SkillStore> {
                    Arc::new(memory_postgres::PostgresSkillStore::new(db.clone(), label))
                }))
            }
            #[cfg(feature = "redis")]
            Backend::Redis => {
                let db = self.redis_db().await?;
                Ok(Box::new(move |label: &str| -> Arc<dyn SkillStore> {
                    Arc::new(memory_redis::RedisSkillStore::new(db.clone(), label))
                }))
            }
            other => Err(unavailable(Role::Sessions, other)),
        }
    }

    /// Small named values (and the index outbox of the session tier).
    pub(crate) async fn key_value(&self) -> Result<Arc<dyn KeyValueStore>> {
        match self.backend(Role::Kv) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteKeyValueStore::new(
                self.sessions_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresKeyValueStore::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "redis")]
            Backend::Redis => Ok(Arc::new(memory_redis::RedisKeyValueStore::new(
                self.redis_db().await?,
            ))),
            other => Err(unavailable(Role::Kv, other)),
        }
    }

    /// The `messages` index: the one the store writes when the session text and the session
    /// tier share a database (both SQLite, or both Postgres), else an index the engine keeps
    /// in step.
    pub(crate) async fn message_index(&self) -> Result<Arc<dyn TextIndex>> {
        match (
            self.backend(Role::SessionText),
            self.backend(Role::Sessions),
        ) {
            #[cfg(feature = "sqlite")]
            (Backend::Sqlite, Backend::Sqlite) => Ok(Arc::new(
                memory_sqlite::SqliteMessageIndex::new(self.sessions_db().await?),
            )),
            #[cfg(feature = "postgres")]
            (Backend::Postgres, Backend::Postgres) => Ok(Arc::new(
                memory_postgres::PostgresMessageIndex::new(self.postgres_db().await?),
            )),
            _ => self.engine_index(Role::SessionText).await,
        }
    }

    /// The general index the engine writes for searchable blocks.
    pub(crate) async fn general_index(&self) -> Result<Arc<dyn TextIndex>> {
        self.engine_index(Role::Text).await
    }

    /// A general index the engine writes, on the backend `role` names.
    async fn engine_index(&self, role: Role) -> Result<Arc<dyn TextIndex>> {
        match self.backend(role) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteTextIndex::new(
                self.sessions_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresTextIndex::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "tantivy")]
            Backend::Tantivy => Ok(Arc::new(self.tantivy_general().await?)),
            other => Err(unavailable(role, other)),
        }
    }

    /// Long-term records of each profile.
    pub(crate) async fn profile_records(&self) -> Result<Arc<dyn MemoryProfiles>> {
        match self.backend(Role::Records) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(self.sqlite_profiles()),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresProfiles::new(
                self.postgres_db().await?,
            ))),
            other => Err(unavailable(Role::Records, other)),
        }
    }

    /// Each profile's text index.
    pub(crate) async fn profile_text(&self) -> Result<Arc<dyn TextIndexes>> {
        match (self.backend(Role::ProfileText), self.backend(Role::Records)) {
            #[cfg(feature = "sqlite")]
            (Backend::Sqlite, Backend::Sqlite) => Ok(self.sqlite_profiles()),
            #[cfg(feature = "postgres")]
            (Backend::Postgres, _) => Ok(Arc::new(memory_postgres::PostgresTextIndexes::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "tantivy")]
            (Backend::Tantivy, _) => {
                let settings = self.tantivy_settings()?;
                Ok(Arc::clone(self.tantivy_profiles.get_or_init(|| {
                    // A profile's index is small: a purge rewrites its segments at once, and one
                    // indexing thread writes it (a deployment may hold many profiles open).
                    let options = tantivy_options(settings)
                        .erasure(memory_tantivy::Erasure::BeforeReturn)
                        .writer_threads(1);
                    let mut indexes =
                        memory_tantivy::TantivyTextIndexes::new(settings.path.join("profiles"))
                            .with_options(options.merge_threads(1))
                            .open_profiles(self.storage.open_profiles, self.profile_idle());
                    for (profile, language) in &settings.profile_languages {
                        indexes = indexes.with_profile_language(profile.clone(), *language);
                    }
                    Arc::new(indexes)
                })) as Arc<dyn TextIndexes>)
            }
            (Backend::Sqlite, _) => Err(ComposeError::NotAvailable {
                role: Role::ProfileText,
                backend: Backend::Sqlite,
                reason: "SQLite indexes long-term memory only beside SQLite records; pick the records' backend or a search engine for profile_text",
            }),
            (other, _) => Err(unavailable(Role::ProfileText, other)),
        }
    }

    /// Each profile's vectors.
    pub(crate) async fn profile_vectors(&self) -> Result<Arc<dyn VectorIndexes>> {
        match self.backend(Role::Vectors) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(self.sqlite_profiles()),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresVectorIndexes::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "lancedb")]
            Backend::Lancedb => Ok(self.lancedb_profiles()? as Arc<dyn VectorIndexes>),
            other => Err(unavailable(Role::Vectors, other)),
        }
    }

    /// Loads the profile's vectors and waits for their approximate graphs where the backend
    /// keeps them in process (SQLite); nothing to do for a server-side index.
    pub(crate) async fn prepare_vectors(&self, profile: &str) -> Result<()> {
        match self.backend(Role::Vectors) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(self.sqlite_profiles().prepare_vectors(profile).await?),
            _ => Ok(()),
        }
    }

    /// The job queue.
    pub(crate) async fn jobs(&self) -> Result<Arc<dyn JobQueue>> {
        match self.backend(Role::Jobs) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteJobQueue::new(
                self.jobs_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresJobQueue::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "redis")]
            Backend::Redis => Ok(Arc::new(memory_redis::RedisJobQueue::new(
                self.redis_db().await?,
            ))),
            other => Err(unavailable(Role::Jobs, other)),
        }
    }

    /// The long-term tier's key-value store (its index outbox).
    pub(crate) async fn long_term_key_value(&self) -> Result<Arc<dyn KeyValueStore>> {
        match self.backend(Role::Kv) {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Arc::new(memory_sqlite::SqliteKeyValueStore::new(
                self.jobs_db().await?,
            ))),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Arc::new(memory_postgres::PostgresKeyValueStore::new(
                self.postgres_db().await?,
            ))),
            #[cfg(feature = "redis")]
            Backend::Redis => Ok(Arc::new(memory_redis::RedisKeyValueStore::new(
                self.redis_db().await?,
            ))),
            other => Err(unavailable(Role::Kv, other)),
        }
    }

    /// Whole artefacts (exports, backups): a directory, or an S3-compatible bucket.
    pub(crate) async fn blob_store(&self) -> Result<Arc<dyn BlobStore>> {
        match self.backend(Role::Blobs) {
            #[cfg(feature = "fs")]
            Backend::Fs => Ok(Arc::new(memory_fs::FsBlobStore::new(&self.storage.fs.path))),
            #[cfg(feature = "s3")]
            Backend::S3 => Ok(Arc::new(memory_s3::S3BlobStore::new(
                self.s3_bucket().await?,
            ))),
            other => Err(unavailable(Role::Blobs, other)),
        }
    }

    /// The blobs of another bucket (an `s3://bucket/key` location), reached like
    /// `[storage.s3]` (endpoint, region, credentials) when that section exists, else through
    /// AWS's defaults; keys are not prefixed.
    #[cfg(feature = "s3")]
    pub(crate) async fn bucket_blobs(&self, bucket: &str) -> Result<Arc<dyn BlobStore>> {
        let mut config = memory_s3::S3Config::new(bucket);
        if let Some(settings) = &self.storage.s3 {
            config = config
                .region(&settings.region)
                .conditional_writes(settings.conditional_writes);
            if let Some(endpoint) = &settings.endpoint {
                config = config.endpoint(endpoint);
            }
            config = config.credentials(credentials(settings));
        }
        Ok(Arc::new(memory_s3::S3BlobStore::new(
            memory_s3::S3Bucket::connect(config).await?,
        )))
    }

    /// `[storage.tantivy]`.
    #[cfg(feature = "tantivy")]
    fn tantivy_settings(&self) -> Result<&memory_config::TantivySettings> {
        self.storage.tantivy.as_ref().ok_or(ComposeError::Invalid(
            "a role uses tantivy but [storage.tantivy] is missing".into(),
        ))
    }

    /// The general Tantivy index (searchable blocks, and session messages when
    /// `session_text` is Tantivy), opened once: it holds the
    /// index's writer lock while the deployment is open, unless `[storage.tantivy] shared`.
    #[cfg(feature = "tantivy")]
    async fn tantivy_general(&self) -> Result<memory_tantivy::TantivyTextIndex> {
        let settings = self.tantivy_settings()?;
        let path = settings.path.join("general");
        // The general index holds every session's messages: deleting one session must not
        // wait for a rewrite of segments that may hold millions of documents.
        let options = tantivy_options(settings).erasure(memory_tantivy::Erasure::InBackground);
        let index = self
            .tantivy_general
            .get_or_try_init(|| async move {
                let opened = tokio::task::spawn_blocking(move || {
                    memory_tantivy::TantivyTextIndex::open_with(path, options)
                })
                .await
                .map_err(|e| ComposeError::Invalid(format!("opening the tantivy index: {e}")))?;
                Ok::<_, ComposeError>(opened.map_err(with_shared_hint)?)
            })
            .await?;
        Ok(index.clone())
    }

    /// The bucket of `[storage.s3]`, connected once. Credentials: the key variables it
    /// names when they are set, else its named profile, else the SDK's default chain.
    #[cfg(feature = "s3")]
    async fn s3_bucket(&self) -> Result<memory_s3::S3Bucket> {
        let settings = self.storage.s3.clone().ok_or(ComposeError::Invalid(
            "blobs = \"s3\" but [storage.s3] is missing".into(),
        ))?;
        let bucket = self
            .s3_bucket
            .get_or_try_init(|| async move {
                let mut config = memory_s3::S3Config::new(&settings.bucket)
                    .prefix(&settings.prefix)
                    .region(&settings.region)
                    .conditional_writes(settings.conditional_writes);
                if let Some(endpoint) = &settings.endpoint {
                    config = config.endpoint(endpoint);
                }
                config = config.credentials(credentials(&settings));
                Ok::<_, ComposeError>(memory_s3::S3Bucket::connect(config).await?)
            })
            .await?;
        Ok(bucket.clone())
    }

    /// The PostgreSQL database of `[storage.postgres]`, connected once; the URL comes from
    /// the environment variable the settings name.
    #[cfg(feature = "postgres")]
    async fn postgres_db(&self) -> Result<memory_postgres::PostgresDatabase> {
        let settings = self.storage.postgres.clone().ok_or(ComposeError::Invalid(
            "a role uses postgres but [storage.postgres] is missing".into(),
        ))?;
        let db = self
            .postgres_db
            .get_or_try_init(|| async move {
                let url = std::env::var(&settings.url_env).map_err(|_| {
                    ComposeError::Invalid(format!(
                        "[storage] uses postgres: set {} to the server's URL",
                        settings.url_env
                    ))
                })?;
                let config = memory_postgres::PostgresConfig::new(url)
                    .schema(settings.schema)
                    .max_connections(settings.max_connections);
                Ok::<_, ComposeError>(memory_postgres::PostgresDatabase::connect(config).await?)
            })
            .await?;
        Ok(db.clone())
    }

    /// Sentences about opened backends whose acknowledged writes a crash can lose (Redis
    /// without `appendfsync always`, or one that does not say).
    pub(crate) fn durability_warnings(&self) -> Vec<String> {
        #[allow(unused_mut)]
        let mut warnings = Vec::new();
        #[cfg(feature = "redis")]
        if let Some(db) = self.redis_db.get() {
            use memory_redis::Durability;
            let warning = match db.durability() {
                Durability::EveryWrite => None,
                Durability::AboutASecond => Some(
                    "Redis runs with `appendfsync everysec`: a Redis crash can lose about a second of acknowledged writes",
                ),
                Durability::Snapshots => Some(
                    "Redis runs without an append-only file: a Redis crash loses the acknowledged writes since its last snapshot",
                ),
                Durability::Unknown => Some(
                    "Redis does not say how it persists writes (CONFIG is disabled): only `appendfsync always` keeps every acknowledged write",
                ),
            };
            warnings.extend(warning.map(str::to_owned));
        }
        warnings
    }

    /// The Redis deployment of `[storage.redis]`, connected once; the URL comes from the
    /// environment variable the settings name.
    #[cfg(feature = "redis")]
    async fn redis_db(&self) -> Result<memory_redis::RedisDatabase> {
        let settings = self.storage.redis.clone().ok_or(ComposeError::Invalid(
            "a role uses redis but [storage.redis] is missing".into(),
        ))?;
        let db = self
            .redis_db
            .get_or_try_init(|| async move {
                let url = std::env::var(&settings.url_env).map_err(|_| {
                    ComposeError::Invalid(format!(
                        "[storage] uses redis: set {} to the server's URL",
                        settings.url_env
                    ))
                })?;
                let config = memory_redis::RedisConfig::new(url).key_prefix(settings.key_prefix);
                Ok::<_, ComposeError>(memory_redis::RedisDatabase::connect(config).await?)
            })
            .await?;
        Ok(db.clone())
    }

    /// Closes what was opened.
    pub(crate) async fn close(&self) {
        #[cfg(feature = "postgres")]
        if let Some(db) = self.postgres_db.get() {
            db.close().await;
        }
        #[cfg(feature = "sqlite")]
        for db in [self.sessions_db.get(), self.jobs_db.get()]
            .into_iter()
            .flatten()
        {
            db.close().await;
        }
    }
}

/// Each profile's LanceDB database under `[storage.lancedb]`'s location, opened once.
#[cfg(feature = "lancedb")]
impl Stores {
    fn lancedb_profiles(&self) -> Result<Arc<memory_lancedb::LanceVectorIndexes>> {
        if let Some(open) = self.lancedb_profiles.get() {
            return Ok(Arc::clone(open));
        }
        let settings = self.storage.lancedb.as_ref().ok_or(ComposeError::Invalid(
            "vectors = \"lancedb\" but [storage.lancedb] is missing".into(),
        ))?;
        let mut options = memory_lancedb::LanceOptions::default()
            .index_threshold(settings.index_threshold)
            .field_index_threshold(settings.field_index_threshold)
            .exact_filter_limit(settings.exact_filter_limit)
            .nprobes(settings.nprobes)
            .refine_factor(settings.refine_factor);
        let root = match &settings.location {
            memory_config::LancedbLocation::Directory(path) => {
                path.to_str().map(str::to_owned).ok_or_else(|| {
                    ComposeError::Invalid(format!("{} is not a UTF-8 path", path.display()))
                })?
            }
            memory_config::LancedbLocation::S3 { prefix } => {
                let s3 = self.storage.s3.as_ref().ok_or(ComposeError::Invalid(
                    "[storage.lancedb] location = \"s3\" but [storage.s3] is missing".into(),
                ))?;
                for (key, value) in lance_s3_options(s3)? {
                    options = options.storage_option(key, value);
                }
                format!("s3://{}/{}{prefix}", s3.bucket, s3.prefix)
            }
        };
        let open = Arc::new(memory_lancedb::LanceVectorIndexes::new(root, options));
        Ok(Arc::clone(self.lancedb_profiles.get_or_init(|| open)))
    }
}

/// The object-store options that reach `[storage.s3]`'s bucket from LanceDB: its endpoint
/// and region, and the keys from its variables (else the default AWS chain). A named profile
/// and servers without conditional writes are refused: the first is not read by LanceDB's
/// store, and without the second two first writers could mix models in a table.
#[cfg(feature = "lancedb")]
fn lance_s3_options(settings: &memory_config::S3Settings) -> Result<Vec<(String, String)>> {
    if !settings.conditional_writes {
        return Err(ComposeError::NotAvailable {
            role: Role::Vectors,
            backend: Backend::Lancedb,
            reason: "LanceDB in S3 needs conditional writes ([storage.s3] conditional_writes = \
                     false): they decide a table's embedding model atomically",
        });
    }
    let mut options = vec![("aws_region".to_owned(), settings.region.clone())];
    if let Some(endpoint) = &settings.endpoint {
        options.push(("aws_endpoint".into(), endpoint.clone()));
        if endpoint.starts_with("http://") {
            options.push(("allow_http".into(), "true".into()));
        }
    }
    let keys = (
        std::env::var(&settings.access_key_env),
        std::env::var(&settings.secret_key_env),
    );
    match (keys, &settings.profile) {
        ((Ok(access_key_id), Ok(secret_access_key)), _) => {
            options.push(("aws_access_key_id".into(), access_key_id));
            options.push(("aws_secret_access_key".into(), secret_access_key));
        }
        (_, Some(_)) => {
            return Err(ComposeError::NotAvailable {
                role: Role::Vectors,
                backend: Backend::Lancedb,
                reason: "LanceDB in S3 takes its keys from [storage.s3]'s key variables or the \
                         default AWS chain, not from a named profile: set access_key_env and \
                         secret_key_env's variables",
            });
        }
        _ => {}
    }
    Ok(options)
}

/// The credentials `[storage.s3]` names: its key variables when they are set, else its
/// named profile, else the SDK's default chain.
#[cfg(feature = "s3")]
fn credentials(settings: &memory_config::S3Settings) -> memory_s3::Credentials {
    let keys = (
        std::env::var(&settings.access_key_env),
        std::env::var(&settings.secret_key_env),
    );
    match (keys, &settings.profile) {
        ((Ok(access_key_id), Ok(secret_access_key)), _) => memory_s3::Credentials::Static {
            access_key_id,
            secret_access_key,
        },
        (_, Some(profile)) => memory_s3::Credentials::Profile(profile.clone()),
        _ => memory_s3::Credentials::Default,
    }
}

/// The skill store of a block, by label.
pub(crate) type SkillStores = Box<dyn Fn(&str) -> Arc<dyn SkillStore> + Send + Sync>;

#[cfg(feature = "sqlite")]
impl Stores {
    async fn sessions_db(&self) -> Result<memory_sqlite::SqliteDatabase> {
        let settings = &self.storage.sqlite;
        let config = memory_sqlite::SqliteConfig::new(&settings.path)
            .busy_timeout(std::time::Duration::from_millis(settings.busy_timeout_ms))
            .secure_delete(settings.secure_delete)
            .group_commit(settings.group_commit);
        let db = self
            .sessions_db
            .get_or_try_init(|| async move { memory_sqlite::SqliteDatabase::open(config).await })
            .await?;
        Ok(db.clone())
    }

    /// The job queue and the long-term outbox: `<profiles>/jobs.sqlite` (secure delete: job
    /// checkpoints hold conversation text that a purge must be able to erase).
    async fn jobs_db(&self) -> Result<memory_sqlite::SqliteDatabase> {
        let path = self.storage.sqlite.profiles.join("jobs.sqlite");
        let busy_timeout = std::time::Duration::from_millis(self.storage.sqlite.busy_timeout_ms);
        let db = self
            .jobs_db
            .get_or_try_init(|| async move {
                memory_sqlite::SqliteDatabase::open(
                    memory_sqlite::SqliteConfig::new(path)
                        .secure_delete(true)
                        .busy_timeout(busy_timeout),
                )
                .await
            })
            .await?;
        Ok(db.clone())
    }

    fn sqlite_profiles(&self) -> Arc<memory_sqlite::SqliteProfiles> {
        Arc::clone(self.profiles.get_or_init(|| {
            let settings = &self.storage.sqlite;
            let approximate = (!settings.exact_vectors).then(|| memory_sqlite::ApproximateSearch {
                from_rows: usize::try_from(settings.approximate_from_rows).unwrap_or(usize::MAX),
                ..memory_sqlite::ApproximateSearch::default()
            });
            let profiles = memory_sqlite::SqliteProfiles::new(&settings.profiles)
                .busy_timeout(std::time::Duration::from_millis(settings.busy_timeout_ms))
                .open_profiles(self.storage.open_profiles, self.profile_idle())
                .approximate(approximate)
                .page_size(settings.profile_page_size);
            // FTS5 indexes a profile's text when it is the profiles' text index, and while a
            // profile is small on the embedded default.
            Arc::new(if self.small_profile_text_documents() > 0 {
                profiles.own_text_index_until_moved()
            } else {
                profiles.own_text_index(self.backend(Role::ProfileText) == Backend::Sqlite)
            })
        }))
    }

    /// The size at which a profile's text moves from its own SQLite file to Tantivy: only
    /// on the embedded default (records on SQLite, `profile_text` not named, so Tantivy),
    /// with an English-speaking deployment; 0 otherwise.
    fn small_profile_text_documents(&self) -> u64 {
        let defaulted = self.storage.profile_text_defaulted
            && self.backend(Role::ProfileText) == Backend::Tantivy
            && self.backend(Role::Records) == Backend::Sqlite;
        match &self.storage.tantivy {
            Some(tantivy)
                if defaulted && tantivy.language == memory_core::TextLanguage::English =>
            {
                tantivy.profiles_from_documents
            }
            _ => 0,
        }
    }

    /// Where small profiles keep their text on the embedded default (see
    /// [`memory_engine::long_term::SmallProfileText`]); `None` elsewhere.
    pub(crate) fn small_profile_text(&self) -> Option<memory_engine::long_term::SmallProfileText> {
        let documents = self.small_profile_text_documents();
        let tantivy = self.storage.tantivy.as_ref().filter(|_| documents > 0)?;
        Some(memory_engine::long_term::SmallProfileText {
            index: self.sqlite_profiles(),
            documents,
            always_large: tantivy
                .profile_languages
                .iter()
                .filter(|(_, language)| **language != memory_core::TextLanguage::English)
                .map(|(profile, _)| profile.clone())
                .collect(),
        })
    }
}

/// A Tantivy index another process holds: the error says which setting shares it.
#[cfg(feature = "tantivy")]
fn with_shared_hint(error: memory_core::MemoryError) -> memory_core::MemoryError {
    match error {
        memory_core::MemoryError::Conflict { message } => memory_core::MemoryError::Conflict {
            message: format!(
                "{message}; to let several processes open it, set `[storage.tantivy] shared = \
                 true` in every process's memory.toml"
            ),
        },
        other => other,
    }
}

/// The index options `[storage.tantivy]` sets (language, commit interval, sharing).
#[cfg(feature = "tantivy")]
fn tantivy_options(settings: &memory_config::TantivySettings) -> memory_tantivy::TantivyOptions {
    memory_tantivy::TantivyOptions::default()
        .language(settings.language)
        .commit_interval(std::time::Duration::from_millis(
            settings.commit_interval_ms,
        ))
        .shared(settings.shared)
}
