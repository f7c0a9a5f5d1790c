//! `gantry`: copy objects to and from S3 (`cp`), run the embedded S3-compatible server
//! (`serve`), and show the engine end to end with no AWS account (`demo`).

mod cp;
mod demo;
mod progress;

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
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Root directory of the stored data.
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Listen address.
    #[arg(long, default_value = "127.0.0.1:8014")]
    addr: std::net::SocketAddr,
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
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("GANTRY_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Cp(args) => cp::run(args),
        Command::Serve(args) => serve(args),
        Command::Demo(args) => demo::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gantry: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Errors the CLI reports: the engine's typed errors, or a usage/local problem.
type CliResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

fn serve(args: ServeArgs) -> CliResult {
    for b in &args.buckets {
        std::fs::create_dir_all(args.dir.join(b))?;
    }
    let credentials = (!args.no_auth).then(|| (args.access_key.clone(), args.secret_key.clone()));
    let config = gantry_server::ServerConfig { root: args.dir.clone(), addr: args.addr, credentials };
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
                    eprintln!("serving {} at http://{addr} (Ctrl-C stops)", args.dir.display());
                }
                server.await?;
            }
            res = &mut server => res?,
        }
        Ok::<_, std::io::Error>(())
    })?;
    Ok(())
}
