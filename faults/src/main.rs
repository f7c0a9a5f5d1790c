//! `gantry-fault-server`: the fault server as a process, so benchmarks can point other S3
//! clients (awscrt, obstore, ...) at the same shaped, fault-injecting endpoint.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use gantry_faults::{parse_fault_spec, tls_server_config, FaultServer, Op, Shaping};

/// Fault-injecting, shaping S3 test server (path-style, no signature checks).
#[derive(Debug, Parser)]
#[command(name = "gantry-fault-server", version)]
struct Args {
    /// TCP port to listen on (0 = any free port).
    #[arg(long, default_value_t = 9100)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// Delay before every GetObject/HeadObject response head, in milliseconds.
    #[arg(long, default_value_t = 0)]
    first_byte_ms: u64,
    /// Per-connection GET body rate cap in MB/s (10^6 bytes/s).
    #[arg(long)]
    conn_rate_mbps: Option<f64>,
    /// Seed of the RNG behind `p=` fault rules.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Fault rule `KIND[,op=OP][,every=N][,p=P][,times=N][,key=K][,range_start=B][,part=N]`
    /// (KIND: 503, 500, request-timeout, 403, 404, reset, reset-mid, reset-after, short,
    /// stall=SECS, trickle=BYTES_PER_SEC, flip, wrong-etag). Repeatable; evaluated in order.
    #[arg(long = "fault", value_name = "SPEC")]
    faults: Vec<String>,
    /// Answer aws-chunked uploads with 501 NotImplemented.
    #[arg(long)]
    reject_trailers: bool,
    /// Serve directory buckets (`<base>--<az-id>--x-s3`) as S3 Express One Zone does: sessions
    /// from CreateSession signed with this key pair (`ACCESS_KEY:SECRET`), appends.
    #[arg(long, value_name = "ACCESS_KEY:SECRET")]
    express_base_key: Option<String>,
    /// Lifetime of S3 Express sessions, in seconds (AWS: 300).
    #[arg(long, default_value_t = 300)]
    express_session_secs: u64,
    /// Create this bucket at start (repeatable): directory buckets, which an unsigned
    /// CreateBucket cannot make once S3 Express is on.
    #[arg(long = "bucket", value_name = "NAME")]
    buckets: Vec<String>,
    /// Keep the per-request log in memory (off by default: counters suffice for the summary).
    #[arg(long)]
    log_requests: bool,
    /// Serve HTTPS with a fresh CA and a leaf for localhost, 127.0.0.1 and ::1 written to DIR
    /// (clients trust DIR/ca.pem; DIR/cert.pem and DIR/key.pem are the server's).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_key"])]
    tls_self_signed: Option<PathBuf>,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert's leaf.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

fn main() {
    let args = Args::parse();
    let mut rules = Vec::new();
    for spec in &args.faults {
        match parse_fault_spec(spec) {
            Ok(r) => rules.push(r),
            Err(e) => {
                eprintln!("gantry-fault-server: bad --fault {spec:?}: {e}");
                std::process::exit(2);
            }
        }
    }
    let rate = match args.conn_rate_mbps {
        None => None,
        Some(r) if r.is_finite() && r > 0.0 => Some((r * 1e6) as u64),
        Some(r) => {
            eprintln!("gantry-fault-server: --conn-rate-mbps must be > 0, got {r}");
            std::process::exit(2);
        }
    };
    let tls = match tls_files(&args).map(|(cert, key)| tls_server_config(&cert, &key)).transpose() {
        Ok(tls) => tls,
        Err(e) => {
            eprintln!("gantry-fault-server: TLS: {e}");
            std::process::exit(1);
        }
    };
    let addr = SocketAddr::new(args.bind, args.port);
    let started = match tls {
        Some(tls) => FaultServer::start_tls_on(addr, tls),
        None => FaultServer::start_on(addr),
    };
    let server = match started {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gantry-fault-server: cannot listen on {}:{}: {e}", args.bind, args.port);
            std::process::exit(1);
        }
    };
    server.set_request_log(args.log_requests);
    server.seed(args.seed);
    server.set_reject_trailers(args.reject_trailers);
    if let Some(pair) = &args.express_base_key {
        let Some((key, secret)) = pair.split_once(':') else {
            eprintln!("gantry-fault-server: --express-base-key wants ACCESS_KEY:SECRET");
            std::process::exit(2);
        };
        server.enable_express(gantry_faults::ExpressSettings {
            base_access_key: key.into(),
            base_secret_key: secret.into(),
            session_lifetime: Duration::from_secs(args.express_session_secs),
        });
    }
    for b in &args.buckets {
        server.create_bucket(b);
    }
    server.set_shaping(Shaping {
        first_byte_delay: Duration::from_millis(args.first_byte_ms),
        conn_rate_bytes_per_sec: rate,
    });
    for r in rules {
        server.add_rule(r);
    }
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening on {}", server.endpoint());
    let _ = out.flush();

    wait_for_signal();

    let by_op: Vec<String> =
        Op::ALL.iter().map(|op| format!("\"{}\":{}", op.name(), server.request_count(*op))).collect();
    let total: usize = Op::ALL.iter().map(|op| server.request_count(*op)).sum();
    let _ = writeln!(
        out,
        "{{\"requests\":{total},\"faults_fired\":{},\"by_op\":{{{}}}}}",
        server.faults_fired(),
        by_op.join(",")
    );
    let _ = out.flush();
    drop(server);
}

/// The certificate chain and key to serve, writing a self-signed pair first if asked to.
fn tls_files(args: &Args) -> Option<(PathBuf, PathBuf)> {
    if let Some(dir) = &args.tls_self_signed {
        return match gantry_server::tls::self_signed(dir) {
            Ok(files) => Some((files.cert, files.key)),
            Err(e) => {
                eprintln!("gantry-fault-server: --tls-self-signed {}: {e}", dir.display());
                std::process::exit(1);
            }
        };
    }
    Some((args.tls_cert.clone()?, args.tls_key.clone()?))
}

/// Blocks until SIGINT or SIGTERM.
fn wait_for_signal() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
    rt.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    });
}
