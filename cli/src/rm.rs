//! `gantry rm s3://bucket/key`, or every key under a prefix with `--recursive`: DeleteObjects,
//! 1,000 keys a request, each page of the listing deleted while the next is listed (a prefix
//! of millions of keys starts at once and is never held in memory whole). `--dry-run` lists
//! what would go and deletes nothing.

use std::collections::HashMap;

use clap::Args;
use futures::StreamExt;
use gantry::{Client, ListOptions};

use crate::cp::ClientArgs;
use crate::target::S3Target;
use crate::CliResult;

/// DeleteObjects requests in flight while the listing goes on.
const BATCHES_IN_FLIGHT: usize = 8;

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
    if !args.recursive {
        if target.key.is_empty() || target.key.ends_with('/') {
            return Err(format!("{}: names no key (use --recursive for a prefix)", args.target).into());
        }
        // A single key is checked first, so a typo is "not found" instead of a silent success.
        client.block_on(client.head_object(&target.bucket, &target.key))?;
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<String>>(BATCHES_IN_FLIGHT);
    let (client_ref, target_ref, recursive) = (&client, &target, args.recursive);
    // Owns `tx`, so the deleter's queue closes when the listing ends.
    let lister = async move {
        let (client, target) = (client_ref, target_ref);
        if !recursive {
            let _ = tx.send(vec![target.key.clone()]).await;
            return Ok::<(), gantry::Error>(());
        }
        let mut options = ListOptions::new();
        if !target.key.is_empty() {
            options = options.prefix(target.key.as_str());
        }
        loop {
            let page: gantry::ListPage = client.list_objects(&target.bucket, &options).await?;
            let keys: Vec<String> = page.objects.into_iter().map(|o| o.key).collect();
            if !keys.is_empty() && tx.send(keys).await.is_err() {
                return Ok(());
            }
            match page.next_continuation_token {
                Some(token) => options.continuation_token = Some(token),
                None => return Ok(()),
            }
        }
    };
    let mut tally = (0u64, 0usize); // deleted, failed
    let deleter = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|keys| (keys, rx)) })
        .map(|keys| delete_page(&client, &target.bucket, keys, args.dry_run))
        .buffered(BATCHES_IN_FLIGHT)
        .for_each(|(keys, refused)| {
            for k in &keys {
                report(&target, k, refused.get(k.as_str()), &args, &mut tally);
            }
            std::future::ready(())
        });
    let (listed, ()) = client.block_on(async { futures::join!(lister, deleter) });
    let (deleted, failed) = tally;
    if args.json && !args.dry_run {
        println!("{}", serde_json::json!({"summary": {"deleted": deleted, "failed": failed}}));
    }
    listed?;
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} of {} keys were not deleted", deleted + failed as u64).into())
    }
}

/// Deletes one page of keys (nothing with `dry_run`); returns them with the refused ones and
/// why. A request refused as a whole refuses each of its keys.
async fn delete_page(
    client: &Client,
    bucket: &str,
    keys: Vec<String>,
    dry_run: bool,
) -> (Vec<String>, HashMap<String, Refusal>) {
    if dry_run {
        return (keys, Default::default());
    }
    let refused = match client.delete_objects(bucket, keys.iter().cloned()).await {
        Ok(out) => out
            .errors
            .into_iter()
            .map(|e| (e.key, Refusal { code: e.code.unwrap_or_else(|| "error".into()), message: e.message }))
            .collect(),
        Err(e) => {
            let code = e.s3_code().map_or_else(|| format!("{:?}", e.kind()), str::to_string);
            let refusal = Refusal { code, message: Some(e.to_string()) };
            keys.iter().map(|k| (k.clone(), refusal.clone())).collect()
        }
    };
    (keys, refused)
}

/// Why a key was not deleted: the S3 code (`AccessDenied`) and the server's message.
#[derive(Debug, Clone)]
struct Refusal {
    code: String,
    message: Option<String>,
}

/// One key's line (or JSON object), counted into `(deleted, failed)`.
fn report(target: &S3Target, key: &str, refused: Option<&Refusal>, args: &RmArgs, tally: &mut (u64, usize)) {
    match (refused, args.json, args.dry_run) {
        (_, true, true) => println!("{}", serde_json::json!({"key": key, "dry_run": true})),
        (_, false, true) => println!("(dryrun) delete: {}", target.uri(key)),
        (None, true, false) => println!("{}", serde_json::json!({"key": key, "deleted": true})),
        (None, false, false) => println!("delete: {}", target.uri(key)),
        (Some(e), true, false) => {
            println!("{}", serde_json::json!({"key": key, "error": e.code, "message": e.message}))
        }
        (Some(e), false, false) => {
            eprintln!("delete failed: {}: {} {}", target.uri(key), e.code, e.message.as_deref().unwrap_or(""))
        }
    }
    match refused {
        Some(_) => tally.1 += 1,
        None if !args.dry_run => tally.0 += 1,
        None => {}
    }
}
