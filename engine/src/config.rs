//! Client configuration: one consuming builder, validated once in [`ClientConfigBuilder::build`].
//!
//! Every knob has a default a user would expect from a production S3 client, with units in the
//! names. The environment is read only where the AWS tools read it too (`AWS_REGION`,
//! `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, credentials), so a program behaves the same as
//! the AWS CLI would on the same machine.

use std::time::Duration;

use crate::autoconfig::{AutoConfig, Wanted};
use crate::checksum::{ChecksumAlgorithm, ChecksumUpload};
use crate::credentials::CredentialsSource;
use crate::error::{Error, Operation, Result};
use crate::http::proxy::ProxyRules;
pub use crate::http::trust::TlsTrust;

/// 1 MiB, the unit S3 sizes are usually given in.
pub const MIB: u64 = 1024 * 1024;

/// S3's smallest part size for every part but the last.
pub const MIN_PART_SIZE: u64 = 5 * MIB;
/// S3's largest part size.
pub const MAX_PART_SIZE: u64 = 5 * 1024 * MIB;
/// S3's maximum number of parts in one multipart upload.
pub const MAX_PARTS: u64 = 10_000;
/// Default [`ClientConfigBuilder::copy_threshold_bytes`]: the CRT's (aws-c-s3) 1 GiB.
pub(crate) const DEFAULT_COPY_THRESHOLD: u64 = 1024 * MIB;
/// Default [`ClientConfigBuilder::copy_part_size_bytes`]: the CRT's 128 MiB.
pub(crate) const DEFAULT_COPY_PART_SIZE: u64 = 128 * MIB;

/// How a request names its bucket: in the host name or in the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Addressing {
    /// Virtual-hosted for AWS endpoints; path-style for every other endpoint (IP addresses,
    /// `localhost`, `http://minio:9000`), because `bucket.minio` does not resolve there.
    #[default]
    Auto,
    /// `https://host/bucket/key`.
    PathStyle,
    /// `https://bucket.host/key`.
    VirtualHosted,
}

/// Which SHA-256 the request signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PayloadSigning {
    /// `UNSIGNED-PAYLOAD`: no hash of the body; saves a SHA-256 pass over every byte. TLS
    /// protects integrity on https; over plain http the body is unprotected (as with the CRT).
    #[default]
    Unsigned,
    /// Hash every body and sign the hash. Costs CPU; required by some stores on plain http.
    Signed,
}

/// What an S3 Express One Zone session may do (`x-amz-create-session-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExpressSessionMode {
    /// Read and write (the default, what uploads need).
    #[default]
    ReadWrite,
    /// Read only: a session that cannot write, for readers that hold no write permission
    /// (`s3express:CreateSession` with `ReadOnly` in their policy). Writes fail with 403.
    ReadOnly,
}

/// Timeouts. Each one is honoured; none is infinite by default, so nothing hangs forever.
///
/// `#[non_exhaustive]`: start from [`Timeouts::default`] and use the setters, so a new
/// timeout does not break callers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timeouts {
    /// TCP connect to one server address.
    pub connect: Duration,
    /// TLS handshake on a new connection (https endpoints), after the TCP connect.
    pub tls_handshake: Duration,
    /// From the request being sent to the response head arriving (time to first byte). Applies
    /// to GETs too: a server that accepts a request and never answers must not hang a download.
    pub first_byte: Duration,
    /// Longest gap with no body bytes arriving or leaving before the request is abandoned.
    pub read_idle: Duration,
    /// A response body slower than this many bytes per second, averaged over
    /// [`Timeouts::min_throughput_window`], is abandoned and resumed on another connection.
    /// Catches the trickle that keeps a connection alive below any useful rate, which the
    /// idle timeout cannot see. 0 disables the check.
    pub min_throughput_bytes_per_sec: u64,
    /// The averaging window of the throughput floor.
    pub min_throughput_window: Duration,
    /// Idle pooled connections older than this are closed instead of reused (servers close
    /// idle keep-alive connections, and a reused dead one costs a retry).
    pub pool_idle: Duration,
    /// Deadline for a whole transfer (a download, an upload, one listing page), retries
    /// included. `None` (the default): only the per-request timeouts above bound it.
    pub operation: Option<Duration>,
    /// Until the endpoint has answered this client once, the total time spent waiting on it
    /// without any answer (connecting, sending, waiting for a response head), summed over
    /// attempts and requests. Reaching it fails the request with a final
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) saying "no response from
    /// <endpoint> in N s over K attempts", instead of every request spending its full
    /// timeouts on every attempt. Each such attempt waits at most a quarter of it (the first
    /// two) or half of it (later ones). After the endpoint's first answer, of any status, the
    /// regular timeouts and retries apply. Default 20 s; zero turns the bound off.
    pub no_response: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            tls_handshake: Duration::from_secs(10),
            first_byte: Duration::from_secs(30),
            read_idle: Duration::from_secs(30),
            // 8 KiB/s is far below any real S3 connection (tens of MB/s) yet above a stuck
            // trickle; a slow link shared by many connections stays well clear of it.
            min_throughput_bytes_per_sec: 8 * 1024,
            min_throughput_window: Duration::from_secs(20),
            pool_idle: Duration::from_secs(15),
            operation: None,
            // A silent endpoint fails in 20 s over 3 attempts (5 + 5 + 10 s) rather than
            // 5 x 30 s per request: an endpoint that accepted connections and never said a
            // word is almost always a wrong address, not a slow S3.
            no_response: Duration::from_secs(20),
        }
    }
}

/// Retry policy for each request (a GET part, an UploadPart, ...). Built from
/// [`RetryConfig::default`] with the setters (`#[non_exhaustive]`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Attempts per request, including the first one. 1 disables retries.
    pub max_attempts: u32,
    /// Backoff base: the first retry waits up to this long (full jitter).
    pub initial_backoff: Duration,
    /// Cap for a single backoff wait.
    pub max_backoff: Duration,
    /// Size of the client-wide retry token bucket. A retry costs 5 tokens (10 after a
    /// timeout; nothing for the immediate retry after a lone connection fault), a success
    /// returns what its retries took (or 1 token for a first-attempt success). An empty
    /// bucket means the endpoint is failing broadly: requests then fail instead of retrying,
    /// so a sick endpoint is not hammered. 0 disables the bucket.
    pub budget_tokens: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(20),
            // The AWS SDKs' standard retry mode uses the same bucket size and costs.
            budget_tokens: 500,
        }
    }
}

/// Hedged part requests: a part much slower than its peers gets a duplicate request on
/// another connection; whichever delivers the next bytes first wins, byte by byte, so
/// nothing is fetched into extra memory and nothing is delivered twice.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Hedging {
    /// Off by default: see BENCHMARKS.md for when it pays.
    pub enabled: bool,
    /// A part is slow when it has run longer than this multiple of the running p95 of
    /// completed part durations.
    pub latency_factor: f64,
    /// Never hedge a part before it has run this long (and before 20 parts completed).
    pub min_delay: Duration,
}

impl Default for Hedging {
    fn default() -> Self {
        Hedging { enabled: false, latency_factor: 2.0, min_delay: Duration::from_millis(500) }
    }
}

/// End-to-end checksums. See [`ChecksumUpload`] for why the default is a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Checksums {
    /// The CRC sent with uploads.
    pub algorithm: ChecksumAlgorithm,
    /// How (and whether) uploads carry it.
    pub upload: ChecksumUpload,
    /// Ask for (`x-amz-checksum-mode: ENABLED`) and verify checksums on downloads. A mismatch
    /// is retried, then reported; corrupted bytes are never returned as a success.
    pub verify_downloads: bool,
}

impl Default for Checksums {
    fn default() -> Self {
        Checksums { algorithm: ChecksumAlgorithm::Crc64Nvme, upload: ChecksumUpload::Header, verify_downloads: true }
    }
}

/// By-value setters named after the fields, for the `#[non_exhaustive]` settings structs:
/// `Timeouts::default().first_byte(Duration::from_secs(5))`.
macro_rules! setters {
    ($ty:ident { $($field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("Sets [`", stringify!($ty), "::", stringify!($field), "`].")]
                #[must_use]
                pub fn $field(mut self, value: $t) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters!(Timeouts {
    connect: Duration,
    tls_handshake: Duration,
    first_byte: Duration,
    read_idle: Duration,
    min_throughput_bytes_per_sec: u64,
    min_throughput_window: Duration,
    pool_idle: Duration,
    operation: Option<Duration>,
    no_response: Duration,
});
setters!(RetryConfig { max_attempts: u32, initial_backoff: Duration, max_backoff: Duration, budget_tokens: u32 });
setters!(Hedging { enabled: bool, latency_factor: f64, min_delay: Duration });
setters!(Checksums { algorithm: ChecksumAlgorithm, upload: ChecksumUpload, verify_downloads: bool });

/// A validated client configuration. Build it with [`ClientConfig::builder`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub(crate) region: String,
    pub(crate) endpoint: Option<Endpoint>,
    pub(crate) addressing: Addressing,
    pub(crate) credentials: CredentialsSource,
    pub(crate) part_size_bytes: u64,
    pub(crate) multipart_threshold_bytes: u64,
    pub(crate) copy_threshold_bytes: u64,
    pub(crate) copy_part_size_bytes: u64,
    pub(crate) max_connections: usize,
    pub(crate) memory_limit_bytes: u64,
    pub(crate) read_window_bytes: u64,
    pub(crate) payload_signing: PayloadSigning,
    pub(crate) timeouts: Timeouts,
    pub(crate) retry: RetryConfig,
    pub(crate) hedging: Hedging,
    pub(crate) checksums: Checksums,
    pub(crate) worker_threads: usize,
    pub(crate) tcp_recv_buffer_bytes: Option<usize>,
    pub(crate) tcp_send_buffer_bytes: Option<usize>,
    pub(crate) network_interfaces: Vec<String>,
    pub(crate) bind_addresses: Vec<std::net::IpAddr>,
    pub(crate) tls: TlsTrust,
    pub(crate) proxy: ProxyRules,
    pub(crate) auto_config: Option<AutoConfig>,
    /// Sign directory-bucket requests with S3 Express sessions (see `s3::express`).
    pub(crate) express_session_auth: bool,
    pub(crate) express_session_mode: ExpressSessionMode,
}

/// A parsed endpoint URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: String,
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// Explicit or scheme-default port.
    pub port: u16,
}

impl Endpoint {
    /// Parses `http(s)://host[:port][/]`.
    pub fn parse(url: &str) -> Result<Endpoint> {
        let bad = |why: &str| Error::invalid(Operation::Config, format!("endpoint URL {url:?}: {why}"));
        let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
        let scheme = uri.scheme_str().ok_or_else(|| bad("missing http:// or https://"))?;
        if scheme != "http" && scheme != "https" {
            return Err(bad("scheme must be http or https"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(bad("must not have a path or query"));
        }
        let host = uri.host().ok_or_else(|| bad("missing host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = uri.port_u16().unwrap_or(if scheme == "https" { 443 } else { 80 });
        Ok(Endpoint { scheme: scheme.to_string(), host, port })
    }

    /// Whether the host is an IP literal or `localhost` (no virtual-hosted addressing there).
    pub fn is_ip_or_localhost(&self) -> bool {
        self.host.parse::<std::net::IpAddr>().is_ok() || self.host.eq_ignore_ascii_case("localhost")
    }

    /// Whether this is one of AWS's own S3 host names, where virtual-hosted addressing is the
    /// norm. Any other host (`minio:9000`, a Kubernetes service, an on-prem appliance) may not
    /// resolve `bucket.host`, so it gets path-style requests, as boto3 and awscli send there.
    pub fn is_aws(&self) -> bool {
        let h = self.host.to_ascii_lowercase();
        h.ends_with(".amazonaws.com") || h.ends_with(".amazonaws.com.cn")
    }
}

impl ClientConfig {
    /// A builder preloaded with defaults and the standard AWS environment variables.
    pub fn builder() -> ClientConfigBuilder {
        ClientConfigBuilder::default()
    }

    /// Region used for signing.
    pub fn region(&self) -> &str {
        &self.region
    }
    /// The endpoint, or `None` for AWS's regional endpoint.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }
    /// Part size for ranged GETs and the base part size of uploads.
    pub fn part_size_bytes(&self) -> u64 {
        self.part_size_bytes
    }
    /// Upper bound on concurrent requests (and so on open connections).
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }
    /// Hard cap on bytes held in part buffers.
    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_bytes
    }
    /// The timeouts in force.
    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }
    /// The retry policy in force.
    pub fn retry(&self) -> &RetryConfig {
        &self.retry
    }
    /// The checksum settings in force.
    pub fn checksums(&self) -> Checksums {
        self.checksums
    }
    /// Which TLS certificates are trusted (with the environment and profile applied).
    pub fn tls_trust(&self) -> &TlsTrust {
        &self.tls
    }
    /// Network interfaces connections are spread across (explicit or detected); empty when
    /// the OS routes every connection.
    pub fn network_interfaces(&self) -> &[String] {
        &self.network_interfaces
    }
    /// What zero configuration detected on this EC2 instance and applied, or `None` when it
    /// did not run (off EC2, IMDS disabled or silent, `auto_config(false)`,
    /// `ignore_environment()`, or everything it could fill was set explicitly).
    pub fn auto_config(&self) -> Option<&AutoConfig> {
        self.auto_config.as_ref()
    }
}

/// Builder for [`ClientConfig`]. Setters consume and return the builder.
#[derive(Debug, Clone)]
#[must_use]
pub struct ClientConfigBuilder {
    region: Option<String>,
    endpoint_url: Option<String>,
    addressing: Addressing,
    credentials: CredentialsSource,
    part_size_bytes: u64,
    multipart_threshold_bytes: Option<u64>,
    copy_threshold_bytes: u64,
    copy_part_size_bytes: u64,
    throughput_target_gbps: Option<f64>,
    max_connections: Option<usize>,
    memory_limit_bytes: u64,
    read_window_bytes: Option<u64>,
    payload_signing: PayloadSigning,
    timeouts: Timeouts,
    retry: RetryConfig,
    hedging: Hedging,
    checksums: Checksums,
    worker_threads: Option<usize>,
    tcp_recv_buffer_bytes: Option<usize>,
    tcp_send_buffer_bytes: Option<usize>,
    network_interfaces: Vec<String>,
    bind_addresses: Vec<std::net::IpAddr>,
    tls: TlsTrust,
    proxy: Option<String>,
    no_proxy: Option<String>,
    read_env: bool,
    auto_config: bool,
    express_session_auth: Option<bool>,
    express_session_mode: ExpressSessionMode,
}

impl Default for ClientConfigBuilder {
    fn default() -> Self {
        ClientConfigBuilder {
            region: None,
            endpoint_url: None,
            addressing: Addressing::Auto,
            credentials: CredentialsSource::Default { profile: None },
            part_size_bytes: 8 * MIB,
            multipart_threshold_bytes: None,
            copy_threshold_bytes: DEFAULT_COPY_THRESHOLD,
            copy_part_size_bytes: DEFAULT_COPY_PART_SIZE,
            throughput_target_gbps: None,
            max_connections: None,
            memory_limit_bytes: 2048 * MIB,
            read_window_bytes: None,
            payload_signing: PayloadSigning::Unsigned,
            timeouts: Timeouts::default(),
            retry: RetryConfig::default(),
            hedging: Hedging::default(),
            checksums: Checksums::default(),
            worker_threads: None,
            tcp_recv_buffer_bytes: None,
            tcp_send_buffer_bytes: None,
            network_interfaces: Vec::new(),
            bind_addresses: Vec::new(),
            tls: TlsTrust::default(),
            proxy: None,
            no_proxy: None,
            read_env: true,
            auto_config: true,
            express_session_auth: None,
            express_session_mode: ExpressSessionMode::ReadWrite,
        }
    }
}

/// Connections per Gbit/s of target throughput: one S3 connection sustains roughly
/// 400 Mbit/s, the same planning figure the CRT uses (10 connections per 4 Gbit/s).
const CONNECTIONS_PER_GBPS: f64 = 2.5;

/// The throughput target when none is set or detected.
pub(crate) const DEFAULT_THROUGHPUT_TARGET_GBPS: f64 = 10.0;

impl ClientConfigBuilder {
    /// Signing region. Default: `AWS_REGION`, `AWS_DEFAULT_REGION`, else `us-east-1`.
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }
    /// Turns S3 Express One Zone sessions off: requests to directory buckets
    /// (`<base>--<az-id>--x-s3`) are then signed with the client's own credentials (for
    /// `s3express`) instead of a session from CreateSession. The AWS SDKs' setting of the same
    /// name. Default: false (sessions on), unless `AWS_S3_DISABLE_EXPRESS_SESSION_AUTH=true` or
    /// the profile's `s3_disable_express_session_auth = true`.
    pub fn disable_s3_express_session_auth(mut self, disable: bool) -> Self {
        self.express_session_auth = Some(!disable);
        self
    }
    /// The mode of S3 Express sessions. Default: [`ExpressSessionMode::ReadWrite`].
    pub fn s3_express_session_mode(mut self, mode: ExpressSessionMode) -> Self {
        self.express_session_mode = mode;
        self
    }
    /// Endpoint URL such as `http://127.0.0.1:9000`. Default: `AWS_ENDPOINT_URL_S3`, then
    /// `AWS_ENDPOINT_URL`, then the profile's `endpoint_url`, else the AWS regional endpoint.
    pub fn endpoint_url(mut self, url: impl Into<String>) -> Self {
        self.endpoint_url = Some(url.into());
        self
    }
    /// Path-style or virtual-hosted requests. Default [`Addressing::Auto`].
    pub fn addressing(mut self, addressing: Addressing) -> Self {
        self.addressing = addressing;
        self
    }
    /// Where credentials come from. Default: environment, then `~/.aws` profile files.
    pub fn credentials(mut self, source: CredentialsSource) -> Self {
        self.credentials = source;
        self
    }
    /// Part size in bytes (5 MiB to 5 GiB). Default 8 MiB, like the CRT.
    pub fn part_size_bytes(mut self, bytes: u64) -> Self {
        self.part_size_bytes = bytes;
        self
    }
    /// Uploads larger than this use multipart. Default: the part size.
    pub fn multipart_threshold_bytes(mut self, bytes: u64) -> Self {
        self.multipart_threshold_bytes = Some(bytes);
        self
    }
    /// Server-side copies of objects up to this size are one CopyObject; larger ones are
    /// parallel UploadPartCopy parts. Default 1 GiB, as the CRT: a copy moves no bytes through
    /// the client, so parts only pay off where one CopyObject would take long (S3 copies one
    /// at roughly 100-300 MB/s). At most 5 GiB, CopyObject's own limit.
    pub fn copy_threshold_bytes(mut self, bytes: u64) -> Self {
        self.copy_threshold_bytes = bytes;
        self
    }
    /// Part size of a multipart server-side copy (5 MiB to 5 GiB), grown like an upload's to
    /// stay within 10,000 parts. Default 128 MiB, as the CRT: each part is one request and
    /// no buffer, so large parts cost nothing here.
    pub fn copy_part_size_bytes(mut self, bytes: u64) -> Self {
        self.copy_part_size_bytes = bytes;
        self
    }
    /// Target throughput that sizes the connection count (2.5 connections per Gbit/s).
    /// Default: on EC2, the instance type's sustained network bandwidth (see
    /// [`Self::auto_config`]), else 10 Gbit/s (25 connections).
    pub fn throughput_target_gbps(mut self, gbps: f64) -> Self {
        self.throughput_target_gbps = Some(gbps);
        self
    }
    /// Explicit cap on concurrent requests/connections; overrides the throughput target.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = Some(n);
        self
    }
    /// Hard cap on bytes held in part buffers across all transfers. Default 2 GiB.
    pub fn memory_limit_bytes(mut self, bytes: u64) -> Self {
        self.memory_limit_bytes = bytes;
        self
    }
    /// How far an in-order stream may run ahead of its reader. Default: 16 parts, at most
    /// the memory limit.
    pub fn read_window_bytes(mut self, bytes: u64) -> Self {
        self.read_window_bytes = Some(bytes);
        self
    }
    /// Whether to sign payload hashes. Default [`PayloadSigning::Unsigned`].
    pub fn payload_signing(mut self, signing: PayloadSigning) -> Self {
        self.payload_signing = signing;
        self
    }
    /// All timeouts at once.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }
    /// Retry policy.
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }
    /// Hedged part requests.
    pub fn hedging(mut self, hedging: Hedging) -> Self {
        self.hedging = hedging;
        self
    }
    /// Upload checksums and download verification.
    pub fn checksums(mut self, checksums: Checksums) -> Self {
        self.checksums = checksums;
        self
    }
    /// Threads of the engine's own runtime. Default: the number of CPUs.
    pub fn worker_threads(mut self, n: usize) -> Self {
        self.worker_threads = Some(n);
        self
    }
    /// `SO_RCVBUF` for new sockets; default: the kernel's autotuning.
    pub fn tcp_recv_buffer_bytes(mut self, bytes: usize) -> Self {
        self.tcp_recv_buffer_bytes = Some(bytes);
        self
    }
    /// `SO_SNDBUF` for new sockets; default: the kernel's autotuning.
    pub fn tcp_send_buffer_bytes(mut self, bytes: usize) -> Self {
        self.tcp_send_buffer_bytes = Some(bytes);
        self
    }
    /// Network interfaces to spread connections across, by name (`SO_BINDTODEVICE`, like the
    /// CRT's `network_interface_names`). Default: on an EC2 instance with several network
    /// cards, one interface per card (see [`Self::auto_config`]); else empty, and the OS
    /// routes every connection.
    pub fn network_interfaces<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.network_interfaces = names.into_iter().map(Into::into).collect();
        self
    }
    /// Local source addresses to spread connections across (each connection binds to one).
    /// Combine with policy routing (`ip rule from ADDR`) so each address leaves through its NIC.
    pub fn bind_addresses(mut self, addrs: impl IntoIterator<Item = std::net::IpAddr>) -> Self {
        self.bind_addresses = addrs.into_iter().collect();
        self
    }
    /// A PEM file of CA certificates to trust instead of the system's (private CAs: on-prem
    /// MinIO or Ceph, a TLS-inspecting proxy). Default: `AWS_CA_BUNDLE`, the profile's
    /// `ca_bundle`, else the system trust store.
    pub fn ca_bundle(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.tls.ca_bundle = Some(path.into());
        self
    }
    /// `false` turns TLS certificate verification off, for test clusters with throwaway
    /// certificates only: anyone on the path can then read and change the traffic. A warning
    /// is logged every time such a client is built. Default `true`.
    pub fn tls_verify(mut self, verify: bool) -> Self {
        self.tls.insecure_skip_verify = !verify;
        self
    }
    /// A forward proxy (`http://[user:password@]host:port`) for every connection, winning over
    /// `HTTPS_PROXY` / `HTTP_PROXY`. https targets go through a CONNECT tunnel.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }
    /// Targets that bypass the proxy (`NO_PROXY` syntax: `*`, host suffixes, IPs, CIDRs,
    /// comma-separated), winning over `NO_PROXY`.
    pub fn no_proxy(mut self, list: impl Into<String>) -> Self {
        self.no_proxy = Some(list.into());
        self
    }
    pub(crate) fn credentials_source(&self) -> &CredentialsSource {
        &self.credentials
    }
    pub(crate) fn timeouts_mut(&mut self) -> &mut Timeouts {
        &mut self.timeouts
    }
    pub(crate) fn retry_mut(&mut self) -> &mut RetryConfig {
        &mut self.retry
    }
    pub(crate) fn hedging_mut(&mut self) -> &mut Hedging {
        &mut self.hedging
    }
    pub(crate) fn checksums_mut(&mut self) -> &mut Checksums {
        &mut self.checksums
    }
    pub(crate) fn interfaces_mut(&mut self) -> &mut Vec<String> {
        &mut self.network_interfaces
    }
    pub(crate) fn bind_addresses_mut(&mut self) -> &mut Vec<std::net::IpAddr> {
        &mut self.bind_addresses
    }
    /// Ignore `AWS_*` environment variables for region and endpoint (tests, embedding). Also
    /// turns [`Self::auto_config`] off: it reads the environment and the machine.
    pub fn ignore_environment(mut self) -> Self {
        self.read_env = false;
        self
    }
    /// Zero configuration on EC2. Default `true`: when IMDS is enabled (not
    /// `AWS_EC2_METADATA_DISABLED`) and this is an EC2 instance (or
    /// `AWS_EC2_METADATA_SERVICE_ENDPOINT` names an IMDS), `build` asks IMDS once for the
    /// instance type and network cards, and fills in what was not set explicitly: the
    /// throughput target from the instance type's sustained bandwidth, and one NIC lane per
    /// network card (as [`Self::network_interfaces`] would set them). Explicit settings always
    /// win; with the throughput target (or a connection cap) and the lanes all set, IMDS is
    /// not asked at all. What was detected: [`ClientConfig::auto_config`]. `false` turns it off.
    pub fn auto_config(mut self, enabled: bool) -> Self {
        self.auto_config = enabled;
        self
    }

    /// Validates everything once and derives the connection count.
    pub fn build(self) -> Result<ClientConfig> {
        let bad = |m: String| Error::invalid(Operation::Config, m);
        let env = |k: &str| {
            if self.read_env {
                std::env::var(k).ok().filter(|v| !v.is_empty())
            } else {
                None
            }
        };
        let profile = match &self.credentials {
            CredentialsSource::Default { profile } => profile.as_deref(),
            _ => None,
        };
        // The profile's settings, read once (they are the fallback of several settings).
        let from_profile =
            if self.read_env { crate::credentials::profile_settings(profile) } else { Default::default() };
        let profile_value = |key: &str| from_profile.get(key).cloned();
        // As the SDKs: explicit, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
        // endpoint_url.
        let endpoint_url = self
            .endpoint_url
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .or_else(|| profile_value("endpoint_url"));
        // The SDKs' region chain: explicit, AWS_REGION, AWS_DEFAULT_REGION, the profile's
        // region, then (for AWS endpoints only) the instance's placement region from IMDS.
        let region = self
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .or_else(|| profile_value("region"))
            .or_else(|| (self.read_env && endpoint_url.is_none()).then(crate::credentials::imds_region).flatten())
            .unwrap_or_else(|| "us-east-1".to_string());
        let endpoint = endpoint_url.as_deref().map(Endpoint::parse).transpose()?;
        // As the SDKs: explicit, AWS_S3_DISABLE_EXPRESS_SESSION_AUTH, the profile's
        // s3_disable_express_session_auth; on by default.
        let express_session_auth = match self.express_session_auth {
            Some(on) => on,
            None => {
                let disabled = env("AWS_S3_DISABLE_EXPRESS_SESSION_AUTH")
                    .or_else(|| profile_value("s3_disable_express_session_auth"));
                !disabled.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
            }
        };
        // Zero configuration on EC2, for what is still unset (explicit settings win).
        let wanted = Wanted {
            throughput: self.throughput_target_gbps.is_none() && self.max_connections.is_none(),
            lanes: self.network_interfaces.is_empty() && self.bind_addresses.is_empty(),
        };
        let auto_config = (self.auto_config && self.read_env && (wanted.throughput || wanted.lanes))
            .then(|| crate::autoconfig::detect(wanted))
            .flatten();
        let detected = auto_config.as_ref();
        let throughput_target_gbps = self
            .throughput_target_gbps
            .or_else(|| detected.and_then(|a| a.throughput_target_gbps))
            .unwrap_or(DEFAULT_THROUGHPUT_TARGET_GBPS);
        let network_interfaces = match detected {
            Some(a) if wanted.lanes && !a.network_interfaces.is_empty() => a.network_interfaces.clone(),
            _ => self.network_interfaces.clone(),
        };
        if !(MIN_PART_SIZE..=MAX_PART_SIZE).contains(&self.part_size_bytes) {
            return Err(bad(format!("part size {} must be between 5 MiB and 5 GiB", self.part_size_bytes)));
        }
        if !(MIN_PART_SIZE..=MAX_PART_SIZE).contains(&self.copy_part_size_bytes) {
            return Err(bad(format!("copy part size {} must be between 5 MiB and 5 GiB", self.copy_part_size_bytes)));
        }
        if self.copy_threshold_bytes > MAX_PART_SIZE {
            return Err(bad(format!(
                "copy threshold {} is above 5 GiB, the largest object one CopyObject can copy",
                self.copy_threshold_bytes
            )));
        }
        let max_connections = match self.max_connections {
            Some(0) => return Err(bad("max connections must be at least 1".into())),
            Some(n) => n,
            None => {
                let g = throughput_target_gbps;
                if !(g.is_finite() && g > 0.0) {
                    return Err(bad(format!("target throughput {g} Gbit/s must be positive")));
                }
                ((g * CONNECTIONS_PER_GBPS).ceil() as usize).max(1)
            }
        };
        if self.memory_limit_bytes < self.part_size_bytes {
            return Err(bad(format!(
                "memory limit {} is below the part size {}: no part could ever be admitted",
                self.memory_limit_bytes, self.part_size_bytes
            )));
        }
        let read_window_bytes = self
            .read_window_bytes
            .unwrap_or(16 * self.part_size_bytes)
            .clamp(self.part_size_bytes, self.memory_limit_bytes);
        if let CredentialsSource::Static(c) = &self.credentials {
            if c.access_key_id.is_empty() || c.secret_access_key.is_empty() {
                return Err(bad("access_key_id and secret_access_key must be set together".into()));
            }
        }
        if self.retry.max_attempts == 0 {
            return Err(bad("retry max attempts must be at least 1".into()));
        }
        if self.timeouts.min_throughput_bytes_per_sec > 0 && self.timeouts.min_throughput_window.is_zero() {
            return Err(bad("the throughput floor needs a non-zero averaging window".into()));
        }
        if self.timeouts.operation.is_some_and(|d| d.is_zero()) {
            return Err(bad("the operation deadline must be positive".into()));
        }
        if !(self.hedging.latency_factor.is_finite() && self.hedging.latency_factor >= 1.0) {
            return Err(bad(format!("hedging latency factor {} must be at least 1", self.hedging.latency_factor)));
        }
        if self.worker_threads == Some(0) {
            return Err(bad("worker threads must be at least 1".into()));
        }
        for name in &network_interfaces {
            check_interface(name).map_err(bad)?;
        }
        for ip in &self.bind_addresses {
            if let Err(e) = std::net::UdpSocket::bind((*ip, 0)) {
                return Err(bad(format!("cannot bind to source address {ip}: {e} (is it an address of this host?)")));
            }
        }
        let mut tls = self.tls.clone();
        if tls.ca_bundle.is_none() {
            tls.ca_bundle = env("AWS_CA_BUNDLE").or_else(|| profile_value("ca_bundle")).map(Into::into);
        }
        let proxy = ProxyRules::new(self.proxy.as_deref(), self.no_proxy.as_deref(), |k| {
            if self.read_env {
                std::env::var(k).ok()
            } else {
                None
            }
        })?;
        let worker_threads =
            self.worker_threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        Ok(ClientConfig {
            region,
            endpoint,
            addressing: self.addressing,
            credentials: self.credentials,
            part_size_bytes: self.part_size_bytes,
            multipart_threshold_bytes: self.multipart_threshold_bytes.unwrap_or(self.part_size_bytes),
            copy_threshold_bytes: self.copy_threshold_bytes,
            copy_part_size_bytes: self.copy_part_size_bytes,
            max_connections,
            memory_limit_bytes: self.memory_limit_bytes,
            read_window_bytes,
            payload_signing: self.payload_signing,
            timeouts: self.timeouts,
            retry: self.retry,
            hedging: self.hedging,
            checksums: self.checksums,
            worker_threads,
            tcp_recv_buffer_bytes: self.tcp_recv_buffer_bytes,
            tcp_send_buffer_bytes: self.tcp_send_buffer_bytes,
            network_interfaces,
            bind_addresses: self.bind_addresses,
            tls,
            proxy,
            auto_config,
            express_session_auth,
            express_session_mode: self.express_session_mode,
        })
    }
}

/// Parses a human size such as `8MiB`, `8 MiB`, `1GiB`, `512k` or `1048576` into bytes.
/// Binary (`KiB`, `MiB`) and decimal (`KB`, `MB`) units follow their usual meaning.
pub fn parse_size(text: &str) -> Result<u64> {
    parse_size::Config::new()
        .parse_size(text.trim())
        .map_err(|e| Error::invalid(Operation::Config, format!("size {text:?}: {e}")))
}

/// The message a NIC-by-name setting gets on every OS but Linux.
#[cfg(not(target_os = "linux"))]
pub(crate) const NIC_BY_NAME_LINUX_ONLY: &str =
    "binding to a network interface by name is Linux-only (SO_BINDTODEVICE); use bind addresses instead";

/// Refuses an interface name this host does not have, so the mistake shows when the client is
/// built and not as a failed connection later. Linux lists its interfaces in `/sys/class/net`.
#[cfg(target_os = "linux")]
fn check_interface(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() || name.contains('/') || !std::path::Path::new("/sys/class/net").join(name).exists() {
        return Err(format!("network interface {name:?} does not exist on this host"));
    }
    Ok(())
}

/// Binding a socket to an interface by name (`SO_BINDTODEVICE`) exists only on Linux: say so
/// when the client is built rather than on every connection. Source addresses work everywhere.
#[cfg(not(target_os = "linux"))]
fn check_interface(name: &str) -> std::result::Result<(), String> {
    Err(format!("network interface {name:?}: {NIC_BY_NAME_LINUX_ONLY}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_derive_connections_from_throughput() {
        let c = ClientConfig::builder().ignore_environment().build().unwrap();
        assert_eq!(c.max_connections, 25);
        assert_eq!(c.part_size_bytes, 8 * MIB);
        assert_eq!(c.region, "us-east-1");
        let c = ClientConfig::builder().ignore_environment().throughput_target_gbps(100.0).build().unwrap();
        assert_eq!(c.max_connections, 250);
        let c = ClientConfig::builder().ignore_environment().max_connections(3).build().unwrap();
        assert_eq!(c.max_connections, 3);
    }

    #[test]
    fn auto_config_needs_the_environment() {
        // ignore_environment() reads neither variables nor the machine: no IMDS, defaults.
        let c = ClientConfig::builder().ignore_environment().build().unwrap();
        assert!(c.auto_config().is_none());
        assert_eq!((c.max_connections, c.network_interfaces().len()), (25, 0));
        // Region and endpoint explicit: nothing here may look for IMDS.
        let b = ClientConfig::builder().region("us-east-1").endpoint_url("http://127.0.0.1:9");
        let c = b.set("auto_config", "false").unwrap().build().unwrap();
        assert!(c.auto_config().is_none());
        assert!(ClientConfig::builder().set("auto_config", "maybe").is_err());
    }

    #[test]
    fn rejects_impossible_settings() {
        let b = || ClientConfig::builder().ignore_environment();
        assert!(b().part_size_bytes(MIB).build().is_err());
        assert!(b().copy_part_size_bytes(MIB).build().is_err());
        assert!(b().copy_threshold_bytes(6 * 1024 * MIB).build().is_err());
        assert!(b().copy_threshold_bytes(0).copy_part_size_bytes(5 * MIB).build().is_ok());
        assert!(b().memory_limit_bytes(MIB).build().is_err());
        assert!(b().max_connections(0).build().is_err());
        assert!(b().endpoint_url("ftp://x").build().is_err());
        assert!(b().endpoint_url("http://x:9000/path").build().is_err());
        let e = b().bind_addresses(["192.0.2.77".parse().unwrap()]).build().unwrap_err();
        assert!(e.message().contains("192.0.2.77"), "{e}");
        assert!(b().bind_addresses(["127.0.0.1".parse().unwrap()]).build().is_ok());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn interfaces_are_checked_on_linux() {
        let b = || ClientConfig::builder().ignore_environment();
        let e = b().network_interfaces(["gantry-no-such-nic"]).build().unwrap_err();
        assert!(e.message().contains("does not exist"), "{e}");
        assert!(b().network_interfaces(["lo"]).bind_addresses(["127.0.0.1".parse().unwrap()]).build().is_ok());
    }

    #[test]
    #[cfg(not(target_os = "linux"))]
    fn interfaces_by_name_are_refused_off_linux() {
        let e = ClientConfig::builder().ignore_environment().network_interfaces(["lo0"]).build().unwrap_err();
        assert!(e.message().contains("Linux-only"), "{e}");
    }

    #[test]
    fn endpoint_parsing() {
        let e = Endpoint::parse("http://127.0.0.1:9000").unwrap();
        assert_eq!((e.scheme.as_str(), e.host.as_str(), e.port), ("http", "127.0.0.1", 9000));
        assert!(e.is_ip_or_localhost());
        let e = Endpoint::parse("https://s3.us-west-2.amazonaws.com/").unwrap();
        assert_eq!(e.port, 443);
        assert!(!e.is_ip_or_localhost());
        let e = Endpoint::parse("http://[::1]:8080").unwrap();
        assert_eq!(e.host, "::1");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("8MiB").unwrap(), 8 * MIB);
        assert_eq!(parse_size("8 MiB").unwrap(), 8 * MIB);
        assert_eq!(parse_size("1GiB").unwrap(), 1024 * MIB);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("eight").is_err());
    }
}
