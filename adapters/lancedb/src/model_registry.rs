//! Which embedding model each namespace holds, decided once and atomically: the first
//! writer of a namespace creates its marker object with a create-only put (a new file on
//! disk, `If-None-Match: *` on S3). Of two first writers with different models exactly one
//! claims the namespace; the other is refused. The table's schema records the same model.

use std::sync::Arc;

use memory_core::{MemoryError, Result};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::BACKEND;

/// The folder of the markers, beside the tables (LanceDB lists only `*.lance` folders).
const FOLDER: &str = "_memory_models";

/// What claiming a namespace found.
pub(crate) enum Claim {
    /// This writer decided the model: it creates the table.
    Claimed,
    /// Another writer decided first, for this model and these dimensions.
    Taken { model: String, dims: usize },
}

/// The markers of one database.
#[derive(Clone)]
pub(crate) struct ModelRegistry {
    store: Arc<dyn ObjectStore>,
    root: Path,
}

fn store_error(error: object_store::Error) -> MemoryError {
    MemoryError::transient(BACKEND, error)
}

impl ModelRegistry {
    /// The registry of the database at `uri` (a directory path or an object-store URL),
    /// reached with `options`.
    pub(crate) fn open(uri: &str, options: &[(String, String)]) -> Result<Self> {
        let url = match url::Url::parse(uri) {
            Ok(url) if url.scheme().len() > 1 => url,
            // A plain path (a one-letter scheme is a Windows drive).
            _ => {
                let absolute = std::path::absolute(uri).map_err(|e| {
                    MemoryError::invalid(format!("{uri:?} is not a usable path: {e}"))
                })?;
                std::fs::create_dir_all(&absolute).map_err(|e| {
                    MemoryError::backend(BACKEND, format!("creating {}: {e}", absolute.display()))
                })?;
                url::Url::from_directory_path(&absolute).map_err(|()| {
                    MemoryError::invalid(format!("{} is not an absolute path", absolute.display()))
                })?
            }
        };
        let (store, root) = object_store::parse_url_opts(&url, options.iter().cloned())
            .map_err(|e| MemoryError::invalid(format!("the vector store at {uri}: {e}")))?;
        Ok(Self {
            store: Arc::from(store),
            root,
        })
    }

    fn marker(&self, table: &str) -> Path {
        self.root
            .clone()
            .join(FOLDER)
            .join(format!("{table}.model"))
    }

    /// Claims `table` for `model`'s `dims`-long vectors, or reports who has it.
    pub(crate) async fn claim(&self, table: &str, model: &str, dims: usize) -> Result<Claim> {
        let marker = self.marker(table);
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let body = PutPayload::from(format!("{dims}\n{model}"));
        match self.store.put_opts(&marker, body, options).await {
            Ok(_) => Ok(Claim::Claimed),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => {
                let (model, dims) = self.read(table).await?.ok_or_else(|| {
                    MemoryError::transient(BACKEND, "a model marker vanished while it was read")
                })?;
                Ok(Claim::Taken { model, dims })
            }
            Err(e) => Err(store_error(e)),
        }
    }

    /// The model and dimensions `table` is claimed for, if it is.
    pub(crate) async fn read(&self, table: &str) -> Result<Option<(String, usize)>> {
        let bytes = match self.store.get(&self.marker(table)).await {
            Ok(result) => result.bytes().await.map_err(store_error)?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_error(e)),
        };
        let text = String::from_utf8_lossy(&bytes);
        let (dims, model) = text
            .split_once('\n')
            .and_then(|(d, m)| Some((d.parse::<usize>().ok()?, m.to_owned())))
            .ok_or_else(|| {
                MemoryError::backend(BACKEND, format!("a damaged model marker of {table}"))
            })?;
        Ok(Some((model, dims)))
    }

    /// Releases `table` (its vectors are being dropped).
    pub(crate) async fn release(&self, table: &str) -> Result<()> {
        match self.store.delete(&self.marker(table)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Releases every table.
    pub(crate) async fn release_all(&self) -> Result<()> {
        use futures::TryStreamExt;
        let prefix = self.root.clone().join(FOLDER);
        let markers: Vec<_> = self
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(store_error)?;
        for marker in markers {
            match self.store.delete(&marker.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_error(e)),
            }
        }
        Ok(())
    }
}
