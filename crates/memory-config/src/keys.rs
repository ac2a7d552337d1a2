//! The API keys file of `memory serve`: which key opens which tenant, at what rate. Keys are
//! stored as their SHA-256 digests, never in the clear.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::model::Checker;
use crate::{ConfigError, TenantName};

/// One API key: the tenant it opens and the SHA-256 digest of the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyEntry {
    /// The tenant whose sessions and profiles the key reaches.
    pub tenant: TenantName,
    /// SHA-256 of the key's bytes.
    pub sha256: [u8; 32],
    /// A name for logs and metrics (default: the tenant's).
    pub label: String,
    /// Requests per second the key may make, sustained (default: the server's setting).
    pub requests_per_second: Option<u32>,
    /// Requests the key may make at once above the sustained rate (default: the rate).
    pub burst: Option<u32>,
    /// The profile the tenant's new sessions are bound to (the tenant's `[sessions]
    /// profile`); every key of one tenant that names one names the same.
    pub profile: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKeys {
    #[serde(default)]
    keys: Vec<RawKey>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    tenant: Spanned<String>,
    sha256: Spanned<String>,
    label: Option<String>,
    requests_per_second: Option<Spanned<u32>>,
    burst: Option<Spanned<u32>>,
    profile: Option<Spanned<String>>,
}

/// Reads a keys file:
///
/// ```toml
/// [[keys]]
/// tenant = "acme"
/// sha256 = "<64 hex digits: the SHA-256 of the key>"
/// label = "acme-prod"          # optional
/// profile = "acme"             # optional: the tenant's new sessions are bound to it
/// requests_per_second = 50     # optional
/// burst = 100                  # optional
/// ```
pub fn load_api_keys(path: &Path) -> Result<Vec<ApiKeyEntry>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse_api_keys(&text, path)
}

/// Parses a keys file's text (`path` names it in errors).
pub fn parse_api_keys(text: &str, path: &Path) -> Result<Vec<ApiKeyEntry>, ConfigError> {
    let raw: RawKeys = toml::from_str(text).map_err(|e| ConfigError::Syntax {
        path: path.to_owned(),
        message: e.to_string().trim_end().replace('\n', " | "),
    })?;
    let check = Checker { path, text };
    let mut out: Vec<ApiKeyEntry> = Vec::with_capacity(raw.keys.len());
    for (i, key) in raw.keys.into_iter().enumerate() {
        let tenant = TenantName::new(key.tenant.get_ref().clone()).map_err(|e| {
            check.error(
                key.tenant.span(),
                format!("keys[{i}].tenant"),
                e.to_string(),
            )
        })?;
        let sha256 = decode_digest(key.sha256.get_ref()).ok_or_else(|| {
            check.error(
                key.sha256.span(),
                format!("keys[{i}].sha256"),
                "expected 64 hex digits (the SHA-256 of the key; `memory keys new` prints it)",
            )
        })?;
        if out.iter().any(|other| other.sha256 == sha256) {
            return Err(check.error(
                key.sha256.span(),
                format!("keys[{i}].sha256"),
                "this key is listed twice",
            ));
        }
        for (value, field) in [
            (&key.requests_per_second, "requests_per_second"),
            (&key.burst, "burst"),
        ] {
            if let Some(v) = value
                && *v.get_ref() == 0
            {
                return Err(check.error(
                    v.span(),
                    format!("keys[{i}].{field}"),
                    "must be at least 1",
                ));
            }
        }
        if let Some(profile) = &key.profile {
            memory_core::validate_profile_name(profile.get_ref()).map_err(|e| {
                check.error(profile.span(), format!("keys[{i}].profile"), e.to_string())
            })?;
            let clash = out.iter().find(|other| {
                other.tenant == tenant
                    && other
                        .profile
                        .as_ref()
                        .is_some_and(|p| p != profile.get_ref())
            });
            if let Some(other) = clash {
                return Err(check.error(
                    profile.span(),
                    format!("keys[{i}].profile"),
                    format!(
                        "tenant {tenant}'s sessions are bound to {:?} by another key: one profile per tenant",
                        other.profile.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        out.push(ApiKeyEntry {
            profile: key.profile.map(Spanned::into_inner),
            label: key.label.unwrap_or_else(|| tenant.to_string()),
            tenant,
            sha256,
            requests_per_second: key.requests_per_second.map(Spanned::into_inner),
            burst: key.burst.map(Spanned::into_inner),
        });
    }
    Ok(out)
}

fn decode_digest(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *slot = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn a_key_may_bind_its_tenants_sessions_to_one_profile() {
        let other = "a".repeat(64);
        let text = format!(
            "[[keys]]\ntenant = \"acme\"\nsha256 = \"{DIGEST}\"\nprofile = \"acme-agent\"\n\n\
             [[keys]]\ntenant = \"acme\"\nsha256 = \"{other}\"\n"
        );
        let keys = parse_api_keys(&text, Path::new("keys.toml")).unwrap();
        assert_eq!(keys[0].profile.as_deref(), Some("acme-agent"));
        assert_eq!(keys[1].profile, None);
        let clash = text.replace(
            &format!("sha256 = \"{other}\"\n"),
            &format!("sha256 = \"{other}\"\nprofile = \"other\"\n"),
        );
        let e = parse_api_keys(&clash, Path::new("keys.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("keys[1].profile") && e.contains("one profile per tenant"),
            "{e}"
        );
    }

    #[test]
    fn a_keys_file_is_read_with_its_defaults() {
        let text = format!(
            "[[keys]]\ntenant = \"acme\"\nsha256 = \"{DIGEST}\"\nrequests_per_second = 5\n"
        );
        let keys = parse_api_keys(&text, Path::new("keys.toml")).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].tenant.as_str(), "acme");
        assert_eq!(keys[0].label, "acme");
        assert_eq!(keys[0].sha256[0], 0x9f);
        assert_eq!(keys[0].requests_per_second, Some(5));
        assert_eq!(keys[0].burst, None);
    }

    #[test]
    fn bad_entries_name_their_line_and_key() {
        let cases = [
            (
                format!("[[keys]]\ntenant = \"Acme\"\nsha256 = \"{DIGEST}\"\n"),
                "keys[0].tenant",
            ),
            (
                "[[keys]]\ntenant = \"acme\"\nsha256 = \"abc\"\n".to_owned(),
                "keys[0].sha256",
            ),
            (
                format!(
                    "[[keys]]\ntenant = \"a\"\nsha256 = \"{DIGEST}\"\n[[keys]]\ntenant = \"b\"\nsha256 = \"{DIGEST}\"\n"
                ),
                "keys[1].sha256",
            ),
            (
                format!("[[keys]]\ntenant = \"a\"\nsha256 = \"{DIGEST}\"\nburst = 0\n"),
                "keys[0].burst",
            ),
        ];
        for (text, key) in cases {
            let error = parse_api_keys(&text, Path::new("keys.toml")).unwrap_err();
            assert!(error.to_string().contains(key), "{error} should name {key}");
        }
        assert!(parse_api_keys("[[keys]]\nkey = \"plain\"\n", Path::new("k")).is_err());
    }
}
