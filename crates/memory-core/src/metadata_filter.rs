//! One filter grammar over a memory's metadata, the same in Rust, the CLI, REST, MCP and the
//! client packages (all of them speak its JSON form).
//!
//! ```text
//! filter    := { KEY: condition, ... }            every key's condition holds
//!            | { "$and": [filter, ...] }          all hold
//!            | { "$or": [filter, ...] }           at least one holds
//!            | { "$not": filter }                 it does not hold
//! condition := scalar                             equal (a list value: one of its items is)
//!            | { "$eq": scalar }                  the same
//!            | { "$in": [scalar, ...] }           equal to one of them
//!            | { "$gt" | "$gte" | "$lt" | "$lte": bound, ... }   within the range
//!            | { "$exists": true | false }        the key is there, or not
//! scalar    := string | number | boolean
//! bound     := number | string                   (all bounds of one range the same type)
//! ```
//!
//! A range over strings compares them byte by byte, which orders ISO 8601 times written the
//! same way (`2026-11-25T10:00:00Z`); over numbers, numerically (epoch milliseconds are
//! numbers). A condition on a key the memory does not have is false (so `$not` of it is true),
//! except `{"$exists": false}`. Metadata keys never start with `$`, so an operator is never
//! mistaken for a key. Anything else is refused with an error that names the operator or the
//! key, before any backend sees it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::metadata::{Metadata, MetadataValue};
use crate::{MemoryError, Result};

/// Nesting of `$and` / `$or` / `$not`, at most.
pub const MAX_FILTER_DEPTH: usize = 8;
/// Conditions in one filter, at most.
pub const MAX_FILTER_CONDITIONS: usize = 64;
/// Values in one `$in`, at most.
pub const MAX_FILTER_IN_VALUES: usize = 256;

/// A filter over metadata (see the [module](self) for its grammar).
///
/// ```
/// use memory_core::{Metadata, MetadataFilter};
/// let filter: MetadataFilter = serde_json::from_str(
///     r#"{"project": "atlas", "priority": {"$gte": 2}, "$not": {"tags": {"$in": ["draft"]}}}"#,
/// ).unwrap();
/// let memory: Metadata = serde_json::from_str(r#"{"project": "atlas", "priority": 3, "tags": ["home"]}"#).unwrap();
/// assert!(filter.matches(&memory));
/// let refused = serde_json::from_str::<MetadataFilter>(r#"{"priority": {"$near": 2}}"#).unwrap_err();
/// assert!(refused.to_string().contains("$near"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataFilter {
    /// Every filter holds (`$and`, or several keys in one object).
    All(Vec<MetadataFilter>),
    /// At least one holds (`$or`).
    Any(Vec<MetadataFilter>),
    /// It does not hold (`$not`).
    Not(Box<MetadataFilter>),
    /// A condition on one key.
    Key {
        /// The metadata key.
        key: String,
        /// What its value must satisfy.
        condition: Condition,
    },
}

/// What one key's value must satisfy.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Equal to this (a list value: one of its items is).
    Equals(Scalar),
    /// Equal to one of these.
    In(Vec<Scalar>),
    /// Within these bounds.
    Range(Range),
    /// The key is there (`true`) or not (`false`).
    Exists(bool),
}

/// A value a condition compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// A string.
    String(String),
    /// A number.
    Number(Number),
    /// A boolean.
    Bool(bool),
}

/// Bounds of a range; at least one is set, and all are numbers or all are strings.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Range {
    /// Greater than.
    pub gt: Option<Bound>,
    /// Greater than or equal.
    pub gte: Option<Bound>,
    /// Less than.
    pub lt: Option<Bound>,
    /// Less than or equal.
    pub lte: Option<Bound>,
}

/// One bound of a range.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// Numbers compare numerically.
    Number(f64),
    /// Strings compare byte by byte (ISO 8601 times in one format order correctly).
    String(String),
}

fn refuse(message: impl Into<String>) -> MemoryError {
    MemoryError::invalid(format!("metadata filter: {}", message.into()))
}

impl MetadataFilter {
    /// The filter of a JSON value, checked.
    pub fn from_json(value: &Value) -> Result<Self> {
        let mut conditions = 0;
        let filter = parse_filter(value, 0, &mut conditions)?;
        Ok(filter)
    }

    /// The filter of JSON text (a query parameter, a command-line argument), checked.
    pub fn parse(text: &str) -> Result<Self> {
        let value: Value =
            serde_json::from_str(text).map_err(|err| refuse(format!("not JSON: {err}")))?;
        Self::from_json(&value)
    }

    /// The filter's JSON form (what [`MetadataFilter::from_json`] reads back).
    pub fn to_json(&self) -> Value {
        match self {
            Self::All(filters) => {
                serde_json::json!({ "$and": filters.iter().map(Self::to_json).collect::<Vec<_>>() })
            }
            Self::Any(filters) => {
                serde_json::json!({ "$or": filters.iter().map(Self::to_json).collect::<Vec<_>>() })
            }
            Self::Not(filter) => serde_json::json!({ "$not": filter.to_json() }),
            Self::Key { key, condition } => {
                let mut object = Map::new();
                object.insert(key.clone(), condition.to_json());
                Value::Object(object)
            }
        }
    }

    /// The filter as a boolean expression in SQL's connectives (`AND`, `OR`, `NOT`, each part
    /// parenthesised), with `condition` writing each key's condition: what every SQL store's
    /// translation shares, so only the conditions differ between them.
    pub fn render(&self, condition: &mut dyn FnMut(&str, &Condition) -> String) -> String {
        match self {
            Self::All(filters) | Self::Any(filters) => {
                let joiner = if matches!(self, Self::All(_)) {
                    " AND "
                } else {
                    " OR "
                };
                filters
                    .iter()
                    .map(|f| format!("({})", f.render(condition)))
                    .collect::<Vec<_>>()
                    .join(joiner)
            }
            Self::Not(filter) => format!("NOT ({})", filter.render(condition)),
            Self::Key { key, condition: c } => condition(key, c),
        }
    }

    /// True when `metadata` satisfies the filter.
    pub fn matches(&self, metadata: &Metadata) -> bool {
        match self {
            Self::All(filters) => filters.iter().all(|f| f.matches(metadata)),
            Self::Any(filters) => filters.iter().any(|f| f.matches(metadata)),
            Self::Not(filter) => !filter.matches(metadata),
            Self::Key { key, condition } => condition.holds(metadata.get(key)),
        }
    }
}

impl Condition {
    fn to_json(&self) -> Value {
        match self {
            Self::Equals(scalar) => serde_json::json!({ "$eq": scalar.to_json() }),
            Self::In(values) => {
                serde_json::json!({ "$in": values.iter().map(Scalar::to_json).collect::<Vec<_>>() })
            }
            Self::Exists(exists) => serde_json::json!({ "$exists": exists }),
            Self::Range(range) => {
                let mut object = Map::new();
                for (name, bound) in [
                    ("$gt", &range.gt),
                    ("$gte", &range.gte),
                    ("$lt", &range.lt),
                    ("$lte", &range.lte),
                ] {
                    if let Some(bound) = bound {
                        object.insert(name.to_owned(), bound.to_json());
                    }
                }
                Value::Object(object)
            }
        }
    }

    /// True when `value` (absent: `None`) satisfies the condition.
    pub fn holds(&self, value: Option<&MetadataValue>) -> bool {
        let Some(value) = value else {
            return matches!(self, Self::Exists(false));
        };
        match self {
            Self::Exists(exists) => *exists,
            Self::Equals(scalar) => equals(value, scalar),
            Self::In(scalars) => scalars.iter().any(|s| equals(value, s)),
            Self::Range(range) => match value {
                MetadataValue::Number(n) => n.as_f64().is_some_and(|n| range.holds_number(n)),
                MetadataValue::String(s) => range.holds_string(s),
                MetadataValue::Strings(items) => items.iter().any(|s| range.holds_string(s)),
                MetadataValue::Bool(_) => false,
            },
        }
    }
}

/// True when a stored value equals a scalar (a list: when one of its items does).
fn equals(value: &MetadataValue, scalar: &Scalar) -> bool {
    match (value, scalar) {
        (MetadataValue::String(a), Scalar::String(b)) => a == b,
        (MetadataValue::Strings(items), Scalar::String(b)) => items.iter().any(|a| a == b),
        (MetadataValue::Bool(a), Scalar::Bool(b)) => a == b,
        (MetadataValue::Number(a), Scalar::Number(b)) => numbers_equal(a, b),
        _ => false,
    }
}

/// Integers compare exactly; anything else as `f64`.
fn numbers_equal(a: &Number, b: &Number) -> bool {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return a == b;
    }
    a.as_f64() == b.as_f64()
}

impl Range {
    fn bounds(&self) -> [(&'static str, Option<&Bound>); 4] {
        [
            ("$gt", self.gt.as_ref()),
            ("$gte", self.gte.as_ref()),
            ("$lt", self.lt.as_ref()),
            ("$lte", self.lte.as_ref()),
        ]
    }

    fn holds_number(&self, n: f64) -> bool {
        self.bounds().into_iter().all(|(op, bound)| match bound {
            None => true,
            Some(Bound::Number(b)) => compare(op, n.partial_cmp(b)),
            Some(Bound::String(_)) => false,
        })
    }

    fn holds_string(&self, s: &str) -> bool {
        self.bounds().into_iter().all(|(op, bound)| match bound {
            None => true,
            Some(Bound::String(b)) => compare(op, Some(s.cmp(b.as_str()))),
            Some(Bound::Number(_)) => false,
        })
    }
}

fn compare(op: &str, ordering: Option<std::cmp::Ordering>) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    matches!(
        (op, ordering),
        ("$gt", Some(Greater))
            | ("$gte", Some(Greater | Equal))
            | ("$lt", Some(Less))
            | ("$lte", Some(Less | Equal))
    )
}

impl Scalar {
    fn to_json(&self) -> Value {
        match self {
            Self::String(s) => Value::String(s.clone()),
            Self::Number(n) => Value::Number(n.clone()),
            Self::Bool(b) => Value::Bool(*b),
        }
    }

    fn from_json(key: &str, value: &Value) -> Result<Self> {
        match value {
            Value::String(s) => Ok(Self::String(s.clone())),
            Value::Number(n) => Ok(Self::Number(n.clone())),
            Value::Bool(b) => Ok(Self::Bool(*b)),
            other => Err(refuse(format!(
                "{key:?}: compare with a string, a number or a boolean, not {}",
                kind_of(other)
            ))),
        }
    }
}

impl Bound {
    fn to_json(&self) -> Value {
        match self {
            Self::Number(n) => Number::from_f64(*n).map_or(Value::Null, Value::Number),
            Self::String(s) => Value::String(s.clone()),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn parse_filter(value: &Value, depth: usize, conditions: &mut usize) -> Result<MetadataFilter> {
    if depth > MAX_FILTER_DEPTH {
        return Err(refuse(format!(
            "nested more than {MAX_FILTER_DEPTH} levels deep"
        )));
    }
    let Value::Object(object) = value else {
        return Err(refuse(format!(
            "a filter is an object, not {}",
            kind_of(value)
        )));
    };
    if object.is_empty() {
        return Err(refuse(
            "an empty object filters nothing: leave the filter out",
        ));
    }
    let mut parts = Vec::with_capacity(object.len());
    for (name, inner) in object {
        parts.push(match name.as_str() {
            "$and" | "$or" => {
                let Value::Array(items) = inner else {
                    return Err(refuse(format!("{name} takes a list of filters")));
                };
                if items.is_empty() {
                    return Err(refuse(format!("{name} takes at least one filter")));
                }
                let filters = items
                    .iter()
                    .map(|item| parse_filter(item, depth + 1, conditions))
                    .collect::<Result<Vec<_>>>()?;
                if name == "$and" {
                    MetadataFilter::All(filters)
                } else {
                    MetadataFilter::Any(filters)
                }
            }
            "$not" => MetadataFilter::Not(Box::new(parse_filter(inner, depth + 1, conditions)?)),
            operator if operator.starts_with('$') => {
                return Err(refuse(format!(
                    "unknown operator {operator} (filters combine with $and, $or and $not)"
                )));
            }
            key => {
                *conditions += 1;
                if *conditions > MAX_FILTER_CONDITIONS {
                    return Err(refuse(format!(
                        "at most {MAX_FILTER_CONDITIONS} conditions"
                    )));
                }
                MetadataFilter::Key {
                    key: key.to_owned(),
                    condition: parse_condition(key, inner)?,
                }
            }
        });
    }
    Ok(match parts.len() {
        1 => parts.remove(0),
        _ => MetadataFilter::All(parts),
    })
}

fn parse_condition(key: &str, value: &Value) -> Result<Condition> {
    let Value::Object(object) = value else {
        return Scalar::from_json(key, value).map(Condition::Equals);
    };
    let is_range = |name: &str| matches!(name, "$gt" | "$gte" | "$lt" | "$lte");
    if object.is_empty() {
        return Err(refuse(format!("{key:?}: an empty condition")));
    }
    if object.keys().all(|name| is_range(name)) {
        return parse_range(key, object).map(Condition::Range);
    }
    if object.len() > 1 {
        let names: Vec<&str> = object.keys().map(String::as_str).collect();
        return Err(refuse(format!(
            "{key:?}: one operator per condition ({}), or range bounds together; combine \
             conditions with $and",
            names.join(", ")
        )));
    }
    let Some((name, inner)) = object.iter().next() else {
        return Err(refuse(format!("{key:?}: an empty condition")));
    };
    match name.as_str() {
        "$eq" => Scalar::from_json(key, inner).map(Condition::Equals),
        "$in" => {
            let Value::Array(items) = inner else {
                return Err(refuse(format!("{key:?}: $in takes a list")));
            };
            if items.is_empty() || items.len() > MAX_FILTER_IN_VALUES {
                return Err(refuse(format!(
                    "{key:?}: $in takes 1 to {MAX_FILTER_IN_VALUES} values, not {}",
                    items.len()
                )));
            }
            items
                .iter()
                .map(|item| Scalar::from_json(key, item))
                .collect::<Result<Vec<_>>>()
                .map(Condition::In)
        }
        "$exists" => match inner {
            Value::Bool(exists) => Ok(Condition::Exists(*exists)),
            other => Err(refuse(format!(
                "{key:?}: $exists takes true or false, not {}",
                kind_of(other)
            ))),
        },
        operator => Err(refuse(format!(
            "{key:?}: unknown operator {operator} (the operators are $eq, $in, $gt, $gte, \
             $lt, $lte and $exists)"
        ))),
    }
}

fn parse_range(key: &str, object: &Map<String, Value>) -> Result<Range> {
    let mut range = Range::default();
    let mut strings = None;
    for (name, value) in object {
        let bound = match value {
            Value::Number(n) => Bound::Number(n.as_f64().ok_or_else(|| {
                refuse(format!("{key:?}: {name} bound {n} is not a finite number"))
            })?),
            Value::String(s) => Bound::String(s.clone()),
            other => {
                return Err(refuse(format!(
                    "{key:?}: {name} takes a number or a string, not {}",
                    kind_of(other)
                )));
            }
        };
        let is_string = matches!(bound, Bound::String(_));
        if *strings.get_or_insert(is_string) != is_string {
            return Err(refuse(format!(
                "{key:?}: the bounds of one range are all numbers or all strings"
            )));
        }
        let slot = match name.as_str() {
            "$gt" => &mut range.gt,
            "$gte" => &mut range.gte,
            "$lt" => &mut range.lt,
            _ => &mut range.lte,
        };
        *slot = Some(bound);
    }
    Ok(range)
}

impl Serialize for MetadataFilter {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MetadataFilter {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn filter(json: Value) -> MetadataFilter {
        MetadataFilter::from_json(&json).unwrap()
    }

    fn metadata(json: Value) -> Metadata {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn every_operator_matches_as_the_grammar_says() {
        let m = metadata(serde_json::json!({
            "project": "atlas", "priority": 3, "score": 0.5, "done": false,
            "tags": ["home", "trip"], "at": "2026-11-25T10:00:00Z",
            "big": 9_007_199_254_740_993_u64,
        }));
        for (json, expected) in [
            (serde_json::json!({"project": "atlas"}), true),
            (serde_json::json!({"project": "other"}), false),
            (serde_json::json!({"project": {"$eq": "atlas"}}), true),
            (serde_json::json!({"tags": "trip"}), true),
            (serde_json::json!({"tags": {"$in": ["x", "home"]}}), true),
            (serde_json::json!({"priority": {"$in": [1, 2]}}), false),
            (serde_json::json!({"priority": 3.0}), true),
            (serde_json::json!({"big": 9_007_199_254_740_993_u64}), true),
            (serde_json::json!({"big": 9_007_199_254_740_992_u64}), false),
            (serde_json::json!({"done": false}), true),
            (serde_json::json!({"done": "false"}), false),
            (serde_json::json!({"priority": {"$gte": 3, "$lt": 4}}), true),
            (serde_json::json!({"priority": {"$gt": 3}}), false),
            (serde_json::json!({"score": {"$lte": 0.5}}), true),
            (
                serde_json::json!({"at": {"$gte": "2026-11-01", "$lt": "2026-12-01"}}),
                true,
            ),
            (serde_json::json!({"at": {"$lt": "2026-11-25"}}), false),
            (serde_json::json!({"project": {"$gt": 1}}), false),
            (serde_json::json!({"missing": {"$exists": false}}), true),
            (serde_json::json!({"missing": {"$exists": true}}), false),
            (serde_json::json!({"missing": "x"}), false),
            (serde_json::json!({"$not": {"missing": "x"}}), true),
            (serde_json::json!({"project": "atlas", "done": true}), false),
            (
                serde_json::json!({"$or": [{"done": true}, {"tags": "home"}]}),
                true,
            ),
            (
                serde_json::json!({"$and": [{"done": false}, {"$not": {"tags": "home"}}]}),
                false,
            ),
        ] {
            assert_eq!(filter(json.clone()).matches(&m), expected, "{json}");
        }
    }

    #[test]
    fn the_json_form_reads_back_the_same_filter() {
        let original = filter(serde_json::json!({
            "project": "atlas",
            "$or": [{"priority": {"$gte": 2, "$lt": 5}}, {"tags": {"$in": ["a", "b"]}}],
            "$not": {"gone": {"$exists": true}},
        }));
        let text = serde_json::to_string(&original).unwrap();
        let back: MetadataFilter = serde_json::from_str(&text).unwrap();
        assert_eq!(back, original);
    }

    #[test]
    fn bad_filters_are_refused_naming_what_is_wrong() {
        let deep = (0..=MAX_FILTER_DEPTH).fold(
            serde_json::json!({"a": 1}),
            |f, _| serde_json::json!({ "$not": f }),
        );
        let many: Map<String, Value> = (0..=MAX_FILTER_CONDITIONS)
            .map(|i| (format!("k{i}"), Value::from(i)))
            .collect();
        for (json, says) in [
            (serde_json::json!({"a": {"$near": 1}}), "$near"),
            (serde_json::json!({"$xor": []}), "$xor"),
            (serde_json::json!({"a": null}), "null"),
            (serde_json::json!({"a": ["x"]}), "a list"),
            (serde_json::json!({"a": {"$in": []}}), "$in takes 1"),
            (serde_json::json!({"a": {"$in": "x"}}), "$in takes a list"),
            (
                serde_json::json!({"a": {"$gt": 1, "$lt": "z"}}),
                "all numbers or all strings",
            ),
            (
                serde_json::json!({"a": {"$gt": true}}),
                "a number or a string",
            ),
            (
                serde_json::json!({"a": {"$eq": 1, "$in": [1]}}),
                "one operator",
            ),
            (serde_json::json!({"a": {"$exists": 1}}), "true or false"),
            (serde_json::json!({"$and": []}), "at least one"),
            (serde_json::json!({"$or": {"a": 1}}), "a list of filters"),
            (serde_json::json!({}), "empty"),
            (serde_json::json!([{"a": 1}]), "is an object"),
            (deep, "levels deep"),
            (Value::Object(many), "at most 64 conditions"),
        ] {
            let error = MetadataFilter::from_json(&json).unwrap_err().to_string();
            assert!(error.contains(says), "{json}: {error}");
        }
    }
}
