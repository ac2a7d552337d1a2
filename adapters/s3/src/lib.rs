//! # memory-s3
//!
//! Object storage behind the ports of `memory-core`, on AWS S3 or any S3-compatible server
//! (Cloudflare R2, MinIO, SeaweedFS), through `aws-sdk-s3` with one HTTP/TLS stack:
//! - [`S3BlobStore`]: the [`BlobStore`](memory_core::ports::BlobStore) port: create-only
//!   puts with `If-None-Match: *` (a capability, off for servers that ignore it), paged
//!   listings, multipart uploads for large artefacts, streamed downloads;
//! - [`S3SkillStore`]: skills as objects, with their descriptions in one small index object
//!   so that listing the skills is one request, changed by compare-and-swap on its ETag.
//!
//! Every object lives under the deployment's prefix ([`S3Config::prefix`]). Custom endpoints
//! use path-style addressing; checksums are sent and checked only when an operation
//! requires them (recent SDKs send checksum headers by default that several S3-compatible
//! servers reject); throttling and 5xx answers are retried with backoff and then reported as
//! `Transient`.
//!
//! ```no_run
//! # async fn demo() -> memory_core::Result<()> {
//! use memory_core::ports::{BlobStore, PutMode};
//! use memory_s3::{S3Bucket, S3BlobStore, S3Config};
//! let config = S3Config::new("agent-memory")
//!     .endpoint("https://ACCOUNT.r2.cloudflarestorage.com")
//!     .region("auto")
//!     .static_credentials("AKIA...", "secret");
//! let blobs = S3BlobStore::new(S3Bucket::connect(config).await?);
//! blobs.put("exports/trip.jsonl", b"{}".to_vec(), PutMode::Create).await?;
//! # Ok(()) }
//! ```

mod blob_store;
mod bucket;
mod config;
mod error;
mod skill_store;

pub use blob_store::S3BlobStore;
pub use bucket::S3Bucket;
pub use config::{Credentials, S3Config};
pub use skill_store::S3SkillStore;
