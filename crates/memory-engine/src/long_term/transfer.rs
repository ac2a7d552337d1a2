//! Versioned JSONL export and import of a whole profile: its own extraction settings, raw
//! messages, then memories with their supersession chains, provenance and forget markers,
//! and optionally the vectors.

use memory_core::ports::{MemoryFilter, MemoryRecord, RawMessage, VectorRecord};
use memory_core::size::check_item_size;
use memory_core::{MemoryError, Result};
use serde::{Deserialize, Serialize};

use super::core::Core;

/// The format name in the first line.
pub const EXPORT_FORMAT: &str = "agent-memory-profile";
/// The current version (2 added vector lines, 3 the settings line; older files still import).
pub const EXPORT_VERSION: u32 = 3;

/// One line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportLine {
    /// The first line.
    Header {
        /// [`EXPORT_FORMAT`].
        format: String,
        /// [`EXPORT_VERSION`].
        version: u32,
    },
    /// The profile's own extraction settings (after the header; only when it has some).
    Settings {
        /// The settings.
        settings: super::ProfileSettings,
    },
    /// A raw message.
    Raw {
        /// The message.
        raw: RawMessage,
    },
    /// A memory (any state).
    Memory {
        /// The memory.
        memory: MemoryRecord,
    },
    /// A vector, with the model that made it.
    Vector {
        /// [`super::RAW_NAMESPACE`] or [`super::MEMORY_NAMESPACE`].
        namespace: String,
        /// The record.
        vector: VectorRecord,
    },
}

/// What an import stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Raw messages stored.
    pub raw_new: u64,
    /// Raw messages already present.
    pub raw_known: u64,
    /// Memories stored.
    pub memories_new: u64,
    /// Memories already present (same id).
    pub memories_known: u64,
    /// Current versions superseded by a newer one of the same key (the profile's or the
    /// export's), as a live write would.
    pub superseded: u64,
    /// Vectors stored.
    pub vectors: u64,
    /// Whether the export's settings became the profile's (it had none of its own; a
    /// profile's own settings are never replaced by an import).
    pub settings: bool,
}

const PAGE: usize = 500;

/// Where the next page of a profile export starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportCursor {
    /// In the raw messages (after this cursor).
    Raw(Option<String>),
    /// In the memories (after this cursor).
    Memories(Option<String>),
}

/// One page of a profile export.
#[derive(Debug, Clone)]
pub struct ProfileExportPage {
    /// JSON lines (without newlines).
    pub lines: Vec<String>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<ExportCursor>,
}

impl Core {
    /// Writes the profile as JSON lines to `sink`, header first; with `vectors`, each raw
    /// message and memory that has a vector is followed by it.
    pub(super) async fn export(
        &self,
        profile: &str,
        vectors: bool,
        sink: &mut (dyn FnMut(&str) -> Result<()> + Send),
    ) -> Result<()> {
        let mut cursor = None;
        loop {
            let page = self.export_page(profile, vectors, cursor).await?;
            for line in &page.lines {
                sink(line)?;
            }
            match page.next {
                Some(next) => cursor = Some(next),
                None => return Ok(()),
            }
        }
    }

    /// One page of the profile's export (the lines [`MemoryService::export`] writes): the
    /// header first (when `cursor` is `None`), then raw messages, then memories (superseded
    /// and forgotten ones too), a page of each at a time; with `vectors`, each followed by
    /// its vector. A caller that streams pages can pause between them.
    pub(super) async fn export_page(
        &self,
        profile: &str,
        vectors: bool,
        cursor: Option<ExportCursor>,
    ) -> Result<ProfileExportPage> {
        let store = self.backends.existing_store(profile).await?;
        let index = if vectors {
            Some(self.backends.vector_index(profile).await?)
        } else {
            None
        };
        let mut lines = Vec::new();
        let cursor = match cursor {
            Some(cursor) => cursor,
            None => {
                let header = ExportLine::Header {
                    format: EXPORT_FORMAT.into(),
                    version: EXPORT_VERSION,
                };
                lines.push(serde_json::to_string(&header)?);
                let settings = self.stored_settings(profile).await?;
                if !settings.is_empty() {
                    lines.push(serde_json::to_string(&ExportLine::Settings { settings })?);
                }
                ExportCursor::Raw(None)
            }
        };
        let (namespace, ids, next) = match cursor {
            ExportCursor::Raw(cursor) => {
                let (page, next) = store.raw_page(cursor, PAGE).await?;
                let ids: Vec<String> = page.iter().map(|r| r.id.clone()).collect();
                for raw in page {
                    lines.push(serde_json::to_string(&ExportLine::Raw { raw })?);
                }
                let next = Some(match next {
                    Some(next) => ExportCursor::Raw(Some(next)),
                    None => ExportCursor::Memories(None),
                });
                (super::RAW_NAMESPACE, ids, next)
            }
            ExportCursor::Memories(cursor) => {
                let all = MemoryFilter {
                    include_superseded: true,
                    include_forgotten: true,
                    ..MemoryFilter::default()
                };
                let page = store.list(&all, cursor, PAGE).await?;
                let ids: Vec<String> = page.memories.iter().map(|m| m.id.clone()).collect();
                for memory in page.memories {
                    lines.push(serde_json::to_string(&ExportLine::Memory { memory })?);
                }
                let next = page.next_cursor.map(|c| ExportCursor::Memories(Some(c)));
                (super::MEMORY_NAMESPACE, ids, next)
            }
        };
        if let Some(index) = &index {
            for vector in index.get(namespace, &ids).await? {
                lines.push(serde_json::to_string(&ExportLine::Vector {
                    namespace: namespace.to_owned(),
                    vector,
                })?);
            }
        }
        Ok(ProfileExportPage { lines, next })
    }

    /// Reads an export into a profile, by the rules of live writes: of the current versions of
    /// a key (the profile's and the export's) the newest stays current, and superseded ones
    /// keep no vector. Everything a write could refuse is checked before the first write
    /// (every line parses, one header, known vector namespaces, one model and dimension per
    /// namespace agreeing with the profile's), so bad input changes nothing. Known raw
    /// messages and memory ids are skipped: importing twice is a no-op, and an import cut
    /// short by a storage failure is completed by running it again.
    pub(super) async fn import(&self, profile: &str, lines: &[String]) -> Result<ImportReport> {
        let mut parsed = Vec::with_capacity(lines.len());
        for (i, line) in lines
            .iter()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let record: ExportLine = serde_json::from_str(line).map_err(|e| {
                MemoryError::invalid(format!("line {}: not an export record: {e}", i + 1))
            })?;
            parsed.push(record);
        }
        match parsed.first() {
            Some(ExportLine::Header { format, version })
                if format == EXPORT_FORMAT && *version <= EXPORT_VERSION => {}
            _ => {
                return Err(MemoryError::invalid(format!(
                    "line 1 must be the {EXPORT_FORMAT} header (version {EXPORT_VERSION})"
                )));
            }
        }
        // Everything a write could refuse is checked before the first write: the vector
        // namespaces, and one model and one dimension per namespace, agreeing with what the
        // profile holds already.
        let index = self.backends.vector_index(profile).await?;
        let mut shapes: std::collections::BTreeMap<String, (String, usize)> =
            std::collections::BTreeMap::new();
        for record in &parsed[1..] {
            let ExportLine::Vector { namespace, vector } = record else {
                continue;
            };
            if namespace != super::RAW_NAMESPACE && namespace != super::MEMORY_NAMESPACE {
                return Err(MemoryError::invalid(format!(
                    "unknown vector namespace {namespace:?}"
                )));
            }
            let shape = (vector.model.clone(), vector.vector.len());
            match shapes.get(namespace) {
                Some(seen) if *seen != shape => {
                    return Err(MemoryError::invalid(format!(
                        "vectors of {namespace:?} mix models or dimensions ({} × {} and {} × {}); nothing was imported",
                        seen.0, seen.1, shape.0, shape.1
                    )));
                }
                Some(_) => {}
                None => {
                    if let Some(model) = index.model(namespace).await?
                        && model != shape.0
                    {
                        return Err(MemoryError::invalid(format!(
                            "the export's {namespace:?} vectors come from {:?}, the profile's from {model:?}; nothing was imported (import without vectors, then `reembed`)",
                            shape.0
                        )));
                    }
                    shapes.insert(namespace.clone(), shape);
                }
            }
        }
        if parsed[1..]
            .iter()
            .any(|r| matches!(r, ExportLine::Header { .. }))
        {
            return Err(MemoryError::invalid("a second header"));
        }
        let mut settings = None;
        for record in &parsed[1..] {
            if let ExportLine::Settings { settings: s } = record {
                if settings.is_some() {
                    return Err(MemoryError::invalid("a second settings line"));
                }
                settings = Some(s.clone().validated()?);
            }
        }

        // The size rule, for every line before anything is written.
        for record in &parsed {
            match record {
                ExportLine::Raw { raw } => {
                    check_item_size(&format!("raw message {:?}", raw.id), raw.content.len())?;
                }
                ExportLine::Memory { memory } => {
                    check_item_size(&format!("memory {:?}", memory.id), memory.content.len())?;
                }
                ExportLine::Header { .. }
                | ExportLine::Settings { .. }
                | ExportLine::Vector { .. } => {}
            }
        }
        let store = self.backends.store(profile).await?;
        let mut report = ImportReport::default();
        let mut raw = Vec::new();
        let mut vectors: std::collections::BTreeMap<String, Vec<VectorRecord>> =
            std::collections::BTreeMap::new();
        let mut keys: Vec<(memory_core::ports::MemoryKind, String)> = Vec::new();
        for record in parsed.into_iter().skip(1) {
            match record {
                ExportLine::Header { .. } | ExportLine::Settings { .. } => {}
                ExportLine::Raw { raw: r } => raw.push(r),
                ExportLine::Vector { namespace, vector } => {
                    vectors.entry(namespace).or_default().push(vector);
                }
                ExportLine::Memory { memory } => {
                    if let Some(key) = &memory.key
                        && !keys.contains(&(memory.kind, key.clone()))
                    {
                        keys.push((memory.kind, key.clone()));
                    }
                    match store.insert_memory(memory).await {
                        Ok(()) => report.memories_new += 1,
                        Err(MemoryError::AlreadyExists { .. }) => report.memories_known += 1,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        let counts = store.insert_raw(raw).await?;
        report.raw_new = counts.inserted;
        report.raw_known = counts.existing;
        // The same rule as live writes: of the current versions of a key (the profile's and
        // the export's), the newest stays current.
        let retired = super::ingest::settle_keys(store.as_ref(), &keys).await?;
        report.superseded = retired.len() as u64;
        if let Some(memories) = vectors.get_mut(super::MEMORY_NAMESPACE) {
            memories.retain(|v| !retired.contains(&v.id));
        }
        if !retired.is_empty() {
            index.delete(super::MEMORY_NAMESPACE, &retired).await?;
        }
        for (namespace, records) in vectors {
            report.vectors += records.len() as u64;
            index.upsert(&namespace, records).await?;
        }
        if let Some(settings) = settings
            && !settings.is_empty()
            && self.stored_settings(profile).await?.is_empty()
        {
            self.set_profile_settings(profile, settings).await?;
            report.settings = true;
        }
        Ok(report)
    }
}
