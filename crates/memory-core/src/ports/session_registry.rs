use async_trait::async_trait;

use crate::{NewSession, Result, SessionId, SessionInfo, SessionPatch, SessionUsage, Timestamp};

/// Metadata and usage of every session.
///
/// # Contract
/// - `create` with an existing id is [`crate::MemoryError::AlreadyExists`]; `restore` with
///   one is `Ok(false)` (two importers of one file both succeed).
/// - `list` orders by `updated_at` descending, ties by most recently created first.
/// - `update`, `add_usage`, `touch` and `touch_and_name` set `updated_at` to `now`; on an
///   unknown id they are [`crate::MemoryError::NotFound`].
/// - `touch_and_name` names only a session without a name (`None`); a name once set, even
///   `""`, stays.
/// - The registry owns no messages: deleting a session's messages is the caller's job
///   (the engine's `SessionManager` does both).
#[async_trait]
pub trait SessionRegistry: Send + Sync {
    /// Creates a session with the given id.
    async fn create(
        &self,
        id: &SessionId,
        spec: &NewSession,
        now: Timestamp,
    ) -> Result<SessionInfo>;

    /// One session.
    async fn get(&self, id: &SessionId) -> Result<Option<SessionInfo>>;

    /// Sessions, most recently updated first; `limit` at most, skipping `offset`.
    async fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionInfo>>;

    /// Changes metadata.
    async fn update(
        &self,
        id: &SessionId,
        patch: &SessionPatch,
        now: Timestamp,
    ) -> Result<SessionInfo>;

    /// Adds to the usage counters.
    async fn add_usage(
        &self,
        id: &SessionId,
        usage: SessionUsage,
        now: Timestamp,
    ) -> Result<SessionInfo>;

    /// Marks the session as updated now.
    async fn touch(&self, id: &SessionId, now: Timestamp) -> Result<()>;

    /// Marks the session as updated now and, when it has no name yet and `name` is given,
    /// names it `name`: what an append does, in one write where the backend allows (the
    /// default reads the record between a touch and an update, so a name set by another
    /// caller in between can be overwritten; every adapter in this workspace overrides it).
    async fn touch_and_name(
        &self,
        id: &SessionId,
        now: Timestamp,
        name: Option<String>,
    ) -> Result<()> {
        self.touch(id, now).await?;
        let Some(name) = name else {
            return Ok(());
        };
        let unnamed = self.get(id).await?.is_some_and(|info| info.name.is_none());
        if unnamed {
            let patch = SessionPatch {
                name: Some(name),
                ..SessionPatch::default()
            };
            self.update(id, &patch, now).await?;
        }
        Ok(())
    }

    /// Deletes the record; true if it existed.
    async fn delete(&self, id: &SessionId) -> Result<bool>;

    /// Inserts a record exactly as given (an import: times, usage, source and end reason
    /// kept); false, and nothing changed, when a session with its id exists already.
    async fn restore(&self, info: &SessionInfo) -> Result<bool>;
}
