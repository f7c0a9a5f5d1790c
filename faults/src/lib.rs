//! `gantry-faults`: a fault-injecting S3 test server.
//!
//! Integration tests of the S3 client (retries, timeouts, stall detection, checksums,
//! cancellation) need a server that behaves like S3 *and* misbehaves on command; benchmarks
//! need S3-like latency and per-connection bandwidth. [`FaultServer`] serves real object bytes
//! from memory over HTTP/1.1 (path-style `/bucket/key` only, signatures are not checked) and
//! injects [`Fault`]s chosen by [`Rule`]s.
//!
//! ```no_run
//! use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
//! let server = FaultServer::start();
//! server.insert_object("bucket", "key", bytes::Bytes::from(vec![7u8; 1 << 20]));
//! // Fail the first GET with 503 SlowDown, then behave.
//! server.add_rule(Rule::new(Match::op(Op::GetObject), Fault::slow_down()).times(1));
//! println!("{}", server.endpoint());
//! ```
//!
//! HTTPS: [`FaultServer::start_tls_on`] serves the same over TLS (see [`tls_server_config`]);
//! `gantry-fault-server --tls-self-signed DIR` does so with a throwaway CA in `DIR/ca.pem`.
//!
//! Connection endings: every accepted socket has `SO_LINGER = 0`, so `ResetBeforeHead`,
//! `ResetMidBody`, `ResetAfterAct` and server shutdown end connections with a TCP RST.
//! `ShortBody` ends with a FIN (the write half is shut down once the truncated body has been
//! flushed), so clients see a clean EOF before Content-Length bytes arrived. Closes hyper
//! makes on its own (`Connection: close`, client EOF) are graceful.
//!
//! Behaviour notes (where this differs from, or simplifies, S3):
//! - Path-style only; `Authorization` is accepted unchecked; one region, no versioning.
//! - Supported: Get/Head/Put/DeleteObject, multipart (create, part, complete, abort, list
//!   uploads), ListObjectsV2 (prefix, delimiter, max-keys, continuation-token, start-after,
//!   `encoding-type=url`; a plain `GET /bucket` is answered the same way), Create/Head/Delete
//!   bucket, ListBuckets, GetBucketLocation, DeleteObjects (a `DeleteObject` rule with a key and a
//!   `Status` fault refuses that key inside a batch, as a bucket policy does), CopyObject and UploadPartCopy
//!   (`x-amz-copy-source-if-match`, `x-amz-copy-source-range`). Anything else is 501 NotImplemented.
//! - Uploads with `Transfer-Encoding` (no Content-Length) are refused with 501, as S3 does.
//! - Multipart objects report full-object checksums (`x-amz-checksum-type: FULL_OBJECT`) even
//!   for uploads created with `COMPOSITE`; the values are correct for the whole object. Objects
//!   stored with [`FaultServer::insert_object_with`] hold exactly the checksum S3 would: one
//!   algorithm, full-object or composite (`<base64>-N`, `COMPOSITE`).
//! - GetObjectAttributes (`?attributes`: ETag, Checksum, ObjectParts paged by
//!   `x-amz-max-parts`/`x-amz-part-number-marker`, ObjectSize) and GET `?partNumber=N` (the
//!   part's bytes and, with checksum mode, its checksum) follow S3's documented answers.
//! - Faults on responses without a body (HEAD, 204s): `Stall` delays the head; `ResetMidBody`,
//!   `ShortBody`, `Trickle` and `FlipByte` have nothing to act on. `FlipByte` on
//!   CompleteMultipartUpload corrupts the assembled object (before the full-object checksum
//!   check), not the XML request.
//! - `ResetAfterAct` carries the request out (any operation: the object, part, upload or
//!   completion is stored) and then resets instead of answering: a lost answer, for testing
//!   how clients recover from requests that succeeded without their knowing.
//! - `ResetMidBody` waits 20 ms after the truncated body left hyper's buffer before the RST,
//!   so a reading client gets those bytes; bytes still unsent in the kernel are dropped by the
//!   RST (best effort, as with any real reset).

#![warn(missing_docs)]

mod checksum;
mod conn;
pub mod express;
mod faults;
mod http_util;
mod rules;
mod s3xml;
mod service;
mod shaping;
mod spec;
mod store;
mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use bytes::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

pub use checksum::ChecksumAlgo;
pub use express::{ExpressSettings, ExpressStats};
pub use faults::Fault;
pub use rules::{Match, Op, RequestRecord, Rule};
pub use shaping::Shaping;
pub use spec::parse_fault_spec;
pub use store::ObjectChecksum;
pub use tls::tls_server_config;

use conn::{ConnCtl, FaultIo};
use rules::RuleSet;
use store::{Draft, PartMeta, Store};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic in one request must not wedge the whole test server.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Shared server state (objects, rules, logs, counters).
pub(crate) struct State {
    store: Mutex<Store>,
    rules: Mutex<RuleSet>,
    log: Mutex<Vec<RequestRecord>>,
    log_enabled: AtomicBool,
    op_counts: [AtomicUsize; Op::ALL.len()],
    faults_fired: AtomicUsize,
    conns_accepted: AtomicUsize,
    conns_open: AtomicUsize,
    shaping: Mutex<Shaping>,
    reject_trailers: AtomicBool,
    /// Answer GetObjectAttributes with 501 NotImplemented, as some S3-compatible stores do.
    reject_attributes: AtomicBool,
    /// Buckets that live in another region than the one requests are signed for.
    bucket_regions: Mutex<std::collections::HashMap<String, String>>,
    /// S3 Express One Zone sessions (off until a test enables them).
    express: express::Express,
    counter: AtomicU64,
}

impl State {
    fn new() -> State {
        State {
            store: Mutex::new(Store::default()),
            rules: Mutex::new(RuleSet::new()),
            log: Mutex::new(Vec::new()),
            log_enabled: AtomicBool::new(true),
            op_counts: std::array::from_fn(|_| AtomicUsize::new(0)),
            faults_fired: AtomicUsize::new(0),
            conns_accepted: AtomicUsize::new(0),
            conns_open: AtomicUsize::new(0),
            shaping: Mutex::new(Shaping::default()),
            reject_trailers: AtomicBool::new(false),
            reject_attributes: AtomicBool::new(false),
            bucket_regions: Mutex::new(Default::default()),
            express: Default::default(),
            counter: AtomicU64::new(0),
        }
    }

    pub(crate) fn store(&self) -> MutexGuard<'_, Store> {
        lock(&self.store)
    }

    pub(crate) fn shaping(&self) -> Shaping {
        *lock(&self.shaping)
    }

    pub(crate) fn next_counter(&self) -> u64 {
        self.counter.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A unique request id in S3's 16-character style.
    pub(crate) fn next_request_id(&self) -> String {
        format!("GF{:014X}", self.next_counter())
    }

    pub(crate) fn record(&self, rec: RequestRecord) {
        self.op_counts[rec.op as usize].fetch_add(1, Ordering::Relaxed);
        if self.log_enabled.load(Ordering::Relaxed) {
            lock(&self.log).push(rec);
        }
    }
}

/// Decrements the open-connection count when a connection task ends (or is dropped).
struct OpenGuard(Arc<State>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.conns_open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A running fault-injecting S3 server on its own thread and 2-worker tokio runtime, so it
/// works from sync tests and from tests that have a runtime of their own. Dropping it stops
/// accepting and closes every connection (with an RST) before `drop` returns.
pub struct FaultServer {
    state: Arc<State>,
    addr: SocketAddr,
    tls: bool,
    shutdown: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl FaultServer {
    /// Starts on `127.0.0.1:0` (a free port), the usual choice for tests. Panics if the
    /// loopback listener cannot be created, which would make every test moot anyway.
    pub fn start() -> FaultServer {
        FaultServer::start_on(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("gantry-faults: cannot start on 127.0.0.1:0")
    }

    /// Starts on `addr` (the binary uses a fixed port); errors if binding fails.
    pub fn start_on(addr: SocketAddr) -> std::io::Result<FaultServer> {
        FaultServer::start_with(addr, None)
    }

    /// Starts an HTTPS server on `addr` with `tls` (e.g. from [`tls_server_config`]); its
    /// [`endpoint`](FaultServer::endpoint) is `https://…`. A failed handshake closes only that
    /// connection.
    pub fn start_tls_on(addr: SocketAddr, tls: Arc<rustls::ServerConfig>) -> std::io::Result<FaultServer> {
        FaultServer::start_with(addr, Some(TlsAcceptor::from(tls)))
    }

    fn start_with(addr: SocketAddr, tls: Option<TlsAcceptor>) -> std::io::Result<FaultServer> {
        let sock = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
        sock.set_reuse_address(true)?;
        sock.bind(&addr.into())?;
        sock.listen(1024)?;
        sock.set_nonblocking(true)?;
        let listener: std::net::TcpListener = sock.into();
        let addr = listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("gantry-faults-worker")
            .enable_all()
            .build()?;
        let state = Arc::new(State::new());
        let (shutdown, rx) = watch::channel(false);
        let st = state.clone();
        let is_tls = tls.is_some();
        let thread = std::thread::Builder::new().name("gantry-faults".into()).spawn(move || {
            rt.block_on(accept_loop(listener, st, tls, rx));
            // Dropping the runtime drops every connection task, closing its socket (RST).
            drop(rt);
        })?;
        Ok(FaultServer { state, addr, tls: is_tls, shutdown, thread: Some(thread) })
    }

    /// Base URL for path-style requests, e.g. `http://127.0.0.1:41234` (`https://` when
    /// started with TLS).
    pub fn endpoint(&self) -> String {
        format!("{}://{}", if self.tls { "https" } else { "http" }, self.addr)
    }

    /// The bound address (useful for raw TCP clients in tests).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Reseeds the RNG behind `probability` rules, so a randomised fault pattern can be
    /// replayed exactly (default seed 0).
    pub fn seed(&self, seed: u64) {
        lock(&self.state.rules).seed(seed);
    }

    /// Creates a bucket (no-op if it exists), so tests can skip a CreateBucket request.
    pub fn create_bucket(&self, bucket: &str) {
        self.state.store().create_bucket(bucket);
    }

    /// Stores an object directly (creating the bucket if missing), so download tests need no
    /// upload round trip. The data is kept as-is (no copy).
    pub fn insert_object(&self, bucket: &str, key: &str, data: Bytes) {
        let draft = Draft::new(data, None);
        let _ = self.state.store().put(bucket, key, draft, None, true);
    }

    /// Stores an object as S3 holds it after an upload with `checksum` (creating the bucket if
    /// missing): only that algorithm's checksum, full-object or composite, and for a
    /// multipart upload its parts (sizes and part checksums, a `"…-N"` ETag), which GET
    /// `?partNumber=N` and GetObjectAttributes report. Panics if the part sizes do not add up
    /// to the data.
    pub fn insert_object_with(&self, bucket: &str, key: &str, data: Bytes, checksum: &ObjectChecksum) {
        let a = checksum.algorithm;
        let (checksums, composite, parts) = match &checksum.part_sizes {
            None => (vec![(a, a.compute(&data))], false, Vec::new()),
            Some(sizes) => {
                assert_eq!(sizes.iter().sum::<usize>(), data.len(), "part sizes must add up to the object");
                let mut at = 0;
                let parts: Vec<PartMeta> = sizes
                    .iter()
                    .map(|&n| {
                        let sum = a.compute(&data[at..at + n]);
                        at += n;
                        PartMeta { size: n as u64, checksums: vec![(a, sum)] }
                    })
                    .collect();
                let value = match checksum.composite {
                    true => a.compute(&parts.iter().flat_map(|p| p.checksums[0].1.clone()).collect::<Vec<u8>>()),
                    false => a.compute(&data),
                };
                (vec![(a, value)], checksum.composite, parts)
            }
        };
        let count = checksum.part_sizes.as_ref().map(Vec::len);
        let draft = Draft::exact(data, checksums, composite, parts);
        let _ = self.state.store().put(bucket, key, draft, count, true);
    }

    /// Flips one bit of the stored byte at `offset`, keeping the ETag and checksums: an object
    /// damaged at rest, whose every download must fail verification.
    pub fn corrupt_object(&self, bucket: &str, key: &str, offset: usize) {
        let _ = self.state.store().corrupt(bucket, key, offset);
    }

    /// Emulates stores without GetObjectAttributes: every such request is answered 501
    /// NotImplemented.
    pub fn set_reject_attributes(&self, reject: bool) {
        self.state.reject_attributes.store(reject, Ordering::Relaxed);
    }

    /// The stored bytes of an object, so upload tests can check what arrived.
    pub fn object(&self, bucket: &str, key: &str) -> Option<Bytes> {
        self.state.store().get(bucket, key).ok().map(|o| o.data.clone())
    }

    /// The object's ETag exactly as sent in the `ETag` header (with the quotes), so tests can
    /// compare it with what the client saw.
    pub fn object_etag(&self, bucket: &str, key: &str) -> Option<String> {
        self.state.store().get(bucket, key).ok().map(|o| o.etag.clone())
    }

    /// Appends a fault rule; rules are evaluated in insertion order, first firing rule wins.
    pub fn add_rule(&self, rule: Rule) {
        lock(&self.state.rules).add(rule);
    }

    /// Removes all rules (and their counters), e.g. to let a retry succeed.
    pub fn clear_rules(&self) {
        lock(&self.state.rules).clear();
    }

    /// Replaces the latency/bandwidth shaping applied to object reads.
    pub fn set_shaping(&self, shaping: Shaping) {
        *lock(&self.state.shaping) = shaping;
    }

    /// Emulates stores that refuse `aws-chunked` uploads: every such request is answered 501
    /// NotImplemented, so clients' fallback paths can be tested.
    pub fn set_reject_trailers(&self, reject: bool) {
        self.state.reject_trailers.store(reject, Ordering::Relaxed);
    }

    /// Serves directory buckets (`<base>--<az-id>--x-s3`) as S3 Express One Zone does:
    /// `CreateSession` (signed with `settings`' base key for `s3express`) hands out sessions,
    /// and every other request to such a bucket must carry a live session token and be signed
    /// with its key (see [`express`]). Other buckets are unaffected.
    pub fn enable_express(&self, settings: ExpressSettings) {
        self.state.express.enable(settings);
    }

    /// Sets how long sessions made from now on last.
    pub fn set_express_session_lifetime(&self, lifetime: std::time::Duration) {
        self.state.express.set_lifetime(lifetime);
    }

    /// Revokes every live session, as if S3 had dropped them: their next request is refused
    /// with 403 AccessDenied.
    pub fn revoke_express_sessions(&self) {
        self.state.express.revoke_all();
    }

    /// Sessions created, requests refused and authorized so far.
    pub fn express_stats(&self) -> ExpressStats {
        self.state.express.stats()
    }

    /// Places `bucket` in `region`, as S3 answers a request signed for another region: HEAD
    /// gets `301` with `x-amz-bucket-region`, every other request `400
    /// AuthorizationHeaderMalformed` with `<Region>` in the body and the same header. Requests
    /// signed for `region` are served normally. Unsigned requests are not checked.
    pub fn set_bucket_region(&self, bucket: &str, region: &str) {
        self.state.bucket_regions.lock().unwrap_or_else(|e| e.into_inner()).insert(bucket.into(), region.into());
    }

    /// Enables or disables the per-request log behind [`FaultServer::requests`] (on by
    /// default). Long benchmark runs turn it off to keep memory flat; counters keep working.
    pub fn set_request_log(&self, enabled: bool) {
        self.state.log_enabled.store(enabled, Ordering::Relaxed);
    }

    /// Every request since start (or [`FaultServer::reset_log`]), in arrival order, so tests
    /// can assert what the client sent.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.state.log).clone()
    }

    /// How many requests of `op` arrived (counted even when the log is disabled).
    pub fn request_count(&self, op: Op) -> usize {
        self.state.op_counts[op as usize].load(Ordering::Relaxed)
    }

    /// How many faults were injected, to check a test exercised what it meant to.
    pub fn faults_fired(&self) -> usize {
        self.state.faults_fired.load(Ordering::Relaxed)
    }

    /// Open multipart uploads in `bucket`, to check clients abort what they abandon.
    pub fn open_multipart_uploads(&self, bucket: &str) -> usize {
        self.state.store().open_uploads(bucket)
    }

    /// Connections accepted so far, to check connection reuse.
    pub fn connections_accepted(&self) -> usize {
        self.state.conns_accepted.load(Ordering::Relaxed)
    }

    /// Connections currently open, to check clients do not leak them.
    pub fn connections_open(&self) -> usize {
        self.state.conns_open.load(Ordering::Relaxed)
    }

    /// Clears the request log and the request/fault/connection-accepted counters (objects,
    /// rules and open connections are kept), so a test can look at one phase in isolation.
    pub fn reset_log(&self) {
        lock(&self.state.log).clear();
        for c in &self.state.op_counts {
            c.store(0, Ordering::Relaxed);
        }
        self.state.faults_fired.store(0, Ordering::Relaxed);
        self.state.conns_accepted.store(0, Ordering::Relaxed);
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for FaultServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gantry-faults: cannot register listener: {e}");
            return;
        }
    };
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|s| *s) => return,
            a = listener.accept() => a,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(_) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        // Every abortive close becomes an RST; see the conn module for graceful closes.
        let _ = socket2::SockRef::from(&tcp).set_linger(Some(std::time::Duration::ZERO));
        state.conns_accepted.fetch_add(1, Ordering::Relaxed);
        state.conns_open.fetch_add(1, Ordering::Relaxed);
        let guard = OpenGuard(state.clone());
        let st = state.clone();
        let tls = tls.clone();
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let ctl = Arc::new(ConnCtl::default());
            let io = FaultIo::new(tcp, ctl.clone());
            let conn = async {
                match tls {
                    // A failed handshake ends this connection only.
                    Some(tls) => {
                        if let Ok(io) = tls.accept(io).await {
                            serve(io, st, ctl).await;
                        }
                    }
                    None => serve(io, st, ctl).await,
                }
            };
            tokio::select! {
                _ = conn => {}
                _ = shutdown.wait_for(|s| *s) => {}
            }
        });
    }
}

/// Serves one connection's requests until it ends (plain TCP or the TLS stream over it).
async fn serve<I>(io: I, state: Arc<State>, ctl: Arc<ConnCtl>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |req| service::handle(state.clone(), ctl.clone(), req));
    let mut builder = http1::Builder::new();
    builder.keep_alive(true).header_read_timeout(None);
    let _ = builder.serve_connection(TokioIo::new(io), svc).await;
}
