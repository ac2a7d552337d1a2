//! A metadata filter as an SQL condition over the `metadata` JSON text, with numbered
//! parameters, evaluated by SQLite's JSON functions exactly as
//! [`MetadataFilter::matches`] evaluates it.
//!
//! Every key condition is wrapped in `COALESCE(…, 0)` so that it is 0 or 1, never NULL: a
//! missing key or NULL metadata makes a condition false, and `NOT` of it true, as in Rust.
//! Strings compare with SQLite's binary collation, byte by byte, as Rust's `str` does.

use memory_core::MetadataFilter;
use memory_core::metadata_filter::{Bound, Condition, Range, Scalar};

/// A value bound to a numbered parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// Text.
    Text(String),
    /// An integer.
    Integer(i64),
    /// A real.
    Real(f64),
}

/// Binds a filter's parameters, in order, after those `query` already has.
pub(crate) fn bind_all<'q>(
    mut query: sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    params: Vec<Param>,
) -> sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    for param in params {
        query = match param {
            Param::Text(text) => query.bind(text),
            Param::Integer(integer) => query.bind(integer),
            Param::Real(real) => query.bind(real),
        };
    }
    query
}

/// The condition (without a leading `AND`) and its parameters, numbered from `first`.
pub(crate) fn condition(filter: &MetadataFilter, first: usize) -> (String, Vec<Param>) {
    let mut params = Vec::new();
    let sql = filter.render(&mut |key, condition| {
        let path = push(&mut params, first, Param::Text(format!("$.\"{key}\"")));
        let sql = condition_sql(condition, &path, first, &mut params);
        format!("COALESCE(({sql}), 0)")
    });
    (sql, params)
}

fn push(params: &mut Vec<Param>, first: usize, param: Param) -> String {
    params.push(param);
    format!("?{}", first + params.len() - 1)
}

fn condition_sql(
    condition: &Condition,
    path: &str,
    first: usize,
    params: &mut Vec<Param>,
) -> String {
    let kind = format!("json_type(metadata, {path})");
    let value = format!("json_extract(metadata, {path})");
    match condition {
        Condition::Exists(true) => format!("{kind} IS NOT NULL"),
        Condition::Exists(false) => format!("{kind} IS NULL"),
        Condition::Equals(scalar) => equals_sql(scalar, path, first, params),
        Condition::In(scalars) => scalars
            .iter()
            .map(|s| format!("({})", equals_sql(s, path, first, params)))
            .collect::<Vec<_>>()
            .join(" OR "),
        Condition::Range(range) => {
            let numbers = [&range.gt, &range.gte, &range.lt, &range.lte]
                .into_iter()
                .flatten()
                .all(|b| matches!(b, Bound::Number(_)));
            if numbers {
                let bounds = bounds_sql(range, &value, first, params);
                format!("{kind} IN ('integer', 'real') AND {bounds}")
            } else {
                let direct = bounds_sql(range, &value, first, params);
                let item = bounds_sql(range, "item.value", first, params);
                format!(
                    "({kind} = 'text' AND {direct}) OR ({kind} = 'array' AND EXISTS \
                     (SELECT 1 FROM json_each(metadata, {path}) AS item WHERE {item}))"
                )
            }
        }
    }
}

fn equals_sql(scalar: &Scalar, path: &str, first: usize, params: &mut Vec<Param>) -> String {
    let kind = format!("json_type(metadata, {path})");
    match scalar {
        Scalar::String(s) => {
            let s = push(params, first, Param::Text(s.clone()));
            format!(
                "({kind} = 'text' AND json_extract(metadata, {path}) = {s}) OR ({kind} = 'array' \
                 AND EXISTS (SELECT 1 FROM json_each(metadata, {path}) AS item WHERE item.value = {s}))"
            )
        }
        Scalar::Bool(b) => {
            let b = push(
                params,
                first,
                Param::Text(if *b { "true" } else { "false" }.into()),
            );
            format!("{kind} = {b}")
        }
        Scalar::Number(n) => {
            let param = match n.as_i64() {
                Some(i) => Param::Integer(i),
                None => Param::Real(n.as_f64().unwrap_or(f64::NAN)),
            };
            let n = push(params, first, param);
            format!("{kind} IN ('integer', 'real') AND json_extract(metadata, {path}) = {n}")
        }
    }
}

fn bounds_sql(range: &Range, value: &str, first: usize, params: &mut Vec<Param>) -> String {
    let mut parts = Vec::new();
    for (op, bound) in [
        (">", &range.gt),
        (">=", &range.gte),
        ("<", &range.lt),
        ("<=", &range.lte),
    ] {
        let Some(bound) = bound else { continue };
        let param = match bound {
            Bound::Number(n) => Param::Real(*n),
            Bound::String(s) => Param::Text(s.clone()),
        };
        let p = push(params, first, param);
        parts.push(format!("{value} {op} {p}"));
    }
    parts.join(" AND ")
}
