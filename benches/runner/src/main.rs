//! `gantry-bench`: runs one benchmark workload spec with gantry and prints one JSON line.
//!
//! The harness (`benches/harness.py`) hands the same spec to this runner and to the peer
//! runners (`benches/runners/crt_runner.py`, `benches/runners/obstore_runner.py`), so every
//! client does the same requests against the same server with the same connection count. The
//! runner measures only the transfer phase: client creation and source data are prepared
//! first, then wall time and the process's CPU time (getrusage, all threads) are taken around
//! the workloads, which run concurrently (several workloads in one spec = the `mixed`
//! scenario). Peak RSS is left to the harness, which reads it from wait4.
//!
//!     gantry-bench SPEC_JSON
//!     gantry-bench @SPEC_FILE
//!
//! The `@` form reads the spec from a file: a spec naming 50,000 keys is larger than one
//! command-line argument may be (Linux caps each at 128 KiB).
//!
//! Spec: {"endpoint","bucket","connections","part_size","memory_limit"?,"gantry_settings"?,"workloads":[{
//!   "name","op":"get"|"put"|"stream-put","keys":[..],"in_flight","size",
//!   "source":"memory"|"file","file","write_size"}]}
//!
//! Over HTTPS the harness puts the CA to trust in `gantry_settings.ca_bundle` (gantry's own
//! config key); the top-level `ca_bundle` it also sets is for the peer runners.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use gantry::{Addressing, Client, ClientConfig, Credentials, CredentialsSource};
use serde::Deserialize;

/// The whole run: where, how many connections, and what to transfer.
#[derive(Debug, Deserialize)]
struct Spec {
    endpoint: String,
    bucket: String,
    connections: usize,
    part_size: u64,
    #[serde(default)]
    memory_limit: Option<u64>,
    /// Extra gantry settings by config key (`gantry_config_set` names), e.g. `checksum_upload`.
    #[serde(default)]
    gantry_settings: std::collections::BTreeMap<String, String>,
    workloads: Vec<Workload>,
}

/// One workload; all workloads of a spec run at the same time.
#[derive(Debug, Deserialize)]
struct Workload {
    name: String,
    op: Op,
    keys: Vec<String>,
    /// Objects transferred at once (each may use several connections).
    #[serde(default = "one")]
    in_flight: usize,
    /// Object size in bytes: expected size for gets, generated size for puts.
    #[serde(default)]
    size: u64,
    #[serde(default)]
    source: Source,
    /// Source file for `source: file`.
    #[serde(default)]
    file: Option<String>,
    /// Bytes per `write` call for `stream-put`.
    #[serde(default)]
    write_size: Option<usize>,
}

fn one() -> usize {
    1
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Op {
    Get,
    Put,
    StreamPut,
}

#[derive(Debug, Deserialize, Default, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Source {
    #[default]
    Memory,
    File,
}

/// What one workload did, for the JSON line.
struct Done {
    name: String,
    bytes: u64,
    objects: usize,
    seconds: f64,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let Some(arg) = std::env::args().nth(1) else {
        eprintln!("usage: gantry-bench SPEC_JSON | @SPEC_FILE");
        return ExitCode::from(2);
    };
    let spec = match arg.strip_prefix('@') {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("gantry-bench: cannot read {path}: {e}");
                return ExitCode::from(2);
            }
        },
        None => arg,
    };
    match run(&spec) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gantry-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(spec_json: &str) -> Result<String, BoxError> {
    let spec: Spec = serde_json::from_str(spec_json)?;
    let key = std::env::var("AWS_ACCESS_KEY_ID").unwrap_or_else(|_| "bench".into());
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap_or_else(|_| "bench-secret".into());
    let mut b = ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(spec.endpoint.clone())
        .addressing(Addressing::PathStyle)
        .credentials(CredentialsSource::Static(Credentials::new(key, secret)))
        .part_size_bytes(spec.part_size)
        .max_connections(spec.connections);
    if let Some(limit) = spec.memory_limit {
        b = b.memory_limit_bytes(limit);
    }
    for (k, v) in &spec.gantry_settings {
        b = b.set(k, v)?;
    }
    let client = Arc::new(Client::new(b.build()?)?);

    // Source data is made before the clock starts: one buffer shared by every key of a
    // workload (uploading it costs no copy in gantry, and the runner's RSS holds it once).
    let sources: Vec<Bytes> = spec
        .workloads
        .iter()
        .map(|w| match (w.op, w.source) {
            (Op::Put, Source::Memory) => pseudo_random(w.size as usize),
            (Op::StreamPut, _) => pseudo_random(w.write_size.unwrap_or(8 << 20)),
            _ => Bytes::new(),
        })
        .collect();

    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let bucket: Arc<str> = spec.bucket.as_str().into();
    let results: Vec<Result<Done, BoxError>> = client.block_on(futures::future::join_all(
        spec.workloads.iter().zip(sources).map(|(w, src)| run_workload(&client, &bucket, w, src, start)),
    ));
    let seconds = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let done: Vec<Done> = results.into_iter().collect::<Result<_, _>>()?;
    let m = client.metrics();

    let bytes: u64 = done.iter().map(|d| d.bytes).sum();
    let workloads: Vec<serde_json::Value> = done
        .iter()
        .map(|d| serde_json::json!({"name": d.name, "bytes": d.bytes, "objects": d.objects, "seconds": d.seconds}))
        .collect();
    Ok(serde_json::json!({
        "client": "gantry",
        "bytes": bytes,
        "seconds": seconds,
        "cpu_s": cpu,
        "retries": m.retries,
        "workloads": workloads,
    })
    .to_string())
}

async fn run_workload(
    client: &Client,
    bucket: &str,
    w: &Workload,
    src: Bytes,
    start: Instant,
) -> Result<Done, BoxError> {
    let in_flight = w.in_flight.max(1);
    let bytes: u64 = futures::stream::iter(w.keys.iter())
        .map(|key| transfer(client, bucket, w, key, src.clone()))
        .buffer_unordered(in_flight)
        .try_fold(0u64, |acc, n| async move { Ok(acc + n) })
        .await?;
    Ok(Done { name: w.name.clone(), bytes, objects: w.keys.len(), seconds: start.elapsed().as_secs_f64() })
}

/// Transfers one object; returns its byte count.
async fn transfer(client: &Client, bucket: &str, w: &Workload, key: &str, src: Bytes) -> Result<u64, BoxError> {
    match w.op {
        Op::Get => {
            // The discard sink: chunks are dropped as they arrive, in order.
            let mut stream = client.get_stream(bucket, key).await?;
            let mut n = 0u64;
            while let Some(chunk) = stream.next_chunk().await {
                n += chunk?.len() as u64;
            }
            if w.size != 0 && n != w.size {
                return Err(format!("{key}: got {n} bytes, expected {}", w.size).into());
            }
            Ok(n)
        }
        Op::Put => match w.source {
            Source::Memory => {
                client.put(bucket, key, src.clone()).await?;
                Ok(src.len() as u64)
            }
            Source::File => {
                let path = w.file.as_deref().ok_or("put from file needs \"file\"")?;
                client.put_file(bucket, key, path).await?;
                Ok(std::fs::metadata(path)?.len())
            }
        },
        Op::StreamPut => {
            let mut up = client.upload(bucket, key);
            let mut left = w.size;
            while left > 0 {
                let n = left.min(src.len() as u64) as usize;
                up.write_bytes(src.slice(..n)).await?;
                left -= n as u64;
            }
            up.complete().await?;
            Ok(w.size)
        }
    }
}

/// Incompressible bytes (xorshift64), cheap to make.
fn pseudo_random(len: usize) -> Bytes {
    let mut data = vec![0u8; len];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    Bytes::from(data)
}

/// User + system CPU seconds of this process so far, all threads.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we pass; RUSAGE_SELF is always valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000).as_secs_f64();
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
