//! Counters a caller can read at any time ([`crate::Client::metrics`]); cheap relaxed atomics,
//! updated once per request or per body chunk, never under a lock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters of one client.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    bytes_downloaded: AtomicU64,
    bytes_uploaded: AtomicU64,
    requests: AtomicU64,
    retries: AtomicU64,
    connections_opened: AtomicU64,
    errors: AtomicU64,
}

/// Counters of one lane: a network interface or source address connections leave from
/// (`default` when none was configured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaneSnapshot {
    /// Interface name, source address, or `default`.
    pub name: String,
    /// Body bytes received on this lane's connections.
    pub bytes_downloaded: u64,
    /// Body bytes sent on this lane's connections.
    pub bytes_uploaded: u64,
    /// Connections opened from this lane.
    pub connections_opened: u64,
    /// Failed connect attempts from this lane.
    pub connect_errors: u64,
}

/// A point-in-time copy of a client's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    /// Body bytes received from the server (including bytes of attempts that later failed).
    pub bytes_downloaded: u64,
    /// Body bytes sent to the server (including attempts that later failed).
    pub bytes_uploaded: u64,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Requests that were attempts after a failure.
    pub retries: u64,
    /// TCP connections opened.
    pub connections_opened: u64,
    /// Request attempts that failed (retried or not).
    pub errors: u64,
    /// Per-lane counters, in configuration order (interfaces, then source addresses).
    pub lanes: Vec<LaneSnapshot>,
}

impl MetricsSnapshot {
    /// Counter-wise difference `self - earlier`, to measure one transfer on a shared client.
    pub fn since(&self, earlier: &MetricsSnapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            requests: self.requests - earlier.requests,
            retries: self.retries - earlier.retries,
            connections_opened: self.connections_opened - earlier.connections_opened,
            errors: self.errors - earlier.errors,
            lanes: self
                .lanes
                .iter()
                .zip(earlier.lanes.iter().chain(std::iter::repeat(&LaneSnapshot::default())))
                .map(|(now, then)| LaneSnapshot {
                    name: now.name.clone(),
                    bytes_downloaded: now.bytes_downloaded - then.bytes_downloaded,
                    bytes_uploaded: now.bytes_uploaded - then.bytes_uploaded,
                    connections_opened: now.connections_opened - then.connections_opened,
                    connect_errors: now.connect_errors - then.connect_errors,
                })
                .collect(),
        }
    }
}

impl Metrics {
    pub(crate) fn add_downloaded(&self, n: u64) {
        self.bytes_downloaded.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_uploaded(&self, n: u64) {
        self.bytes_uploaded.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_request(&self, retry: bool) {
        self.requests.fetch_add(1, Relaxed);
        if retry {
            self.retries.fetch_add(1, Relaxed);
        }
    }
    pub(crate) fn add_error(&self) {
        self.errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_connection_opened(&self) {
        self.connections_opened.fetch_add(1, Relaxed);
    }
    pub(crate) fn snapshot(&self, lanes: &crate::http::Lanes) -> MetricsSnapshot {
        MetricsSnapshot {
            bytes_downloaded: self.bytes_downloaded.load(Relaxed),
            bytes_uploaded: self.bytes_uploaded.load(Relaxed),
            requests: self.requests.load(Relaxed),
            retries: self.retries.load(Relaxed),
            connections_opened: self.connections_opened.load(Relaxed),
            errors: self.errors.load(Relaxed),
            lanes: lanes
                .all()
                .iter()
                .map(|l| LaneSnapshot {
                    name: l.name.clone(),
                    bytes_downloaded: l.bytes_downloaded.load(Relaxed),
                    bytes_uploaded: l.bytes_uploaded.load(Relaxed),
                    connections_opened: l.connections_opened.load(Relaxed),
                    connect_errors: l.errors.load(Relaxed),
                })
                .collect(),
        }
    }
}
