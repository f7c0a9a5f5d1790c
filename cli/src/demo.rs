//! `gantry demo`: the whole engine on a fresh machine, no AWS account needed.

use std::time::Instant;

use clap::Args;
use gantry::{parse_size, Client, ClientConfig, Credentials, CredentialsSource};
use sha2::{Digest, Sha256};

use crate::CliResult;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Size of the generated object.
    #[arg(long, default_value = "256MiB", value_parser = |s: &str| parse_size(s).map_err(|e| e.to_string()))]
    size: u64,
    /// Concurrent connections.
    #[arg(long, default_value_t = 16)]
    max_connections: usize,
    /// Print the figures as one JSON object.
    #[arg(long)]
    json: bool,
    /// Serve HTTPS with a freshly made private CA, which the client trusts through its
    /// ca_bundle setting: the TLS path end to end.
    #[arg(long)]
    tls: bool,
}

pub(crate) fn run(args: DemoArgs) -> CliResult {
    let dir = tempfile::tempdir()?;
    // `ServerConfig::new` verifies signatures made with the default keys, used below.
    let mut server_config = gantry_server::ServerConfig::new(dir.path().join("s3"), "127.0.0.1:0".parse()?);
    let mut ca = None;
    if args.tls {
        let certs = gantry_server::tls::self_signed(&dir.path().join("tls"))?;
        server_config = server_config.with_tls(certs.tls_config());
        ca = Some(certs.ca);
    }
    let server = gantry_server::start_background(server_config, 2)?;
    if !args.json {
        println!("embedded S3 server (SigV4 verified) at {}", server.endpoint_url());
    }
    let mut builder = ClientConfig::builder();
    if let Some(ca) = &ca {
        builder = builder.ca_bundle(ca);
    }
    let config = builder
        .ignore_environment()
        .endpoint_url(server.endpoint_url())
        .credentials(CredentialsSource::Static(Credentials::new(
            gantry_server::DEFAULT_ACCESS_KEY,
            gantry_server::DEFAULT_SECRET_KEY,
        )))
        .max_connections(args.max_connections)
        .build()?;
    let client = Client::new(config)?;
    let size = args.size as usize;
    let mut data = vec![0u8; size];
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    let want = Sha256::digest(&data);
    let data = bytes::Bytes::from(data);

    let t = Instant::now();
    let put = client.block_on(async {
        client.create_bucket("demo").await?;
        client.put("demo", "object.bin", data.clone()).await
    })?;
    let up_s = t.elapsed().as_secs_f64();

    let mut back = vec![0u8; size];
    let t = Instant::now();
    client.block_on(client.get_into("demo", "object.bin", &mut back))?;
    let down_s = t.elapsed().as_secs_f64();
    let ok = Sha256::digest(&back) == want;
    let mib = args.size as f64 / (1024.0 * 1024.0);
    let m = client.metrics();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "bytes": args.size, "parts": put.parts, "verified": ok,
                "upload_mib_per_s": mib / up_s, "download_mib_per_s": mib / down_s,
                "requests": m.requests, "retries": m.retries, "tls": args.tls,
            })
        );
    } else {
        println!("uploaded   {mib:.0} MiB in {} parts: {:.0} MiB/s", put.parts, mib / up_s);
        println!("downloaded {mib:.0} MiB: {:.0} MiB/s", mib / down_s);
        println!("sha256 {}: {}", hex::encode(want), if ok { "verified byte for byte" } else { "MISMATCH" });
        println!("{} requests, {} retries, {} connections", m.requests, m.retries, m.connections_opened);
    }
    if !ok {
        return Err("the downloaded bytes differ from the uploaded ones".into());
    }
    drop(server);
    Ok(())
}
