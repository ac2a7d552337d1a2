//! A metadata filter as an SQL condition over the `metadata` JSONB column, with numbered
//! parameters (all bound as text and cast in SQL), evaluated by PostgreSQL's JSON operators
//! exactly as [`MetadataFilter::matches`] evaluates it.
//!
//! Every key condition is wrapped in `COALESCE(…, false)` so that it is true or false, never
//! NULL: a missing key or NULL metadata makes a condition false, and `NOT` of it true, as in
//! Rust. Strings compare in the "C" collation (byte by byte, as Rust's `str` does); numbers
//! as `numeric`, so integers compare exactly.

use memory_core::MetadataFilter;
use memory_core::metadata_filter::{Bound, Condition, Range, Scalar};

/// The condition (without a leading `AND`) and its text parameters, numbered from `first`.
pub(crate) fn condition(filter: &MetadataFilter, first: usize) -> (String, Vec<String>) {
    let mut params = Vec::new();
    let sql = filter.render(&mut |key, condition| {
        let key = push(&mut params, first, key.to_owned());
        let value = format!("(metadata -> {key})");
        let sql = condition_sql(condition, &value, first, &mut params);
        format!("COALESCE(({sql}), false)")
    });
    (sql, params)
}

fn push(params: &mut Vec<String>, first: usize, param: String) -> String {
    params.push(param);
    format!("${}::text", first + params.len() - 1)
}

fn condition_sql(
    condition: &Condition,
    value: &str,
    first: usize,
    params: &mut Vec<String>,
) -> String {
    match condition {
        Condition::Exists(true) => format!("{value} IS NOT NULL"),
        Condition::Exists(false) => format!("{value} IS NULL"),
        Condition::Equals(scalar) => equals_sql(scalar, value, first, params),
        Condition::In(scalars) => scalars
            .iter()
            .map(|s| format!("({})", equals_sql(s, value, first, params)))
            .collect::<Vec<_>>()
            .join(" OR "),
        Condition::Range(range) => {
            let numbers = [&range.gt, &range.gte, &range.lt, &range.lte]
                .into_iter()
                .flatten()
                .all(|b| matches!(b, Bound::Number(_)));
            if numbers {
                let number = format!(
                    "(CASE WHEN jsonb_typeof({value}) = 'number' THEN ({value} #>> '{{}}')::numeric END)"
                );
                bounds_sql(range, &number, "::numeric", first, params)
            } else {
                let text = format!(
                    "(CASE WHEN jsonb_typeof({value}) = 'string' THEN ({value} #>> '{{}}') END) COLLATE \"C\""
                );
                let direct = bounds_sql(range, &text, "", first, params);
                let item = bounds_sql(range, "item COLLATE \"C\"", "", first, params);
                format!(
                    "({direct}) OR (jsonb_typeof({value}) = 'array' AND EXISTS \
                     (SELECT 1 FROM jsonb_array_elements_text({value}) AS item WHERE {item}))"
                )
            }
        }
    }
}

fn equals_sql(scalar: &Scalar, value: &str, first: usize, params: &mut Vec<String>) -> String {
    match scalar {
        Scalar::String(s) => {
            let s = push(params, first, s.clone());
            format!(
                "{value} = to_jsonb({s}) OR (jsonb_typeof({value}) = 'array' AND {value} @> jsonb_build_array({s}))"
            )
        }
        Scalar::Bool(b) => {
            let b = push(params, first, b.to_string());
            format!("{value} = to_jsonb({b}::boolean)")
        }
        Scalar::Number(n) => {
            let n = push(params, first, n.to_string());
            format!("{value} = to_jsonb({n}::numeric)")
        }
    }
}

fn bounds_sql(
    range: &Range,
    value: &str,
    cast: &str,
    first: usize,
    params: &mut Vec<String>,
) -> String {
    let mut parts = Vec::new();
    for (op, bound) in [
        (">", &range.gt),
        (">=", &range.gte),
        ("<", &range.lt),
        ("<=", &range.lte),
    ] {
        let Some(bound) = bound else { continue };
        let text = match bound {
            Bound::Number(n) => n.to_string(),
            Bound::String(s) => s.clone(),
        };
        let p = push(params, first, text);
        parts.push(format!("{value} {op} {p}{cast}"));
    }
    parts.join(" AND ")
}
