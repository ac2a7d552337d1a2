//! Vectors as Arrow: the table schema (id, vector of fixed length, the filterable fields)
//! with the embedding model recorded in the schema's metadata, conversions between records
//! and batches, and filters as SQL predicates.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, Float32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memory_core::ports::{VectorFields, VectorFilter, VectorRecord};
use memory_core::{MemoryError, Result, Timestamp};

use crate::error::{BACKEND, arrow_error};

/// The id column.
pub(crate) const ID: &str = "id";
/// The vector column.
pub(crate) const VECTOR: &str = "vector";
/// The session column.
pub(crate) const SESSION: &str = "session";
/// The kind column.
pub(crate) const KIND: &str = "kind";
/// The time column (milliseconds since the epoch).
pub(crate) const TIME: &str = "time";
/// The schema metadata key naming the embedding model.
const MODEL: &str = "memory.model";

/// The schema of a table of `dims`-long vectors made by `model`.
pub(crate) fn schema(model: &str, dims: usize) -> Result<SchemaRef> {
    let dims = i32::try_from(dims)
        .map_err(|_| MemoryError::invalid(format!("{dims} dimensions are too many")))?;
    let vector =
        DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dims);
    Ok(Arc::new(
        Schema::new(
            [
                Field::new(ID, DataType::Utf8, false),
                Field::new(VECTOR, vector, false),
            ]
            .into_iter()
            .chain(field_columns().fields().iter().map(|f| f.as_ref().clone()))
            .collect::<Vec<_>>(),
        )
        .with_metadata(HashMap::from([(MODEL.to_owned(), model.to_owned())])),
    ))
}

/// The filterable columns, all nullable (tables made before they existed get them added,
/// empty).
pub(crate) fn field_columns() -> Schema {
    Schema::new(vec![
        Field::new(SESSION, DataType::Utf8, true),
        Field::new(KIND, DataType::Utf8, true),
        Field::new(TIME, DataType::Int64, true),
    ])
}

/// The model and dimensions a table's schema records.
pub(crate) fn recorded(schema: &Schema) -> Result<(String, usize)> {
    let model = schema
        .metadata()
        .get(MODEL)
        .cloned()
        .ok_or_else(|| MemoryError::backend(BACKEND, "a vector table without its model"))?;
    let dims = match schema.field_with_name(VECTOR).map(Field::data_type) {
        Ok(DataType::FixedSizeList(_, n)) => usize::try_from(*n).unwrap_or(0),
        _ => {
            return Err(MemoryError::backend(
                BACKEND,
                "a vector table without vectors",
            ));
        }
    };
    Ok((model, dims))
}

/// One batch of `records` (all of `model`, `dims` long: checked by the caller).
pub(crate) fn batch(
    schema: &SchemaRef,
    records: &[VectorRecord],
    dims: usize,
) -> Result<RecordBatch> {
    let ids = StringArray::from_iter_values(records.iter().map(|r| r.id.as_str()));
    let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        records
            .iter()
            .map(|r| Some(r.vector.iter().copied().map(Some).collect::<Vec<_>>())),
        i32::try_from(dims).unwrap_or(i32::MAX),
    );
    let sessions = StringArray::from_iter(records.iter().map(|r| r.fields.session.as_deref()));
    let kinds = StringArray::from_iter(records.iter().map(|r| r.fields.kind.as_deref()));
    let times = Int64Array::from_iter(records.iter().map(|r| r.fields.time.map(Timestamp::millis)));
    RecordBatch::try_new(
        Arc::clone(schema),
        vec![
            Arc::new(ids),
            Arc::new(vectors),
            Arc::new(sessions),
            Arc::new(kinds),
            Arc::new(times),
        ],
    )
    .map_err(arrow_error)
}

/// The fields of `batch`'s rows.
pub(crate) fn fields(batch: &RecordBatch) -> Result<Vec<VectorFields>> {
    let (sessions, kinds) = (strings(batch, SESSION)?, strings(batch, KIND)?);
    let times = batch
        .column_by_name(TIME)
        .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
        .ok_or_else(|| MemoryError::backend(BACKEND, format!("no integer column {TIME}")))?;
    let text = |column: &StringArray, row: usize| {
        column.is_valid(row).then(|| column.value(row).to_owned())
    };
    Ok((0..batch.num_rows())
        .map(|row| VectorFields {
            session: text(sessions, row),
            kind: text(kinds, row),
            time: times.is_valid(row).then(|| Timestamp(times.value(row))),
        })
        .collect())
}

/// The string column `name` of `batch`.
pub(crate) fn strings<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| MemoryError::backend(BACKEND, format!("no string column {name}")))
}

/// The f32 column `name` of `batch`.
pub(crate) fn floats<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a Float32Array> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
        .ok_or_else(|| MemoryError::backend(BACKEND, format!("no float column {name}")))
}

/// The vectors of `batch`, row by row.
pub(crate) fn vectors(batch: &RecordBatch) -> Result<Vec<Vec<f32>>> {
    let list = batch
        .column_by_name(VECTOR)
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
        .ok_or_else(|| MemoryError::backend(BACKEND, "no vector column"))?;
    (0..list.len())
        .map(|row| {
            let values = list.value(row);
            values
                .as_any()
                .downcast_ref::<Float32Array>()
                .map(|v| v.values().to_vec())
                .ok_or_else(|| MemoryError::backend(BACKEND, "vectors are not f32"))
        })
        .collect()
}

/// A SQL string literal (quotes doubled), for filters on ids.
pub(crate) fn literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// `filter` as a SQL predicate (values as literals, quotes doubled: Lance's SQL has no
/// backslash escapes), or `None` when it restricts nothing.
pub(crate) fn filter_predicate(filter: &VectorFilter) -> Option<String> {
    let mut terms = Vec::new();
    if let Some(session) = &filter.session {
        terms.push(format!("{SESSION} = {}", literal(session)));
    }
    if let Some(kind) = &filter.kind {
        terms.push(format!("{KIND} = {}", literal(kind)));
    }
    if let Some(from) = filter.from {
        terms.push(format!("{TIME} >= {}", from.millis()));
    }
    if let Some(to) = filter.to {
        terms.push(format!("{TIME} < {}", to.millis()));
    }
    (!terms.is_empty()).then(|| terms.join(" AND "))
}

/// `id IN (...)` for `ids` (which must not be empty).
pub(crate) fn ids_filter(ids: &[String]) -> String {
    let list: Vec<String> = ids.iter().map(|id| literal(id)).collect();
    format!("{ID} IN ({})", list.join(", "))
}
