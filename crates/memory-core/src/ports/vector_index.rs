use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::field_filter::{time_matches, value_matches};
use crate::{Result, Timestamp};

/// What a vector is about, beside its embedding, for [`VectorFilter`]s: a memory has a kind,
/// a session and a time; a raw message a session and a time.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VectorFields {
    /// The session (conversation) it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A type name (a memory's kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// When it was said or recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Timestamp>,
}

/// A vector with the model that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorRecord {
    /// Unique within the namespace.
    pub id: String,
    /// The embedding.
    pub vector: Vec<f32>,
    /// The embedding model's id.
    pub model: String,
    /// Filterable fields (absent in exports made before fields existed).
    #[serde(default)]
    pub fields: VectorFields,
}

impl VectorRecord {
    /// A record without fields.
    pub fn new(id: impl Into<String>, vector: Vec<f32>, model: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            vector,
            model: model.into(),
            fields: VectorFields::default(),
        }
    }

    /// Sets the fields.
    pub fn with_fields(mut self, fields: VectorFields) -> Self {
        self.fields = fields;
        self
    }

    /// Refuses a batch in which any vector holds a NaN or infinite component
    /// ([`crate::MemoryError::InvalidInput`], naming the first such record): an index checks
    /// this before it writes any of the batch.
    ///
    /// ```
    /// use memory_core::ports::VectorRecord;
    /// let good = VectorRecord::new("a", vec![1.0, 0.0], "m");
    /// let bad = VectorRecord::new("b", vec![f32::NAN, 0.0], "m");
    /// assert!(VectorRecord::check_finite(&[good.clone()]).is_ok());
    /// assert!(VectorRecord::check_finite(&[good, bad]).is_err());
    /// ```
    pub fn check_finite(records: &[VectorRecord]) -> Result<()> {
        match records
            .iter()
            .find(|r| r.vector.iter().any(|x| !x.is_finite()))
        {
            Some(bad) => Err(crate::MemoryError::invalid(format!(
                "vector {:?} holds a NaN or infinite component",
                bad.id
            ))),
            None => Ok(()),
        }
    }
}

/// Restrictions on the vectors a search may return or a count may include; every set field
/// must match exactly (`from` inclusive, `to` exclusive, on [`VectorFields::time`]; a vector
/// without the field never matches a filter on it).
///
/// ```
/// use memory_core::Timestamp;
/// use memory_core::ports::{VectorFields, VectorFilter};
/// let fields = VectorFields { kind: Some("fact".into()), time: Some(Timestamp(5)), ..Default::default() };
/// assert!(VectorFilter::default().matches(&fields));
/// assert!(VectorFilter { kind: Some("fact".into()), from: Some(Timestamp(5)), ..Default::default() }.matches(&fields));
/// assert!(!VectorFilter { to: Some(Timestamp(5)), ..Default::default() }.matches(&fields));
/// assert!(!VectorFilter { session: Some("s1".into()), ..Default::default() }.matches(&fields));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VectorFilter {
    /// Only this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Only this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// At or after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Timestamp>,
    /// Before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Timestamp>,
}

impl VectorFilter {
    /// True when no field is restricted.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// True when `fields` pass the filter (what an index that filters in memory checks).
    pub fn matches(&self, fields: &VectorFields) -> bool {
        value_matches(&self.session, &fields.session)
            && value_matches(&self.kind, &fields.kind)
            && time_matches(self.from, self.to, fields.time)
    }
}

/// A nearest-neighbour search of a [`VectorIndex`].
///
/// ```
/// use memory_core::ports::{VectorFilter, VectorQuery};
/// let facts = VectorFilter { kind: Some("fact".into()), ..VectorFilter::default() };
/// let query = VectorQuery::new(&[0.1, 0.9], 5).filter(facts);
/// assert_eq!((query.vector.len(), query.k), (2, 5));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorQuery {
    /// The vector to search near.
    pub vector: Vec<f32>,
    /// Maximum hits.
    pub k: usize,
    /// Restrictions on fields (applied before ranking: the hits are the `k` nearest of the
    /// vectors that match).
    #[serde(default)]
    pub filter: VectorFilter,
}

impl VectorQuery {
    /// The `k` nearest vectors to `vector`, unfiltered.
    pub fn new(vector: &[f32], k: usize) -> Self {
        Self {
            vector: vector.to_vec(),
            k,
            filter: VectorFilter::default(),
        }
    }

    /// Sets the filter.
    pub fn filter(mut self, filter: VectorFilter) -> Self {
        self.filter = filter;
        self
    }
}

/// A nearest-neighbour result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorHit {
    /// Record id.
    pub id: String,
    /// Cosine similarity, higher is closer.
    pub score: f32,
}

/// Nearest-neighbour search over embeddings, partitioned into namespaces.
///
/// # Contract
/// - All vectors of a namespace share one model and one dimension: an upsert with another
///   model or length is [`crate::MemoryError::InvalidInput`] until the namespace is cleared.
/// - A search with a vector of the wrong length is `InvalidInput`; an empty namespace gives
///   no hits.
/// - A filtered search ranks only the vectors that match the filter: it returns `k` hits
///   whenever `k` vectors match, however far they are from the query.
/// - An upsert replaces the fields with the vector; `get` returns both.
/// - A batch in which any vector holds a NaN or infinite component is `InvalidInput`, and
///   nothing of it is written ([`VectorRecord::check_finite`]).
///
/// (asserted by `memory_testkit::contract::vector_index`)
#[async_trait]
pub trait VectorIndex: Send + Sync {
    /// Inserts or replaces records.
    async fn upsert(&self, namespace: &str, records: Vec<VectorRecord>) -> Result<()>;
    /// Removes records; returns how many existed.
    async fn delete(&self, namespace: &str, ids: &[String]) -> Result<u64>;
    /// The `query.k` closest records by cosine similarity among those that match its filter.
    async fn search(&self, namespace: &str, query: &VectorQuery) -> Result<Vec<VectorHit>>;
    /// The `k` closest records by cosine similarity, unfiltered.
    async fn query(&self, namespace: &str, vector: &[f32], k: usize) -> Result<Vec<VectorHit>> {
        self.search(namespace, &VectorQuery::new(vector, k)).await
    }
    /// How many records match `filter` (all of them with the empty filter).
    async fn count(&self, namespace: &str, filter: &VectorFilter) -> Result<u64>;
    /// The stored records with these ids (as given, not normalised, with their fields), in
    /// the order of `ids`.
    async fn get(&self, namespace: &str, ids: &[String]) -> Result<Vec<VectorRecord>>;
    /// The model of the namespace's vectors, if any.
    async fn model(&self, namespace: &str) -> Result<Option<String>>;
    /// The model of each of `namespaces`, in order (`None` for one without vectors). One
    /// read where the backend can; by default [`Self::model`] for each.
    async fn models(&self, namespaces: &[&str]) -> Result<Vec<Option<String>>> {
        let mut models = Vec::with_capacity(namespaces.len());
        for namespace in namespaces {
            models.push(self.model(namespace).await?);
        }
        Ok(models)
    }
    /// Removes the whole namespace.
    async fn clear(&self, namespace: &str) -> Result<()>;
}

/// The vector index of each long-term memory profile, from whatever backend the deployment
/// chose (independent of where the profile's records live).
///
/// # Contract
/// - `vector_index` returns the same logical index for the same profile; profiles share
///   nothing.
/// - The one-model-per-namespace check of [`VectorIndex`] is atomic: two writers (two
///   instances, two processes) can never leave two models in one namespace.
/// - `delete_vector_index` removes every vector of the profile (idempotent).
#[async_trait]
pub trait VectorIndexes: Send + Sync {
    /// The profile's index (created on first use).
    async fn vector_index(&self, profile: &str) -> Result<Arc<dyn VectorIndex>>;
    /// Removes the profile's vectors.
    async fn delete_vector_index(&self, profile: &str) -> Result<()>;
}
