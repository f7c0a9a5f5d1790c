//! `gantry sync SRC DST`: local dir → prefix, prefix → local dir, or prefix → prefix.

use clap::Args;

use crate::cp::ClientArgs;
use crate::fleet::{Filters, FleetArgs, SyncRules};
use crate::CliResult;

#[derive(Debug, Args)]
pub(crate) struct SyncArgs {
    /// A local directory or s3://bucket/prefix.
    src: String,
    /// A local directory or s3://bucket/prefix.
    dst: String,
    /// Delete what the destination has and the source does not (within --include/--exclude).
    #[arg(long)]
    delete: bool,
    /// Compare same-size objects by ETag (a local file's MD5, or its multipart form) instead
    /// of by modification time.
    #[arg(long)]
    checksum: bool,
    /// One JSON object per object and a summary line.
    #[arg(long)]
    json: bool,
    /// No progress bar and no line per object.
    #[arg(long, short)]
    quiet: bool,
    /// Do not guess an upload's Content-Type from its extension.
    #[arg(long)]
    no_guess_mime_type: bool,
    #[command(flatten)]
    pub(crate) fleet: FleetArgs,
    #[command(flatten)]
    client: ClientArgs,
}

pub(crate) fn run(args: SyncArgs) -> CliResult {
    let filters = Filters::new(&args.fleet.ordered_filters)?;
    let out = crate::fleet::run::Output::new(&args.fleet, args.json, args.quiet, args.no_guess_mime_type);
    let client = args.client.client()?;
    let rules = SyncRules { checksum: args.checksum, delete: args.delete };
    crate::fleet::sync(&client, &args.src, &args.dst, rules, &filters, out)
}
