//! Vectors as Arrow: the table schema (id, vector of fixed length) with the embedding model
//! recorded in the schema's metadata, and conversions between records and batches.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, Float32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use memory_core::ports::VectorRecord;
use memory_core::{MemoryError, Result};

use crate::error::{BACKEND, arrow_error};

/// The id column.
pub(crate) const ID: &str = "id";
/// The vector column.
pub(crate) const VECTOR: &str = "vector";
/// The schema metadata key naming the embedding model.
const MODEL: &str = "memory.model";

/// The schema of a table of `dims`-long vectors made by `model`.
pub(crate) fn schema(model: &str, dims: usize) -> Result<SchemaRef> {
    let dims = i32::try_from(dims)
        .map_err(|_| MemoryError::invalid(format!("{dims} dimensions are too many")))?;
    let vector =
        DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dims);
    Ok(Arc::new(
        Schema::new(vec![
            Field::new(ID, DataType::Utf8, false),
            Field::new(VECTOR, vector, false),
        ])
        .with_metadata(HashMap::from([(MODEL.to_owned(), model.to_owned())])),
    ))
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
    RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(ids), Arc::new(vectors)])
        .map_err(arrow_error)
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

/// `id IN (...)` for `ids` (which must not be empty).
pub(crate) fn ids_filter(ids: &[String]) -> String {
    let list: Vec<String> = ids.iter().map(|id| literal(id)).collect();
    format!("{ID} IN ({})", list.join(", "))
}
