//! # gantry
//!
//! A throughput-tuned S3 transfer engine: downloads are split into part-sized ranged GETs and
//! uploads into multipart PUTs, run in parallel over a pool of keep-alive connections of our
//! own, under a hard memory limit, with per-part retries.
//!
//! ## Example
//!
//! ```no_run
//! use gantry::{Client, ClientConfig};
//!
//! let config = ClientConfig::builder()
//!     .endpoint_url("http://127.0.0.1:9000")
//!     .part_size_bytes(8 << 20)
//!     .build()?;
//! let client = Client::new(config)?;
//! client.block_on(async {
//!     client.put("bucket", "key", vec![7u8; 20 << 20]).await?;
//!     let info = client.download_to_file("bucket", "key", "/tmp/key").await?;
//!     println!("{} bytes, ETag {:?}", info.size, info.etag);
//!     Ok::<_, gantry::Error>(())
//! })?;
//! # Ok::<_, gantry::Error>(())
//! ```
//!
//! ## Threading
//!
//! A [`Client`] owns a multi-threaded tokio runtime (or uses one you pass to
//! [`Client::with_runtime`]); all network work runs there. Its async methods can be awaited
//! from any executor, and [`Client::block_on`] serves synchronous callers. `Client` is
//! `Send + Sync` and cheap to clone.
//!
//! ## Cancel safety
//!
//! Dropping a transfer's future (or a [`GetStream`], or an [`Upload`]) cancels it: part
//! requests stop, their connections close, memory and connection slots return, and an
//! unfinished multipart upload is aborted on the server. A download to a file never leaves a
//! partial file at the destination.
//!
//! ## Stability
//!
//! Pre-1.0: the API may change between minor versions. [`Error`] and its enums are
//! `#[non_exhaustive]`-style: match with a wildcard arm.

#![deny(missing_docs, missing_debug_implementations)]
#![warn(unreachable_pub)]

mod autoconfig;
mod buffer_pool;
mod checksum;
mod client;
mod config;
mod config_keys;
mod context;
mod crc_combine;
mod credentials;
mod download;
mod error;
mod http;
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod internals;
mod metrics;
mod object_client;
mod retry;
mod s3;
mod scheduler;
mod task;
mod types;
mod upload;

pub use autoconfig::{AutoConfig, NetworkCard};
pub use checksum::{ChecksumAlgorithm, ChecksumUpload, S3ChecksumAlgorithm};
pub use client::Client;
pub use config::{
    parse_size, Addressing, Checksums, ClientConfig, ClientConfigBuilder, Endpoint, ExpressSessionMode, Hedging,
    PayloadSigning, RetryConfig, Timeouts, TlsTrust, MAX_PARTS, MAX_PART_SIZE, MIB, MIN_PART_SIZE,
};
pub use config_keys::CONFIG_KEYS;
pub use credentials::{Credentials, CredentialsSource, ProvideCredentials};
pub use download::options::{DownloadChecksum, GetOptions};
pub use download::stream::GetStream;
pub use error::{Error, ErrorKind, Operation, Result};
pub use metrics::{ChecksumCounts, LaneSnapshot, MetricsSnapshot, RetryCounts};
pub use types::{
    AppendOutput, BucketSummary, CopyOptions, CopyOutput, DeleteObjectError, DeleteObjectsOutput, ListOptions,
    ListPage, MultipartUploadSummary, NotVerifiedReason, ObjectInfo, ObjectSummary, PutOutput, Verification,
};
pub use upload::options::PutOptions;
pub use upload::writer::Upload;
