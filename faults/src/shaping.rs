//! S3-like latency and bandwidth shaping, so benchmarks against the fault server see the
//! per-request and per-connection limits that make real S3 clients parallelise.

use std::time::Duration;

/// Shaping applied to every object read (independent of fault rules).
#[derive(Debug, Clone, Copy, Default)]
pub struct Shaping {
    /// Delay before the response head of every GetObject/HeadObject (S3's time to first byte).
    pub first_byte_delay: Duration,
    /// Cap on each connection's GET body rate in bytes/s (S3 Standard gives roughly 25 MB/s per
    /// connection); None = unlimited. HTTP/1.1 serves one request at a time per connection, so
    /// pacing each GetObject body at the cap is the same as capping the connection.
    pub conn_rate_bytes_per_sec: Option<u64>,
}

impl Shaping {
    /// No shaping at all (the default): loopback speed, immediate answers.
    pub fn none() -> Shaping {
        Shaping::default()
    }

    /// Roughly S3 Standard as seen from one EC2 instance: 20 ms first byte, 25 MB/s per
    /// connection; a convenient preset for benchmarks.
    pub fn s3_like() -> Shaping {
        Shaping { first_byte_delay: Duration::from_millis(20), conn_rate_bytes_per_sec: Some(25_000_000) }
    }
}
