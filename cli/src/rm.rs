//! `gantry rm s3://bucket/key`, or every key under a prefix with `--recursive` (DeleteObjects,
//! 1,000 keys a request). `--dry-run` lists what would go and deletes nothing.

use clap::Args;

use crate::cp::ClientArgs;
use crate::target::S3Target;
use crate::CliResult;

#[derive(Debug, Args)]
pub(crate) struct RmArgs {
    /// s3://bucket/key, or s3://bucket/prefix with --recursive.
    target: String,
    /// Every key under the prefix.
    #[arg(long, short = 'r')]
    recursive: bool,
    /// Print what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// One JSON object per key ({"key", "deleted" | "error"}) and a summary line.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    client: ClientArgs,
}

pub(crate) fn run(args: RmArgs) -> CliResult {
    let target = S3Target::parse(&args.target)?;
    let client = args.client.client()?;
    let keys: Vec<String> = if args.recursive {
        let prefix = (!target.key.is_empty()).then_some(target.key.as_str());
        client.block_on(client.list_all(&target.bucket, prefix))?.into_iter().map(|o| o.key).collect()
    } else {
        if target.key.is_empty() || target.key.ends_with('/') {
            return Err(format!("{}: names no key (use --recursive for a prefix)", args.target).into());
        }
        // A single key is checked first, so a typo is "not found" instead of a silent success.
        client.block_on(client.head_object(&target.bucket, &target.key))?;
        vec![target.key.clone()]
    };
    if args.dry_run {
        for k in &keys {
            if args.json {
                println!("{}", serde_json::json!({"key": k, "dry_run": true}));
            } else {
                println!("(dryrun) delete: {}", target.uri(k));
            }
        }
        return Ok(());
    }
    let out = client.block_on(client.delete_objects(&target.bucket, keys.iter().cloned()))?;
    let failed: std::collections::HashMap<&str, &gantry::DeleteObjectError> =
        out.errors.iter().map(|e| (e.key.as_str(), e)).collect();
    for k in &keys {
        match (failed.get(k.as_str()), args.json) {
            (None, true) => println!("{}", serde_json::json!({"key": k, "deleted": true})),
            (None, false) => println!("delete: {}", target.uri(k)),
            (Some(e), true) => println!("{}", serde_json::json!({"key": k, "error": e.code, "message": e.message})),
            (Some(e), false) => eprintln!(
                "delete failed: {}: {} {}",
                target.uri(k),
                e.code.as_deref().unwrap_or("error"),
                e.message.as_deref().unwrap_or("")
            ),
        }
    }
    if args.json {
        println!("{}", serde_json::json!({"summary": {"deleted": out.deleted, "failed": out.errors.len()}}));
    }
    if out.errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{} of {} keys were not deleted", out.errors.len(), keys.len()).into())
    }
}
