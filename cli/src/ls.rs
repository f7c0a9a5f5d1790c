//! `gantry ls s3://bucket[/prefix]`: the objects under a prefix, one "directory" level at a
//! time (as `aws s3 ls` shows them) or all of them with `--recursive`; `gantry ls` alone: the
//! buckets.

use clap::Args;
use indicatif::HumanBytes;

use crate::cp::ClientArgs;
use crate::target::S3Target;
use crate::CliResult;

#[derive(Debug, Args)]
pub(crate) struct LsArgs {
    /// s3://bucket or s3://bucket/prefix; none lists the buckets.
    target: Option<String>,
    /// Every key under the prefix, not one level.
    #[arg(long, short = 'r')]
    recursive: bool,
    /// One JSON object per line: {"key", "size", "etag", "last_modified"}, or {"prefix"} for a
    /// level below (without --recursive).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    client: ClientArgs,
}

pub(crate) fn run(args: LsArgs) -> CliResult {
    let client = args.client.client()?;
    let Some(target) = &args.target else {
        for b in client.block_on(client.list_buckets())? {
            if args.json {
                println!("{}", serde_json::json!({"bucket": b.name, "created": b.creation_date}));
            } else {
                println!("{:>19} {}", shown_time(b.creation_date.as_deref()), b.name);
            }
        }
        return Ok(());
    };
    let target = S3Target::parse(target)?;
    let mut options = gantry::ListOptions::new();
    if !target.key.is_empty() {
        options = options.prefix(target.key.clone());
    }
    if !args.recursive {
        options = options.delimiter("/");
    }
    // Without --recursive, names are shown below the last `/` of the prefix, as aws s3 ls does.
    let shown_from = if args.recursive { 0 } else { target.key.rfind('/').map_or(0, |i| i + 1) };
    loop {
        let page = client.block_on(client.list_objects(&target.bucket, &options))?;
        for p in &page.common_prefixes {
            if args.json {
                println!("{}", serde_json::json!({ "prefix": p }));
            } else {
                println!("{:>19} {:>12} {}", "", "PRE", &p[shown_from.min(p.len())..]);
            }
        }
        for o in &page.objects {
            if args.json {
                let line =
                    serde_json::json!({"key": o.key, "size": o.size, "etag": o.etag, "last_modified": o.last_modified});
                println!("{line}");
            } else {
                let when = shown_time(o.last_modified.as_deref());
                println!("{when:>19} {:>12} {}", HumanBytes(o.size).to_string(), &o.key[shown_from.min(o.key.len())..]);
            }
        }
        match page.next_continuation_token {
            Some(t) => options.continuation_token = Some(t),
            None => return Ok(()),
        }
    }
}

/// An S3 time (`2026-11-24T07:31:00.000Z`) as `2026-11-24 07:31:00`, as `aws s3 ls` shows it.
fn shown_time(t: Option<&str>) -> String {
    t.map_or(String::new(), |t| t.replace('T', " ").chars().take(19).collect())
}
