//! User metadata: a flat JSON object a builder attaches to a memory (who, where, which
//! project), bounded in size, kept and exported with the memory.
//!
//! A value is a string, a number, a boolean or a list of strings: no nesting and no `null`,
//! so that every backend can store and compare it the same way. Anything else is refused
//! with an error naming the key, before anything is written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{MemoryError, Result};

/// Keys on one memory, at most.
pub const MAX_METADATA_KEYS: usize = 32;
/// Characters in a key, at most (`A-Z a-z 0-9 _ - .`).
pub const MAX_METADATA_KEY_CHARS: usize = 64;
/// Strings in one list value, at most.
pub const MAX_METADATA_LIST_ITEMS: usize = 64;
/// Bytes of the whole object as compact JSON, at most.
pub const MAX_METADATA_BYTES: usize = 8 * 1024;

/// One metadata value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MetadataValue {
    /// A string.
    String(String),
    /// A number, kept as written (an integer stays exact).
    Number(serde_json::Number),
    /// A boolean.
    Bool(bool),
    /// A list of strings (a value matches `in` and equality filters by any of its items).
    Strings(Vec<String>),
}

impl MetadataValue {
    /// The value of `json`, or why it cannot be one (`key` names it in the message).
    fn from_json(key: &str, json: Value) -> Result<Self> {
        let refuse = |what: &str| {
            MemoryError::invalid(format!(
                "metadata {key:?}: a value is a string, a number, a boolean or a list of \
                 strings, not {what}"
            ))
        };
        let text = |s: String| {
            if s.contains('\0') {
                Err(MemoryError::invalid(format!(
                    "metadata {key:?}: a string cannot hold NUL (U+0000), which not every \
                     backend can store"
                )))
            } else {
                Ok(s)
            }
        };
        Ok(match json {
            Value::String(s) => Self::String(text(s)?),
            Value::Number(n) => Self::Number(n),
            Value::Bool(b) => Self::Bool(b),
            Value::Null => return Err(refuse("null (leave the key out instead)")),
            Value::Object(_) => return Err(refuse("an object (metadata is flat)")),
            Value::Array(items) => Self::Strings(
                items
                    .into_iter()
                    .map(|item| match item {
                        Value::String(s) => text(s),
                        _ => Err(refuse("a list holding anything but strings")),
                    })
                    .collect::<Result<_>>()?,
            ),
        })
    }
}

/// A memory's user metadata: flat, bounded ([`MAX_METADATA_KEYS`], [`MAX_METADATA_BYTES`],
/// ...), ordered by key. Deserializing checks every bound, so a `Metadata` is always valid.
///
/// ```
/// use memory_core::Metadata;
/// let ok: Metadata = serde_json::from_str(r#"{"project": "atlas", "priority": 2, "tags": ["a", "b"]}"#).unwrap();
/// assert_eq!(ok.len(), 3);
/// let nested = serde_json::from_str::<Metadata>(r#"{"owner": {"name": "ada"}}"#).unwrap_err();
/// assert!(nested.to_string().contains("metadata \"owner\""));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Map<String, Value>")]
pub struct Metadata(BTreeMap<String, MetadataValue>);

impl Metadata {
    /// No metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// The metadata of a JSON object, checked.
    pub fn from_json(object: serde_json::Map<String, Value>) -> Result<Self> {
        if object.len() > MAX_METADATA_KEYS {
            return Err(MemoryError::invalid(format!(
                "metadata holds at most {MAX_METADATA_KEYS} keys, not {}",
                object.len()
            )));
        }
        let mut values = BTreeMap::new();
        for (key, value) in object {
            check_key(&key)?;
            let value = MetadataValue::from_json(&key, value)?;
            if let MetadataValue::Strings(items) = &value
                && items.len() > MAX_METADATA_LIST_ITEMS
            {
                return Err(MemoryError::invalid(format!(
                    "metadata {key:?}: a list holds at most {MAX_METADATA_LIST_ITEMS} strings, \
                     not {}",
                    items.len()
                )));
            }
            values.insert(key, value);
        }
        let metadata = Self(values);
        let bytes = metadata.to_json().len();
        if bytes > MAX_METADATA_BYTES {
            return Err(MemoryError::invalid(format!(
                "metadata is at most {MAX_METADATA_BYTES} bytes as JSON, not {bytes}"
            )));
        }
        Ok(metadata)
    }

    /// The metadata stored as compact JSON text (`{}` when empty), as read by
    /// [`Metadata::from_stored`].
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_else(|_| "{}".to_owned())
    }

    /// Metadata read back from its stored JSON text (`None` or empty text: none); an error
    /// names `owner` (the memory it belongs to).
    pub fn from_stored(owner: &str, text: Option<&str>) -> Result<Self> {
        match text {
            None | Some("") => Ok(Self::default()),
            Some(text) => serde_json::from_str(text).map_err(|err| {
                MemoryError::serialization(format!("the stored metadata of {owner}: {err}"))
            }),
        }
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.0.get(key)
    }

    /// The keys and values, ordered by key.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &MetadataValue)> {
        self.0.iter()
    }

    /// What every one of `all` holds: each key whose value is the same in all of them (none
    /// when `all` is empty). A memory extracted from several messages carries this.
    ///
    /// ```
    /// use memory_core::Metadata;
    /// let a: Metadata = serde_json::from_str(r#"{"user": "ada", "channel": "web"}"#).unwrap();
    /// let b: Metadata = serde_json::from_str(r#"{"user": "ada", "channel": "app"}"#).unwrap();
    /// let shared = Metadata::shared([&a, &b]);
    /// assert_eq!(shared.to_json(), r#"{"user":"ada"}"#);
    /// ```
    pub fn shared<'a>(all: impl IntoIterator<Item = &'a Metadata>) -> Metadata {
        let mut all = all.into_iter();
        let Some(first) = all.next() else {
            return Metadata::default();
        };
        let mut shared = first.0.clone();
        for other in all {
            shared.retain(|key, value| other.0.get(key) == Some(value));
        }
        Metadata(shared)
    }
}

impl TryFrom<serde_json::Map<String, Value>> for Metadata {
    type Error = MemoryError;

    fn try_from(object: serde_json::Map<String, Value>) -> Result<Self> {
        Self::from_json(object)
    }
}

/// A key is 1 to [`MAX_METADATA_KEY_CHARS`] characters of `A-Z a-z 0-9 _ - .`: never a `$`
/// (which starts a filter operator) nor a quote, so a backend can always name it as a quoted
/// member of a JSON path (`$."a.b"`).
fn check_key(key: &str) -> Result<()> {
    let fits = (1..=MAX_METADATA_KEY_CHARS).contains(&key.chars().count())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if fits {
        Ok(())
    } else {
        Err(MemoryError::invalid(format!(
            "metadata key {key:?}: 1 to {MAX_METADATA_KEY_CHARS} characters of A-Z, a-z, 0-9, \
             '_', '-' and '.'"
        )))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(json: &str) -> Result<Metadata> {
        serde_json::from_str::<Metadata>(json).map_err(|e| MemoryError::invalid(e.to_string()))
    }

    #[test]
    fn flat_values_round_trip_and_integers_stay_exact() {
        let text =
            r#"{"big":9007199254740993,"done":false,"rate":0.5,"tags":["x","y"],"who":"ada"}"#;
        let metadata = parse(text).unwrap();
        assert_eq!(metadata.to_json(), text);
        assert_eq!(Metadata::from_stored("m1", Some(text)).unwrap(), metadata);
        assert!(Metadata::from_stored("m1", None).unwrap().is_empty());
        let broken = Metadata::from_stored("m1", Some("[1]"))
            .unwrap_err()
            .to_string();
        assert!(broken.contains("m1"), "{broken}");
    }

    #[test]
    fn every_bound_is_refused_with_its_reason() {
        for (json, says) in [
            (r#"{"a": null}"#, "null"),
            (r#"{"a": {"b": 1}}"#, "an object"),
            (r#"{"a": [1, 2]}"#, "anything but strings"),
            (r#"{"a b": 1}"#, "metadata key \"a b\""),
            (r#"{"": 1}"#, "metadata key \"\""),
            (r#"{"a": "x\u0000y"}"#, "NUL"),
            (r#"{"a": ["x\u0000"]}"#, "NUL"),
        ] {
            let error = parse(json).unwrap_err().to_string();
            assert!(error.contains(says), "{json}: {error}");
        }
        let many: serde_json::Map<String, Value> = (0..=MAX_METADATA_KEYS)
            .map(|i| (format!("k{i}"), Value::from(i)))
            .collect();
        assert!(
            Metadata::from_json(many)
                .unwrap_err()
                .to_string()
                .contains("at most 32 keys")
        );
        let long = serde_json::json!({"a": "x".repeat(MAX_METADATA_BYTES)});
        let Value::Object(long) = long else {
            unreachable!()
        };
        assert!(
            Metadata::from_json(long)
                .unwrap_err()
                .to_string()
                .contains("bytes")
        );
        let list = serde_json::json!({"a": vec!["x"; MAX_METADATA_LIST_ITEMS + 1]});
        let Value::Object(list) = list else {
            unreachable!()
        };
        assert!(
            Metadata::from_json(list)
                .unwrap_err()
                .to_string()
                .contains("a list holds")
        );
    }
}
