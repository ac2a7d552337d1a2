//! Tenants: the name that keys a tenant's own slice of every backend, and the `[storage]`
//! section of that slice.

use std::fmt;
use std::path::{Path, PathBuf};

use memory_core::{MemoryError, Result};

use crate::StorageConfig;

/// The longest tenant name. It becomes part of a PostgreSQL schema name (at most 63 bytes),
/// a directory name and a key prefix.
pub const MAX_TENANT_NAME: usize = 32;

/// A tenant's name: 1-32 lowercase ASCII letters, digits or `_`, starting with a letter, so
/// that it is safe as a directory, a schema-name suffix and a key prefix.
///
/// ```
/// use memory_config::TenantName;
/// assert_eq!(TenantName::new("acme_eu").unwrap().as_str(), "acme_eu");
/// assert!(TenantName::new("../etc").is_err());
/// assert!(TenantName::new("Acme").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TenantName(String);

impl TenantName {
    /// Validates a tenant name.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let mut chars = name.chars();
        let ok = name.len() <= MAX_TENANT_NAME
            && chars.next().is_some_and(|c| c.is_ascii_lowercase())
            && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if ok {
            Ok(Self(name))
        } else {
            Err(MemoryError::invalid(format!(
                "tenant name {name:?} must be 1-{MAX_TENANT_NAME} lowercase letters, digits or '_', starting with a letter"
            )))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `path` moved into `tenants/<tenant>/` beside it: `data/memory.db` becomes
/// `data/tenants/acme/memory.db`.
fn tenant_path(path: &Path, tenant: &TenantName) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new(""));
    let mut out = parent.join("tenants").join(tenant.as_str());
    if let Some(name) = path.file_name() {
        out.push(name);
    }
    out
}

impl StorageConfig {
    /// The same deployment narrowed to one tenant: every backend keeps the tenant's data
    /// apart from every other tenant's, so no query of one tenant can reach another's rows.
    /// Embedded files and directories move under `tenants/<tenant>/`, the PostgreSQL schema
    /// gains the suffix `_<tenant>`, the Redis key prefix gains `t:<tenant>:` and the S3
    /// prefix (and LanceDB's in S3, which lives under it) gains `tenants/<tenant>/`.
    ///
    /// ```
    /// use memory_config::{StorageConfig, TenantName};
    /// let base = StorageConfig::embedded(std::path::Path::new("data"));
    /// let acme = base.for_tenant(&TenantName::new("acme").unwrap());
    /// assert_eq!(acme.sqlite.path, std::path::Path::new("data/tenants/acme/memory.db"));
    /// ```
    pub fn for_tenant(&self, tenant: &TenantName) -> StorageConfig {
        let mut out = self.clone();
        out.sqlite.path = tenant_path(&self.sqlite.path, tenant);
        out.sqlite.profiles = tenant_path(&self.sqlite.profiles, tenant);
        out.fs.path = tenant_path(&self.fs.path, tenant);
        if let Some(postgres) = &mut out.postgres {
            postgres.schema = format!("{}_{tenant}", postgres.schema);
        }
        if let Some(redis) = &mut out.redis {
            redis.key_prefix = format!("{}t:{tenant}:", redis.key_prefix);
        }
        if let Some(s3) = &mut out.s3 {
            s3.prefix = format!("{}tenants/{tenant}/", s3.prefix);
        }
        if let Some(tantivy) = &mut out.tantivy {
            tantivy.path = tenant_path(&tantivy.path, tenant);
        }
        if let Some(crate::LancedbSettings {
            location: crate::LancedbLocation::Directory(path),
            ..
        }) = &mut out.lancedb
        {
            *path = tenant_path(path, tenant);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_backend_of_a_tenant_is_apart_from_the_base_and_from_other_tenants() {
        let dir = Path::new("/srv/memory");
        let base = crate::MemoryConfig::parse(&crate::all_on_postgres("memory"), dir)
            .unwrap()
            .storage(dir);
        let acme = base.for_tenant(&TenantName::new("acme").unwrap());
        let bolt = base.for_tenant(&TenantName::new("bolt").unwrap());
        assert_eq!(acme.postgres.as_ref().unwrap().schema, "memory_acme");
        assert_eq!(bolt.postgres.as_ref().unwrap().schema, "memory_bolt");
        assert_eq!(
            acme.sqlite.profiles,
            Path::new("/srv/memory/tenants/acme/profiles")
        );
        assert_ne!(acme.sqlite.path, bolt.sqlite.path);
        assert_ne!(acme.fs.path, base.fs.path);
    }

    #[test]
    fn names_that_are_not_plain_identifiers_are_refused() {
        for bad in ["", "a-b", "1abc", "a/b", "A", &"a".repeat(33)] {
            assert!(TenantName::new(bad).is_err(), "{bad:?}");
        }
        assert!(TenantName::new("a".repeat(32)).is_ok());
    }
}
