//! Counters a caller can read at any time ([`crate::Client::metrics`]); cheap relaxed atomics,
//! updated once per request or per body chunk, never under a lock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::checksum::S3ChecksumAlgorithm;
use crate::error::ErrorKind;
use crate::types::Verification;

/// Live counters of one client.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    bytes_downloaded: AtomicU64,
    download_bytes_expected: AtomicU64,
    bytes_uploaded: AtomicU64,
    requests: AtomicU64,
    retries: AtomicU64,
    connections_opened: AtomicU64,
    errors: AtomicU64,
    timeouts: AtomicU64,
    checksum_failures: AtomicU64,
    checksums_verified: AtomicU64,
    retry_budget_exhausted: AtomicU64,
    hedges_sent: AtomicU64,
    hedges_won: AtomicU64,
    retries_by_class: [AtomicU64; RETRY_CLASSES],
    downloads_verified: [AtomicU64; 5],
    downloads_not_verified: AtomicU64,
}

const RETRY_CLASSES: usize = 7;

/// Retries by the class of error that caused them, to tell throttling from broken networks
/// from a corrupting middlebox at a glance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryCounts {
    /// 503 SlowDown, 429 and other throttling answers.
    pub throttled: u64,
    /// 500 InternalError and other 5xx.
    pub server_error: u64,
    /// Connect, DNS or TLS set-up failures.
    pub connect: u64,
    /// Connections reset or closed mid-request.
    pub transport: u64,
    /// First-byte, idle, throughput-floor timeouts and S3's RequestTimeout.
    pub timeout: u64,
    /// Truncated bodies and answers that break the protocol.
    pub protocol: u64,
    /// Checksum mismatches (ours on downloads, the server's BadDigest on uploads).
    pub checksum: u64,
}

impl RetryCounts {
    fn from_array(a: [u64; RETRY_CLASSES]) -> Self {
        RetryCounts {
            throttled: a[0],
            server_error: a[1],
            connect: a[2],
            transport: a[3],
            timeout: a[4],
            protocol: a[5],
            checksum: a[6],
        }
    }
    fn to_array(self) -> [u64; RETRY_CLASSES] {
        [self.throttled, self.server_error, self.connect, self.transport, self.timeout, self.protocol, self.checksum]
    }
    /// The sum over all classes.
    pub fn total(&self) -> u64 {
        self.to_array().iter().sum()
    }
}

fn retry_class(kind: ErrorKind) -> Option<usize> {
    Some(match kind {
        ErrorKind::Throttled => 0,
        ErrorKind::ServerError => 1,
        ErrorKind::Connect => 2,
        ErrorKind::Transport => 3,
        ErrorKind::Timeout => 4,
        ErrorKind::Protocol => 5,
        ErrorKind::ChecksumMismatch => 6,
        _ => return None,
    })
}

/// Finished downloads by the checksum algorithm that verified them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChecksumCounts {
    /// Verified with CRC32.
    pub crc32: u64,
    /// Verified with CRC32C.
    pub crc32c: u64,
    /// Verified with CRC64NVME.
    pub crc64nvme: u64,
    /// Verified with SHA1.
    pub sha1: u64,
    /// Verified with SHA256.
    pub sha256: u64,
}

impl ChecksumCounts {
    fn from_array(a: [u64; 5]) -> Self {
        ChecksumCounts { crc32: a[0], crc32c: a[1], crc64nvme: a[2], sha1: a[3], sha256: a[4] }
    }
    fn to_array(self) -> [u64; 5] {
        [self.crc32, self.crc32c, self.crc64nvme, self.sha1, self.sha256]
    }
    /// The count for `algorithm`.
    pub fn get(&self, algorithm: S3ChecksumAlgorithm) -> u64 {
        self.to_array()[algorithm_index(algorithm)]
    }
    /// The sum over all algorithms.
    pub fn total(&self) -> u64 {
        self.to_array().iter().sum()
    }
}

fn algorithm_index(a: S3ChecksumAlgorithm) -> usize {
    match a {
        S3ChecksumAlgorithm::Crc32 => 0,
        S3ChecksumAlgorithm::Crc32c => 1,
        S3ChecksumAlgorithm::Crc64Nvme => 2,
        S3ChecksumAlgorithm::Sha1 => 3,
        S3ChecksumAlgorithm::Sha256 => 4,
    }
}

/// Counters of one lane: a network interface or source address connections leave from
/// (`default` when none was configured).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Body bytes received from the server (including bytes of attempts that later failed).
    pub bytes_downloaded: u64,
    /// Bytes the downloads begun so far are to deliver: each adds its object's size (or its
    /// range's length) as soon as its first answer says it. The total of a progress display,
    /// with no HEAD request spent to learn it.
    pub download_bytes_expected: u64,
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
    /// Request attempts that failed on a timeout (first byte, idle, throughput floor, deadline).
    pub timeouts: u64,
    /// Responses whose bytes did not match their checksum, and uploads the server rejected
    /// with `BadDigest`.
    pub checksum_failures: u64,
    /// Download responses whose bytes were checked against the server's checksum and matched.
    pub checksums_verified: u64,
    /// Finished downloads whose bytes were all verified, by algorithm (once per download,
    /// whatever its number of parts or reruns; see [`crate::Verification`]).
    pub downloads_verified: ChecksumCounts,
    /// Finished downloads whose bytes were not verified (any
    /// [`crate::NotVerifiedReason`]: no checksum stored, composite without part
    /// checksums, verification disabled, ranged read).
    pub downloads_not_verified: u64,
    /// Retries, by the class of the error that caused them.
    pub retries_by_class: RetryCounts,
    /// Retries refused because the client-wide retry budget was empty.
    pub retry_budget_exhausted: u64,
    /// Duplicate (hedge) requests sent for slow parts.
    pub hedges_sent: u64,
    /// Hedge requests that delivered the end of their part first.
    pub hedges_won: u64,
    /// Bytes of the memory budget reserved right now.
    pub memory_in_use_bytes: u64,
    /// The most bytes of the memory budget ever reserved at once.
    pub memory_peak_bytes: u64,
    /// Per-lane counters, in configuration order (interfaces, then source addresses).
    pub lanes: Vec<LaneSnapshot>,
    /// Credentials fetched from their source (the first fetch included).
    pub credential_refreshes: u64,
    /// Fetches of credentials that failed (the last good ones stayed in use if there were any).
    pub credential_refresh_failures: u64,
    /// Refreshes forced by the server refusing credentials as expired (`ExpiredToken`).
    pub credential_forced_refreshes: u64,
    /// S3 Express sessions created with CreateSession (first ones and renewals).
    pub express_sessions_created: u64,
    /// Of those, renewals of a held session: ahead of its expiry, or after a refusal.
    pub express_sessions_refreshed: u64,
    /// Sessions the server refused (expired, revoked), each replaced once.
    pub express_sessions_invalidated: u64,
    /// Requests to directory buckets signed with a session already held (no CreateSession).
    pub express_session_reuses: u64,
    /// What zero configuration detected on this EC2 instance and applied (the same as
    /// [`crate::ClientConfig::auto_config`]); `None` when it did not run.
    pub auto_config: Option<crate::AutoConfig>,
}

impl MetricsSnapshot {
    /// Counter-wise difference `self - earlier`, to measure one transfer on a shared client.
    pub fn since(&self, earlier: &MetricsSnapshot) -> MetricsSnapshot {
        MetricsSnapshot {
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
            download_bytes_expected: self.download_bytes_expected - earlier.download_bytes_expected,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            requests: self.requests - earlier.requests,
            retries: self.retries - earlier.retries,
            connections_opened: self.connections_opened - earlier.connections_opened,
            errors: self.errors - earlier.errors,
            timeouts: self.timeouts - earlier.timeouts,
            checksum_failures: self.checksum_failures - earlier.checksum_failures,
            checksums_verified: self.checksums_verified - earlier.checksums_verified,
            downloads_verified: {
                let (a, b) = (self.downloads_verified.to_array(), earlier.downloads_verified.to_array());
                ChecksumCounts::from_array(std::array::from_fn(|i| a[i] - b[i]))
            },
            downloads_not_verified: self.downloads_not_verified - earlier.downloads_not_verified,
            retries_by_class: {
                let (a, b) = (self.retries_by_class.to_array(), earlier.retries_by_class.to_array());
                RetryCounts::from_array(std::array::from_fn(|i| a[i] - b[i]))
            },
            retry_budget_exhausted: self.retry_budget_exhausted - earlier.retry_budget_exhausted,
            hedges_sent: self.hedges_sent - earlier.hedges_sent,
            hedges_won: self.hedges_won - earlier.hedges_won,
            memory_in_use_bytes: self.memory_in_use_bytes,
            memory_peak_bytes: self.memory_peak_bytes,
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
            credential_refreshes: self.credential_refreshes - earlier.credential_refreshes,
            credential_refresh_failures: self.credential_refresh_failures - earlier.credential_refresh_failures,
            credential_forced_refreshes: self.credential_forced_refreshes - earlier.credential_forced_refreshes,
            express_sessions_created: self.express_sessions_created - earlier.express_sessions_created,
            express_sessions_refreshed: self.express_sessions_refreshed - earlier.express_sessions_refreshed,
            express_sessions_invalidated: self.express_sessions_invalidated - earlier.express_sessions_invalidated,
            express_session_reuses: self.express_session_reuses - earlier.express_session_reuses,
            auto_config: self.auto_config.clone(),
        }
    }
}

impl Metrics {
    pub(crate) fn add_downloaded(&self, n: u64) {
        self.bytes_downloaded.fetch_add(n, Relaxed);
    }
    pub(crate) fn add_download_expected(&self, n: u64) {
        self.download_bytes_expected.fetch_add(n, Relaxed);
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
    /// Records a failed attempt of kind `kind`, and whether it will be retried.
    pub(crate) fn add_failure(&self, kind: ErrorKind, retried: bool) {
        match kind {
            ErrorKind::Timeout => self.timeouts.fetch_add(1, Relaxed),
            ErrorKind::ChecksumMismatch => self.checksum_failures.fetch_add(1, Relaxed),
            _ => 0,
        };
        if let (true, Some(class)) = (retried, retry_class(kind)) {
            self.retries_by_class[class].fetch_add(1, Relaxed);
        }
    }
    pub(crate) fn add_verified(&self) {
        self.checksums_verified.fetch_add(1, Relaxed);
    }
    /// Records how a finished download was verified.
    pub(crate) fn add_download_verification(&self, v: &Verification) {
        match v.algorithm() {
            Some(a) => self.downloads_verified[algorithm_index(a)].fetch_add(1, Relaxed),
            None => self.downloads_not_verified.fetch_add(1, Relaxed),
        };
    }
    pub(crate) fn add_budget_exhausted(&self) {
        self.retry_budget_exhausted.fetch_add(1, Relaxed);
    }
    pub(crate) fn add_hedge(&self, won: bool) {
        if won {
            self.hedges_won.fetch_add(1, Relaxed);
        } else {
            self.hedges_sent.fetch_add(1, Relaxed);
        }
    }
    pub(crate) fn add_connection_opened(&self) {
        self.connections_opened.fetch_add(1, Relaxed);
    }
    pub(crate) fn snapshot(
        &self,
        lanes: &crate::http::Lanes,
        memory: &crate::buffer_pool::BufferPool,
        credentials: Option<&crate::credentials::cache::CredentialsCache>,
    ) -> MetricsSnapshot {
        let cred = credentials.map(|c| c.stats()).unwrap_or_default();
        MetricsSnapshot {
            credential_refreshes: cred.refreshes,
            credential_refresh_failures: cred.failures,
            credential_forced_refreshes: cred.forced,
            // Filled by the client, which holds the sessions.
            express_sessions_created: 0,
            express_sessions_refreshed: 0,
            express_sessions_invalidated: 0,
            express_session_reuses: 0,
            bytes_downloaded: self.bytes_downloaded.load(Relaxed),
            download_bytes_expected: self.download_bytes_expected.load(Relaxed),
            bytes_uploaded: self.bytes_uploaded.load(Relaxed),
            requests: self.requests.load(Relaxed),
            retries: self.retries.load(Relaxed),
            connections_opened: self.connections_opened.load(Relaxed),
            errors: self.errors.load(Relaxed),
            timeouts: self.timeouts.load(Relaxed),
            checksum_failures: self.checksum_failures.load(Relaxed),
            checksums_verified: self.checksums_verified.load(Relaxed),
            downloads_verified: ChecksumCounts::from_array(std::array::from_fn(|i| {
                self.downloads_verified[i].load(Relaxed)
            })),
            downloads_not_verified: self.downloads_not_verified.load(Relaxed),
            retries_by_class: RetryCounts::from_array(std::array::from_fn(|i| self.retries_by_class[i].load(Relaxed))),
            retry_budget_exhausted: self.retry_budget_exhausted.load(Relaxed),
            hedges_sent: self.hedges_sent.load(Relaxed),
            hedges_won: self.hedges_won.load(Relaxed),
            memory_in_use_bytes: memory.in_use_bytes(),
            memory_peak_bytes: memory.peak_bytes(),
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
            auto_config: None,
        }
    }
}
