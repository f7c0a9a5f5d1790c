//! `gantry uploads ls|abort`: what a killed process (`kill -9`, a lost machine) left behind.
//! Unfinished multipart uploads keep their parts, and S3 bills them until they are aborted.

use std::time::{Duration, SystemTime};

use clap::{Args, Subcommand};

use crate::cp::ClientArgs;
use crate::target::S3Target;
use crate::CliResult;

#[derive(Debug, Args)]
pub(crate) struct UploadsArgs {
    #[command(subcommand)]
    command: UploadsCommand,
}

#[derive(Debug, Subcommand)]
enum UploadsCommand {
    /// List unfinished multipart uploads: s3://bucket[/prefix].
    Ls {
        /// s3://bucket or s3://bucket/prefix.
        target: String,
        /// One JSON object per upload.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Abort one upload (s3://bucket/key --upload-id ID), or all under a prefix (--all).
    Abort {
        /// s3://bucket/key with --upload-id, or s3://bucket[/prefix] with --all.
        target: String,
        /// The upload to abort.
        #[arg(long, conflicts_with = "all")]
        upload_id: Option<String>,
        /// Every upload under the prefix.
        #[arg(long)]
        all: bool,
        /// With --all: only uploads started longer ago than this (e.g. 1d, 12h, 30m).
        #[arg(long, requires = "all", value_parser = humantime::parse_duration)]
        older_than: Option<Duration>,
        #[command(flatten)]
        client: ClientArgs,
    },
}

fn split(target: &str) -> CliResult<(String, String)> {
    let t = S3Target::parse(target)?;
    Ok((t.bucket, t.key))
}

pub(crate) fn run(args: UploadsArgs) -> CliResult {
    match args.command {
        UploadsCommand::Ls { target, json, client } => {
            let (bucket, prefix) = split(&target)?;
            let client = client.client()?;
            let prefix = (!prefix.is_empty()).then_some(prefix);
            for u in client.block_on(client.list_multipart_uploads(&bucket, prefix.as_deref()))? {
                let initiated = u.initiated.map(|t| humantime::format_rfc3339_seconds(t).to_string());
                if json {
                    println!("{}", serde_json::json!({"key": u.key, "upload_id": u.upload_id, "initiated": initiated}));
                } else {
                    println!("{}  {}  {}", initiated.as_deref().unwrap_or("-"), u.upload_id, u.key);
                }
            }
            Ok(())
        }
        UploadsCommand::Abort { target, upload_id, all, older_than, client } => {
            let (bucket, key) = split(&target)?;
            let client = client.client()?;
            match (upload_id, all) {
                (Some(id), false) => {
                    if key.is_empty() {
                        return Err("--upload-id needs s3://bucket/key".into());
                    }
                    client.block_on(client.abort_multipart_upload(&bucket, &key, &id))?;
                    eprintln!("aborted {id} (s3://{bucket}/{key})");
                    Ok(())
                }
                (None, true) => {
                    let prefix = (!key.is_empty()).then_some(key);
                    let uploads = client.block_on(client.list_multipart_uploads(&bucket, prefix.as_deref()))?;
                    let now = SystemTime::now();
                    let (mut aborted, mut kept, mut failed) = (0, 0, 0);
                    for u in uploads {
                        let old_enough = match (older_than, u.initiated) {
                            (None, _) => true,
                            (Some(age), Some(t)) => now.duration_since(t).unwrap_or_default() >= age,
                            // No start time: never aborted by age.
                            (Some(_), None) => false,
                        };
                        if !old_enough {
                            kept += 1;
                            continue;
                        }
                        match client.block_on(client.abort_multipart_upload(&bucket, &u.key, &u.upload_id)) {
                            Ok(()) => {
                                aborted += 1;
                                eprintln!("aborted {} (s3://{bucket}/{})", u.upload_id, u.key);
                            }
                            Err(e) => {
                                failed += 1;
                                eprintln!("gantry: cannot abort {} (s3://{bucket}/{}): {e}", u.upload_id, u.key);
                            }
                        }
                    }
                    eprintln!("{aborted} aborted, {kept} younger kept, {failed} failed");
                    if failed > 0 {
                        return Err(format!("{failed} uploads could not be aborted").into());
                    }
                    Ok(())
                }
                _ => Err("give --upload-id ID or --all".into()),
            }
        }
    }
}
