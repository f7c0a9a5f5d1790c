//! `gantry`: copy objects to and from S3 (`cp`), run the embedded S3-compatible server
//! (`serve`), and show the engine end to end with no AWS account (`demo`).

mod cp;
mod demo;
mod fleet;
mod interrupt;
mod ls;
mod progress;
mod rm;
mod sync;
mod target;
mod uploads;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "gantry", version, about = "Throughput-tuned S3 transfers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Copy SRC to DST; each is s3://bucket/key, a local path, or - (stdin/stdout).
    Cp(cp::CpArgs),
    /// Serve a directory as an S3-compatible endpoint (buckets are subdirectories).
    Serve(ServeArgs),
    /// Start the embedded server, upload and download a generated object, verify it.
    Demo(demo::DemoArgs),
    /// Unfinished multipart uploads: `uploads ls s3://bucket[/prefix]`, `uploads abort`.
    Uploads(uploads::UploadsArgs),
    /// List objects: s3://bucket[/prefix] (one level, or all with --recursive).
    Ls(ls::LsArgs),
    /// Delete s3://bucket/key, or every key under a prefix with --recursive.
    Rm(rm::RmArgs),
    /// Make DST hold what SRC holds: copy what is missing or differs (--delete: remove extras).
    Sync(sync::SyncArgs),
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Root directory of the stored data.
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Listen address: IP:PORT or HOST:PORT (localhost:9000).
    #[arg(long, default_value = "127.0.0.1:8014")]
    addr: String,
    /// Access key clients must sign with.
    #[arg(long, default_value = gantry_server::DEFAULT_ACCESS_KEY)]
    access_key: String,
    /// Secret key clients must sign with.
    #[arg(long, default_value = gantry_server::DEFAULT_SECRET_KEY)]
    secret_key: String,
    /// Accept requests without verifying signatures.
    #[arg(long)]
    no_auth: bool,
    /// Buckets to create at start (they are directories under --dir).
    #[arg(long = "bucket")]
    buckets: Vec<String>,
    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Serve HTTPS with a fresh CA and localhost certificate written to DIR (ca.pem, cert.pem,
    /// key.pem; replaced on every start); clients trust DIR/ca.pem.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["tls_cert", "tls_key"])]
    tls_self_signed: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    // Colour codes only on a terminal: a log file or a CI capture gets plain text.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("GANTRY_LOG"))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let matches = <Cli as clap::CommandFactory>::command().get_matches();
    let mut cli = <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Some((_, sub)), Command::Cp(cp::CpArgs { fleet, .. }) | Command::Sync(sync::SyncArgs { fleet, .. })) =
        (matches.subcommand(), &mut cli.command)
    {
        fleet.ordered_filters = fleet::Filters::ordered_from(sub);
    }
    let result = match cli.command {
        Command::Cp(args) => cp::run(args),
        Command::Serve(args) => serve(args),
        Command::Demo(args) => demo::run(args),
        Command::Uploads(args) => uploads::run(args),
        Command::Ls(args) => ls::run(args),
        Command::Rm(args) => rm::run(args),
        Command::Sync(args) => sync::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry: {e}");
            exit_status(e.as_ref())
        }
    }
}

/// Exit statuses a script can branch on (documented in the README): 0 success, 1 any other
/// failure, 2 usage (clap's own), 3 the bucket or key does not exist, 4 access denied
/// (credentials or permissions), 130 / 143 interrupted by SIGINT / SIGTERM.
fn exit_status(e: &(dyn std::error::Error + 'static)) -> ExitCode {
    if let Some(i) = e.downcast_ref::<interrupt::Interrupted>() {
        return ExitCode::from(i.status);
    }
    match e.downcast_ref::<gantry::Error>().map(gantry::Error::kind) {
        Some(gantry::ErrorKind::NotFound) => ExitCode::from(3),
        Some(gantry::ErrorKind::AccessDenied | gantry::ErrorKind::Credentials) => ExitCode::from(4),
        Some(gantry::ErrorKind::InvalidInput) => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    }
}

/// Errors the CLI reports: the engine's typed errors, or a usage/local problem.
type CliResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn serve(args: ServeArgs) -> CliResult {
    use std::net::ToSocketAddrs;
    let addr = args
        .addr
        .to_socket_addrs()
        .map_err(|e| format!("--addr {}: {e}", args.addr))?
        .next()
        .ok_or_else(|| format!("--addr {} resolves to no address", args.addr))?;
    if args.dir.exists() && !args.dir.is_dir() {
        return Err(format!("--dir {} is a file, not a directory", args.dir.display()).into());
    }
    for b in &args.buckets {
        std::fs::create_dir_all(args.dir.join(b))
            .map_err(|e| format!("cannot create bucket directory {}: {e}", args.dir.join(b).display()))?;
    }
    let mut config =
        gantry_server::ServerConfig::new(args.dir.clone(), addr).with_credentials(&args.access_key, &args.secret_key);
    if args.no_auth {
        config = config.without_auth();
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        config = config.with_tls(gantry_server::TlsConfig::new(cert, key));
    }
    if let Some(dir) = &args.tls_self_signed {
        let files = gantry_server::tls::self_signed(dir)
            .map_err(|e| format!("cannot write certificates to {}: {e}", dir.display()))?;
        eprintln!(
            "self-signed TLS: clients trust {ca} (e.g. --ca-bundle {ca} or AWS_CA_BUNDLE={ca})",
            ca = files.ca.display()
        );
        config = config.with_tls(files.tls_config());
    }
    let scheme = config.scheme();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let server = gantry_server::serve(config, Some(tx), async {
            let _ = tokio::signal::ctrl_c().await;
        });
        tokio::pin!(server);
        tokio::select! {
            addr = rx => {
                if let Ok(addr) = addr {
                    eprintln!("serving {} at {scheme}://{addr} (Ctrl-C stops)", args.dir.display());
                }
                server.await?;
            }
            res = &mut server => res?,
        }
        Ok::<_, std::io::Error>(())
    })
    .map_err(|e| format!("cannot serve on {addr}: {e}"))?;
    Ok(())
}
