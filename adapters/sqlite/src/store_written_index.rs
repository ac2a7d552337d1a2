//! The text indexes that a store writes in its own transactions (FTS5 tables kept by
//! triggers beside the rows): searched through the [`TextIndex`] port, never written
//! through it.

use memory_core::MemoryError;
use memory_core::ports::{TextFilter, TextIndexCapabilities};

use crate::error::BACKEND;
use crate::text_index::FTS5_CAPABILITIES;

/// The capabilities of an index its store writes.
pub(crate) const STORE_WRITTEN: TextIndexCapabilities = TextIndexCapabilities {
    written_by_store: true,
    language: memory_core::TextLanguage::English,
    ..FTS5_CAPABILITIES
};

/// The error of a write to an index its store writes.
pub(crate) fn written_by_store(operation: &'static str) -> MemoryError {
    MemoryError::NotSupported {
        operation,
        backend: BACKEND,
    }
}

/// An unknown namespace of a store-written index.
pub(crate) fn unknown_namespace(namespace: &str, known: &[&str]) -> MemoryError {
    MemoryError::invalid(format!(
        "this SQLite index is written by its store and serves the namespaces {known:?}, not {namespace:?}"
    ))
}

/// True when the filter asks for a field these rows do not have (nothing can match).
pub(crate) fn needs_absent_field(filter: &TextFilter, has_kind_key: bool, has_time: bool) -> bool {
    (!has_kind_key && (filter.kind.is_some() || filter.key.is_some()))
        || (!has_time && (filter.from.is_some() || filter.to.is_some()))
}
