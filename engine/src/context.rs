//! What every operation of a client runs with: the object store, the admission gates, the
//! configuration, the runtime, the counters. [`crate::Client`] owns one; the download and
//! upload drivers get it and never see the client (the layers below the public API do not
//! import it).
//!
//! Generic over the [`ObjectClient`] so the drivers run on the in-memory mock in unit tests
//! and on [`S3`] everywhere else.

use std::sync::Arc;

use tokio::runtime::Handle;

use crate::config::ClientConfig;
use crate::download::hedge::PartLatency;
use crate::metrics::Metrics;
use crate::object_client::ObjectClient;
use crate::s3::S3;
use crate::scheduler::Scheduler;
use crate::task::Tracker;

/// State shared by a client and all its tasks.
#[derive(Debug)]
pub(crate) struct Context<C: ObjectClient = S3> {
    /// The object store every request goes to.
    pub(crate) store: C,
    pub(crate) scheduler: Scheduler,
    pub(crate) config: ClientConfig,
    /// The runtime the transfers run on.
    pub(crate) handle: Handle,
    pub(crate) metrics: Arc<Metrics>,
    /// Recent part durations, for hedging.
    pub(crate) part_latency: PartLatency,
    /// Transfers and clean-ups still running (see [`crate::Client::wait_for_background`]).
    pub(crate) background: Arc<Tracker>,
}

impl<C: ObjectClient> Context<C> {
    pub(crate) fn new(store: C, config: ClientConfig, handle: Handle, metrics: Arc<Metrics>) -> Self {
        let scheduler = Scheduler::new(config.max_connections, config.memory_limit_bytes);
        Context {
            store,
            scheduler,
            config,
            handle,
            metrics,
            part_latency: Default::default(),
            background: Default::default(),
        }
    }
}
