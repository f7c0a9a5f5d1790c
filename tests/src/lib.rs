//! Test support: real S3-compatible servers (the embedded server in-process, MinIO as a
//! process), clients configured for them, data patterns and a deadline so no test can hang.

pub mod keys;
pub mod suite;

/// Declares one `#[test]` per conformance case, each running `suite::<case>` against the
/// backend `$backend` returns (`None` skips) under a deadline. Every backend's test file is
/// this one line, so a new case reaches all backends at once.
#[macro_export]
macro_rules! conformance_tests {
    ($backend:expr) => {
        $crate::conformance_tests!(@cases $backend;
            put_bytes_then_all_deliveries, put_file_and_writer, concurrent_transfers,
            etag_change_mid_download, missing_key_is_not_found, buffer_too_small,
            list_pages_and_delete, wrong_credentials_fail_fast, cancelled_upload_leaves_nothing,
            signed_payloads, stream_backpressure, ranged_reads, get_options, checksum_modes,
            special_file_destinations, download_to_writer, server_side_copy, batch_delete);
        $crate::conformance_tests!(@cases $backend; keys:
            awkward_keys_round_trip, colliding_keys_stay_apart, keys_stay_in_their_bucket,
            awkward_key_multipart);
    };
    (@cases $backend:expr; $($case:ident),*) => {
        $crate::conformance_tests!(@cases $backend; suite: $($case),*);
    };
    (@cases $backend:expr; $module:ident: $($case:ident),*) => {$(
        #[test]
        fn $case() {
            let Some(backend) = $backend else { return };
            $crate::with_deadline(std::time::Duration::from_secs(120), move || $crate::$module::$case(&backend));
        }
    )*};
}

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use gantry::{Client, ClientConfig, ClientConfigBuilder, Credentials, CredentialsSource, MIB};
use sha2::{Digest, Sha256};

/// Part size used by the suites: S3's minimum, so multi-part cases stay small.
pub const PART: u64 = 5 * MIB;

/// One S3-compatible server under test.
pub struct Backend {
    /// Short name for messages.
    pub name: &'static str,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// Access key and secret the server verifies.
    pub keys: (String, String),
    /// Where the server keeps its data (the embedded server only).
    pub root: Option<PathBuf>,
    /// The CA certificate to trust, for a backend served over TLS.
    pub ca: Option<PathBuf>,
    _guard: Arc<dyn std::any::Any + Send + Sync>,
}

impl Backend {
    /// A client for this backend with suite defaults, adjusted by `tweak`.
    pub fn client(&self, tweak: impl FnOnce(ClientConfigBuilder) -> ClientConfigBuilder) -> Client {
        let builder = ClientConfig::builder()
            .ignore_environment()
            .endpoint_url(&self.endpoint)
            .credentials(CredentialsSource::Static(Credentials::new(&self.keys.0, &self.keys.1)))
            .part_size_bytes(PART)
            .max_connections(8)
            .memory_limit_bytes(256 * MIB)
            .worker_threads(2);
        let builder = match &self.ca {
            Some(ca) => builder.ca_bundle(ca),
            None => builder,
        };
        Client::new(tweak(builder).build().expect("valid test config")).expect("client")
    }

    /// A fresh bucket with a unique name.
    pub fn bucket(&self, client: &Client) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let name =
            format!("gantry-{}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed), rand::random::<u16>());
        client.block_on(client.create_bucket(&name)).expect("create bucket");
        name
    }
}

/// The embedded server (`gantry serve`) on a free port, with SigV4 verification, in a temp dir.
pub fn embedded() -> Backend {
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = (gantry_server::DEFAULT_ACCESS_KEY.to_string(), gantry_server::DEFAULT_SECRET_KEY.to_string());
    let config =
        gantry_server::ServerConfig::new(dir.path(), "127.0.0.1:0".parse().unwrap()).with_credentials(&keys.0, &keys.1);
    let server = gantry_server::start_background(config, 2).expect("start the embedded server");
    Backend {
        name: "embedded",
        endpoint: server.endpoint_url(),
        keys,
        root: Some(dir.path().to_path_buf()),
        ca: None,
        _guard: Arc::new((server, dir)),
    }
}

/// [`embedded`] over HTTPS, with a certificate from a private CA the client is told to trust.
pub fn embedded_tls() -> Backend {
    let dir = tempfile::tempdir().expect("tempdir");
    let certs = gantry_server::tls::self_signed(&dir.path().join("certs")).expect("certificates");
    let keys = (gantry_server::DEFAULT_ACCESS_KEY.to_string(), gantry_server::DEFAULT_SECRET_KEY.to_string());
    let root = dir.path().join("data");
    let config = gantry_server::ServerConfig::new(&root, "127.0.0.1:0".parse().unwrap())
        .with_credentials(&keys.0, &keys.1)
        .with_tls(certs.tls_config());
    let server = gantry_server::start_background(config, 2).expect("start the embedded server over TLS");
    assert!(server.endpoint_url().starts_with("https://"));
    Backend {
        name: "embedded-tls",
        endpoint: server.endpoint_url(),
        keys,
        root: Some(root),
        ca: Some(certs.ca.clone()),
        _guard: Arc::new((server, dir)),
    }
}

/// The MinIO process of this test binary (stopped by the script's watchdog at exit).
struct MinioProcess;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/minio.sh")
}

/// A MinIO server process shared by the tests of one test binary (started on first use).
/// Returns `None`, saying why, when MinIO is not installed and `CI` is not set; under CI a
/// missing MinIO fails the test.
pub fn minio() -> Option<Backend> {
    static SHARED: Shared = OnceLock::new();
    minio_with(&SHARED, false)
}

/// A second MinIO process serving HTTPS with a private CA's certificate (MinIO's `--certs-dir`).
pub fn minio_tls() -> Option<Backend> {
    static SHARED: Shared = OnceLock::new();
    minio_with(&SHARED, true)
}

/// A started MinIO: its endpoint, the CA to trust (TLS only), the process.
type Shared = OnceLock<Option<(String, Option<PathBuf>, Arc<MinioProcess>)>>;

fn minio_with(shared: &'static Shared, tls: bool) -> Option<Backend> {
    let shared = shared.get_or_init(|| {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/minio-bin/minio");
        if std::env::var_os("GANTRY_MINIO_BIN").is_none() && !bin.exists() {
            if std::env::var_os("CI").is_some() {
                panic!("MinIO is not installed: run tests/scripts/minio.sh install (the test script does)");
            }
            eprintln!("skipping MinIO tests: run tests/scripts/minio.sh install first");
            return None;
        }
        // Statics are never dropped: the script's watchdog stops MinIO when this process ends.
        let dir = tempfile::tempdir().expect("tempdir").keep();
        if tls {
            let certs = gantry_server::tls::self_signed(&dir.join("certs")).expect("certificates");
            std::fs::copy(&certs.cert, dir.join("certs/public.crt")).expect("public.crt");
            std::fs::copy(&certs.key, dir.join("certs/private.key")).expect("private.key");
        }
        let port = free_port();
        let status = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&dir)
            .arg(port.to_string())
            .env("GANTRY_MINIO_OWNER_PID", std::process::id().to_string())
            .status()
            .expect("run minio.sh");
        assert!(status.success(), "MinIO did not start");
        let scheme = if tls { "https" } else { "http" };
        let ca = tls.then(|| dir.join("certs/ca.pem"));
        Some((format!("{scheme}://127.0.0.1:{port}"), ca, Arc::new(MinioProcess)))
    });
    let (endpoint, ca, process) = shared.as_ref()?;
    Some(Backend {
        name: if tls { "minio-tls" } else { "minio" },
        endpoint: endpoint.clone(),
        keys: ("gantryadmin".into(), "gantrysecret123".into()),
        root: None,
        ca: ca.clone(),
        _guard: process.clone(),
    })
}

/// A port that was free a moment ago (and is not PORT+1-adjacent to another we handed out).
pub fn free_port() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if port < 65000 && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift), different for every `seed`: a shifted or
/// swapped part never matches by accident.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Hex SHA-256.
pub fn sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Runs `f` on its own thread and fails the test if it takes longer than `limit`, so a hang
/// is a failure with a message instead of a stuck CI job.
pub fn with_deadline<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            let _ = t.join();
            v
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match t.join() {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(()) => unreachable!("the thread sends before it ends"),
        },
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("test exceeded its {limit:?} deadline (hang?)"),
    }
}
