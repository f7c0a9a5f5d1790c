//! `gantry cp SRC DST`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use gantry::{
    parse_size, Addressing, Client, ClientConfig, CredentialsSource, MetricsSnapshot, PutOptions, Verification,
};

use crate::interrupt::Interrupt;
use crate::progress::{Direction, Progress};
use crate::CliResult;

/// Engine settings shared by the commands that make a client.
#[derive(Debug, Args, Clone)]
pub(crate) struct ClientArgs {
    /// Endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS).
    #[arg(long)]
    endpoint_url: Option<String>,
    /// Signing region (default: AWS_REGION, else us-east-1).
    #[arg(long)]
    region: Option<String>,
    /// Part size, e.g. 8MiB.
    #[arg(long, value_parser = size)]
    part_size: Option<u64>,
    /// Cap on concurrent connections (overrides --target-gbps).
    #[arg(long)]
    max_connections: Option<usize>,
    /// Target throughput in Gbit/s; sizes the connection count.
    #[arg(long)]
    target_gbps: Option<f64>,
    /// Memory limit for part buffers, e.g. 2GiB.
    #[arg(long, value_parser = size)]
    memory_limit: Option<u64>,
    /// Force path-style addressing.
    #[arg(long)]
    path_style: bool,
    /// Send unsigned requests (public buckets).
    #[arg(long)]
    no_sign_request: bool,
    /// Profile of ~/.aws/config and ~/.aws/credentials (default: AWS_PROFILE, else default).
    #[arg(long)]
    profile: Option<String>,
    /// PEM file of CA certificates to trust instead of the system's (default: AWS_CA_BUNDLE,
    /// the profile's ca_bundle).
    #[arg(long, value_name = "PEM")]
    ca_bundle: Option<PathBuf>,
    /// Do not verify TLS certificates (test clusters only: anyone on the path can read and
    /// change the traffic). Prints a warning every time.
    #[arg(long)]
    no_verify_ssl: bool,
    /// Forward proxy http://[user:password@]host:port (default: HTTPS_PROXY / HTTP_PROXY).
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    /// Network interface to spread connections across (repeatable; SO_BINDTODEVICE).
    #[arg(long = "nic", value_name = "NAME")]
    nics: Vec<String>,
    /// Local source address to spread connections across (repeatable).
    #[arg(long = "bind", value_name = "ADDR")]
    binds: Vec<std::net::IpAddr>,
    /// Do not size the client for this EC2 instance (by default, what is not set explicitly
    /// comes from IMDS: the target throughput from the instance type, one NIC per network card).
    #[arg(long)]
    no_auto_config: bool,
    /// Any configuration key, e.g. --set worker_threads=1 (repeatable; applied after the
    /// flags above; the keys are those of the C ABI's gantry_config_set).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
}

fn size(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| e.to_string())
}

impl ClientArgs {
    pub(crate) fn client(&self) -> CliResult<Client> {
        let mut b = ClientConfig::builder();
        if let Some(v) = &self.endpoint_url {
            b = b.endpoint_url(v);
        }
        if let Some(v) = &self.region {
            b = b.region(v);
        }
        if let Some(v) = self.part_size {
            b = b.part_size_bytes(v);
            if self.memory_limit.is_none() {
                b = b.memory_limit_bytes(v.max(2048 << 20));
            }
        }
        if let Some(v) = self.max_connections {
            b = b.max_connections(v);
        }
        if let Some(v) = self.target_gbps {
            b = b.throughput_target_gbps(v);
        }
        if let Some(v) = self.memory_limit {
            b = b.memory_limit_bytes(v);
        }
        if self.path_style {
            b = b.addressing(Addressing::PathStyle);
        }
        if !self.nics.is_empty() {
            b = b.network_interfaces(self.nics.clone());
        }
        if !self.binds.is_empty() {
            b = b.bind_addresses(self.binds.clone());
        }
        if let Some(p) = &self.profile {
            b = b.credentials(CredentialsSource::Default { profile: Some(p.clone()) });
        }
        if self.no_sign_request {
            b = b.credentials(CredentialsSource::Anonymous);
        }
        if let Some(p) = &self.ca_bundle {
            b = b.ca_bundle(p);
        }
        if self.no_verify_ssl {
            b = b.tls_verify(false);
        }
        if let Some(p) = &self.proxy {
            b = b.proxy(p);
        }
        if self.no_auto_config {
            b = b.auto_config(false);
        }
        for kv in &self.sets {
            let (key, value) = kv.split_once('=').ok_or_else(|| format!("--set {kv:?}: expected KEY=VALUE"))?;
            b = b.set(key.trim(), value)?;
        }
        let config = b.build()?;
        if config.tls_trust().insecure_skip_verify {
            eprintln!("gantry: warning: TLS certificates are NOT verified (--no-verify-ssl); the endpoint can be impersonated");
        }
        Ok(Client::new(config)?)
    }
}

#[derive(Debug, Args)]
pub(crate) struct CpArgs {
    /// Source: s3://bucket/key, a local file, or - for stdin.
    src: String,
    /// Destination: s3://bucket/key (a key ending in / takes the file name), a local path
    /// (a directory takes the key's last segment), or - for stdout.
    dst: String,
    #[command(flatten)]
    client: ClientArgs,
    /// Print one JSON object with the transfer's figures on stdout.
    #[arg(long)]
    json: bool,
    /// No progress bar and no summary line.
    #[arg(long, short)]
    quiet: bool,
    /// Content-Type of an upload (default: guessed from the file name's extension, or from
    /// the key's for stdin; none when unknown).
    #[arg(long, value_name = "TYPE")]
    content_type: Option<String>,
    /// Do not guess an upload's Content-Type from its extension.
    #[arg(long, conflicts_with = "content_type")]
    no_guess_mime_type: bool,
    /// Copy every object under a prefix, or every file under a directory, keeping the tree:
    /// local dir → prefix, prefix → local dir, prefix → prefix (copied by the server).
    #[arg(long, short = 'r')]
    recursive: bool,
    #[command(flatten)]
    pub(crate) fleet: crate::fleet::FleetArgs,
}

impl CpArgs {
    /// Per-object settings of an upload whose name (file or key) is `name`.
    fn put_options(&self, name: &str) -> PutOptions {
        let guessed = || (!self.no_guess_mime_type).then(|| mime_guess::from_path(name).first_raw()).flatten();
        match self.content_type.as_deref().or_else(guessed) {
            Some(ct) => PutOptions::new().content_type(ct),
            None => PutOptions::new(),
        }
    }
}

enum Location {
    S3 { bucket: String, key: String },
    Local(PathBuf),
    Std,
}

fn parse_location(text: &str) -> CliResult<Location> {
    if text == "-" {
        return Ok(Location::Std);
    }
    if let Some(rest) = text.strip_prefix("s3://") {
        let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("{text}: missing bucket name").into());
        }
        return Ok(Location::S3 { bucket: bucket.to_string(), key: key.to_string() });
    }
    Ok(Location::Local(PathBuf::from(text)))
}

pub(crate) fn run(args: CpArgs) -> CliResult {
    let wildcard_source = args.src.starts_with("s3://")
        && crate::fleet::wildcard(args.src[5..].split_once('/').map_or("", |(_, k)| k)).is_some();
    if args.recursive || wildcard_source {
        if args.content_type.is_some() {
            return Err("--content-type names one object's type; many objects get theirs from their names".into());
        }
        let filters = crate::fleet::Filters::new(&args.fleet.ordered_filters)?;
        let out = crate::fleet::run::Output::new(&args.fleet, args.json, args.quiet, args.no_guess_mime_type);
        let client = args.client.client()?;
        return crate::fleet::cp(&client, &args.src, &args.dst, &args.fleet, &filters, out);
    }
    if !args.fleet.include.is_empty() || !args.fleet.exclude.is_empty() {
        return Err("--include and --exclude select among many objects: add --recursive".into());
    }
    let src = parse_location(&args.src)?;
    let dst = parse_location(&args.dst)?;
    if args.json && matches!(dst, Location::Std) {
        return Err("--json prints to stdout, which is the destination here".into());
    }
    let client = args.client.client()?;
    let interrupt = Interrupt::install(&client)?;
    let start = Instant::now();
    let before = client.metrics();
    let show = !(args.quiet || args.json);
    let mut verification = None;
    let (bytes, direction) = match (src, dst) {
        (Location::S3 { bucket, key }, Location::Local(path)) => {
            if key.is_empty() {
                return Err("the source must name an object, not a bucket".into());
            }
            // A key ending in / (a "folder marker", or any object named so) has no last
            // segment to name a file after: it can go to an explicit file path only.
            let into_dir = path.is_dir() || path.as_os_str().to_string_lossy().ends_with('/');
            if key.ends_with('/') && into_dir {
                return Err(format!("s3://{bucket}/{key} ends in /: give a file name as the destination").into());
            }
            let path = if into_dir { path.join(key.rsplit('/').next().unwrap_or(&key)) } else { path };
            // Before any request: a missing directory would otherwise fail only after the
            // bytes were fetched, naming an internal temporary file.
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(format!("cannot write {}: {} is not a directory", path.display(), parent.display()).into());
            }
            let progress = Progress::start(&client, None, Direction::Download, show);
            let info = interrupt.run(&client, client.download_to_file(&bucket, &key, &path))??;
            progress.finish(info.size);
            verification = info.verification;
            (info.size, "download")
        }
        (Location::S3 { bucket, key }, Location::Std) => {
            // A mismatch found at the end leaves the bytes written (they were streamed in
            // order); the error, and so exit status 1, is then the caller's signal.
            let info = interrupt.run(&client, client.download_to_writer(&bucket, &key, std::io::stdout()))??;
            verification = info.verification;
            (info.size, "download")
        }
        (Location::Local(path), Location::S3 { bucket, key }) => {
            let key = dest_key(&key, &path)?;
            let total = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.len();
            let options = args.put_options(&path.to_string_lossy());
            let progress = Progress::start(&client, Some(total), Direction::Upload, show);
            let out = interrupt.run(&client, client.put_file_with(&bucket, &key, &path, &options))??;
            progress.finish(out.size);
            (out.size, "upload")
        }
        (Location::Std, Location::S3 { bucket, key }) => {
            if key.is_empty() || key.ends_with('/') {
                return Err("uploading stdin needs a full key".into());
            }
            let options = args.put_options(&key);
            let progress = Progress::start(&client, None, Direction::Upload, show);
            let out = interrupt.run(&client, async {
                let mut upload = client.upload_with(&bucket, &key, &options);
                let mut stdin = std::io::stdin().lock();
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = match stdin.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => {
                            upload.abort().await?;
                            return Err(e.into());
                        }
                    };
                    upload.write(&buf[..n]).await?;
                }
                Ok::<_, Box<dyn std::error::Error>>(upload.complete().await?)
            })??;
            progress.finish(out.size);
            (out.size, "upload")
        }
        (Location::S3 { bucket: sb, key: sk }, Location::S3 { bucket, key }) => {
            if sk.is_empty() || sk.ends_with('/') {
                return Err("the source must name an object (use --recursive for a prefix)".into());
            }
            // A destination ending in / takes the source's last segment, as for files.
            let key = if key.is_empty() || key.ends_with('/') {
                format!("{key}{}", sk.rsplit('/').next().unwrap_or(&sk))
            } else {
                key
            };
            let out = interrupt.run(&client, client.copy_object(&sb, &sk, &bucket, &key))??;
            (out.size, "copy")
        }
        _ => return Err("one side of cp must be an s3:// URL".into()),
    };
    let seconds = start.elapsed().as_secs_f64();
    if args.json {
        let m = client.metrics().since(&before);
        let mut line = report(direction, bytes, seconds, &m);
        line["max_connections"] = client.config().max_connections().into();
        line["checksum"] = checksum_report(verification.as_ref());
        line["credentials"] = serde_json::json!({
            "source": client.credentials_source(),
            "refreshes": m.credential_refreshes,
            "refresh_failures": m.credential_refresh_failures,
            "forced_refreshes": m.credential_forced_refreshes,
        });
        println!("{line}");
    }
    Ok(())
}

/// The `checksum` field of `--json`: how a download was verified (`null` for uploads, which
/// the server checks). `{"verified": true, "algorithm": "CRC32", "parts": null}`, `parts` set
/// for a composite checksum checked part by part; `{"verified": false, "reason": "no_checksum"}`.
fn checksum_report(v: Option<&Verification>) -> serde_json::Value {
    match v {
        None => serde_json::Value::Null,
        Some(Verification::NotVerified(reason)) => serde_json::json!({"verified": false, "reason": reason.as_str()}),
        Some(v) => serde_json::json!({
            "verified": true,
            "algorithm": v.algorithm().map(|a| a.name()),
            "parts": match v { Verification::Parts { parts, .. } => Some(*parts), _ => None },
        }),
    }
}

fn dest_key(key: &str, path: &Path) -> CliResult<String> {
    if key.is_empty() || key.ends_with('/') {
        let name = path.file_name().ok_or("the source has no file name")?.to_string_lossy();
        return Ok(format!("{key}{name}"));
    }
    Ok(key.to_string())
}

/// The `--json` line: figures a benchmark script can read without parsing text.
pub(crate) fn report(direction: &str, bytes: u64, seconds: f64, m: &MetricsSnapshot) -> serde_json::Value {
    serde_json::json!({
        "direction": direction,
        "bytes": bytes,
        "seconds": seconds,
        "mib_per_s": bytes as f64 / (1024.0 * 1024.0) / seconds.max(1e-9),
        "requests": m.requests,
        "retries": m.retries,
        "errors": m.errors,
        "connections_opened": m.connections_opened,
        "auto_config": m.auto_config.as_ref().map(|a| serde_json::json!({
            "instance_type": a.instance_type,
            "instance_bandwidth_gbps": a.instance_bandwidth_gbps,
            "throughput_target_gbps": a.throughput_target_gbps,
            "network_interfaces": a.network_interfaces,
            "network_cards": a.network_cards.iter().map(|c| serde_json::json!({
                "index": c.index,
                "device_number": c.device_number,
                "mac": c.mac,
                "interface": c.interface,
            })).collect::<Vec<_>>(),
        })),
        "nics": m.lanes.iter().map(|l| serde_json::json!({
            "name": l.name,
            "bytes_downloaded": l.bytes_downloaded,
            "bytes_uploaded": l.bytes_uploaded,
            "connections_opened": l.connections_opened,
            "connect_errors": l.connect_errors,
        })).collect::<Vec<_>>(),
    })
}
