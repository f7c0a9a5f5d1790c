//! Commands over many objects: `cp --recursive` (and wildcard sources) and `sync`. They plan
//! a list of jobs from listings of both sides (`listing`), select names with `--include` /
//! `--exclude` (`filter`), then run the jobs over one client (`run`).
//!
//! Names are compared and mapped relative to each side's root: `s3://b/data/` and `./data`
//! both name `train/shard-1.tar`. A prefix that does not end in `/` is treated as if it did,
//! as `aws s3` does for recursive commands, so `s3://b/data` does not take in `s3://b/database`.

mod filter;
mod listing;
pub(crate) mod run;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;
use gantry::Client;

pub(crate) use filter::Filters;
use listing::{local_entries, local_path, s3_entries, Entry};
use run::{Job, Output};

use crate::target::S3Target;
use crate::CliResult;

/// Flags every fleet command takes.
#[derive(Debug, Args, Clone)]
pub(crate) struct FleetArgs {
    /// Objects in flight at once (each object's parts keep the client's own parallelism).
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub(crate) concurrency: usize,
    /// Select names matching this glob, relative to the source (`*` also matches `/`);
    /// --include and --exclude apply in the order given, the last match deciding.
    #[arg(long, value_name = "GLOB")]
    pub(crate) include: Vec<String>,
    /// Leave out names matching this glob (see --include).
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// --include (true) and --exclude (false) in command-line order, filled from the parsed
    /// arguments by `main` (see [`Filters::ordered_from`]).
    #[arg(skip)]
    pub(crate) ordered_filters: Vec<(bool, String)>,
    /// Print what would be done; change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// One side of a fleet command.
#[derive(Debug, Clone)]
pub(crate) enum Side {
    S3(S3Target),
    Local(PathBuf),
}

impl Side {
    pub(crate) fn parse(text: &str) -> CliResult<Side> {
        if text.starts_with("s3://") {
            return Ok(Side::S3(S3Target::parse(text)?));
        }
        if text == "-" {
            return Err("- (stdin/stdout) takes one object, not a fleet".into());
        }
        Ok(Side::Local(PathBuf::from(text)))
    }
}

/// A prefix as a directory: empty, or ending in `/`.
fn as_dir(prefix: &str) -> String {
    if prefix.is_empty() || prefix.ends_with('/') {
        prefix.to_string()
    } else {
        format!("{prefix}/")
    }
}

/// The wildcard part of an S3 source: `(directory prefix, glob of the last segment)` when the
/// last segment has `*`, `?` or `[`.
pub(crate) fn wildcard(key: &str) -> Option<(String, String)> {
    let (dir, last) = key.rsplit_once('/').map_or(("", key), |(d, l)| (d, l));
    last.contains(['*', '?', '['])
        .then(|| (if dir.is_empty() { String::new() } else { format!("{dir}/") }, last.to_string()))
}

/// Where the names of an S3 side start (the prefix as a directory, or a wildcard's
/// directory) and, for a wildcard, the matcher of its last segment.
fn s3_root(t: &S3Target) -> CliResult<(String, Option<globset::GlobMatcher>)> {
    Ok(match wildcard(&t.key) {
        Some((dir, pattern)) => {
            let glob = globset::GlobBuilder::new(&pattern)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("bad wildcard {pattern:?}: {e}"))?
                .compile_matcher();
            (dir, Some(glob))
        }
        None => (as_dir(&t.key), None),
    })
}

/// The selected entries of a side: every object or file below its root (or, for a wildcard
/// source, those of its directory matching the wildcard), filtered.
fn entries(client: &Client, side: &Side, filters: &Filters) -> CliResult<(String, Vec<Entry>)> {
    let (root, all) = match side {
        Side::Local(dir) => (String::new(), local_entries(dir)?),
        Side::S3(t) => {
            let (root, glob) = s3_root(t)?;
            let listed = s3_entries(client, &t.bucket, &root)?;
            (root, listed.into_iter().filter(|e| glob.as_ref().is_none_or(|g| g.is_match(&e.name))).collect())
        }
    };
    Ok((root, all.into_iter().filter(|e| filters.selects(&e.name)).collect()))
}

/// Refuses a copy whose destination lies inside its source (it would copy its own output).
fn check_not_inside(src: &Side, dst: &Side) -> CliResult {
    match (src, dst) {
        (Side::S3(s), Side::S3(d)) if s.bucket == d.bucket => {
            let (sp, dp) = (as_dir(&s.key), as_dir(&d.key));
            if dp.starts_with(&sp) {
                return Err(format!("s3://{}/{dp} is inside the source s3://{}/{sp}", d.bucket, s.bucket).into());
            }
        }
        (Side::Local(s), Side::Local(_)) => {
            return Err(format!("{}: one side must be an s3:// URL", s.display()).into());
        }
        _ => {}
    }
    Ok(())
}

/// The job moving `e` (named below `src_root`) to the same name below `dst`.
fn job_for(src: &Side, src_root: &str, e: &Entry, dst: &Side) -> Job {
    let refused = |source: String, reason: String| Job::Refused { source, reason };
    match (src, dst) {
        (Side::Local(dir), Side::S3(d)) => match local_path(dir, &e.name) {
            Ok(path) => Job::Upload {
                path,
                bucket: d.bucket.clone(),
                key: format!("{}{}", as_dir(&d.key), e.name),
                size: e.size,
            },
            Err(reason) => refused(e.name.clone(), reason),
        },
        (Side::S3(s), Side::Local(dir)) => {
            let key = format!("{src_root}{}", e.name);
            match local_path(dir, &e.name) {
                Ok(path) => Job::Download { bucket: s.bucket.clone(), key, path, size: e.size, modified: e.modified },
                // A key such as `a/../../x` has no place in the destination: that object
                // fails, the others go.
                Err(reason) => refused(format!("s3://{}/{key}", s.bucket), reason),
            }
        }
        (Side::S3(s), Side::S3(d)) => Job::Copy {
            src_bucket: s.bucket.clone(),
            src_key: format!("{src_root}{}", e.name),
            bucket: d.bucket.clone(),
            key: format!("{}{}", as_dir(&d.key), e.name),
            size: e.size,
        },
        (Side::Local(_), Side::Local(_)) => refused(e.name.clone(), "one side must be an s3:// URL".into()),
    }
}

/// Before any transfer: a local destination must be a directory (or not exist yet).
fn check_local_destination(dst: &Side) -> CliResult {
    if let Side::Local(dir) = dst {
        if dir.exists() && !dir.is_dir() {
            return Err(
                format!("{} is a file; the destination of many objects must be a directory", dir.display()).into()
            );
        }
    }
    Ok(())
}

/// Both sides of a fleet command, refused before any transfer when the destination lies in
/// the source or a local destination is a file.
fn sides(src: &str, dst: &str) -> CliResult<(Side, Side)> {
    let (src, dst) = (Side::parse(src)?, Side::parse(dst)?);
    check_not_inside(&src, &dst)?;
    check_local_destination(&dst)?;
    Ok((src, dst))
}

/// `cp --recursive SRC DST`, or `cp` of a wildcard source. An S3 source is listed page by
/// page while the first objects already move (see [`run::run_planned`]).
pub(crate) fn cp(
    client: &Client,
    src: &str,
    dst: &str,
    fleet: &FleetArgs,
    filters: &Filters,
    out: Output,
) -> CliResult {
    let (src, dst) = sides(src, dst)?;
    let count = match &src {
        Side::S3(t) => {
            let (root, glob) = s3_root(t)?;
            let (src, dst, root) = (&src, &dst, root.as_str());
            run::run_planned(client, out, |tx| async move {
                let selects = |e: &Entry| glob.as_ref().is_none_or(|g| g.is_match(&e.name)) && filters.selects(&e.name);
                listing::s3_pages(client, &t.bucket, root, |page| {
                    let tx = tx.clone();
                    let jobs: Vec<Job> =
                        page.iter().filter(|e| selects(e)).map(|e| job_for(src, root, e, dst)).collect();
                    async move {
                        for job in jobs {
                            if tx.send(job).await.is_err() {
                                return false;
                            }
                        }
                        true
                    }
                })
                .await?;
                Ok(())
            })?
        }
        Side::Local(_) => {
            let (root, selected) = entries(client, &src, filters)?;
            let jobs = selected.iter().map(|e| job_for(&src, &root, e, &dst)).collect();
            let n = selected.len();
            if n > 0 {
                run::run(client, jobs, out)?;
            }
            n
        }
    };
    if count == 0 {
        let what = match &src {
            Side::S3(t) => t.uri(&t.key),
            Side::Local(p) => p.display().to_string(),
        };
        return Err(format!("no objects matched {what}{}", filter_note(fleet)).into());
    }
    Ok(())
}

fn filter_note(fleet: &FleetArgs) -> &'static str {
    if fleet.include.is_empty() && fleet.exclude.is_empty() {
        ""
    } else {
        " (after --include/--exclude)"
    }
}

/// How `sync` decides that a destination copy differs from its source.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyncRules {
    /// Compare contents by ETag (MD5 for local files) instead of modification times.
    pub(crate) checksum: bool,
    /// Delete destination names the source does not have (within the filters).
    pub(crate) delete: bool,
}

/// `sync SRC DST`: copies what is missing at the destination or differs from it; with
/// `delete`, removes what the source does not have.
pub(crate) fn sync(
    client: &Client,
    src: &str,
    dst: &str,
    rules: SyncRules,
    filters: &Filters,
    out: Output,
) -> CliResult {
    let (src, dst) = sides(src, dst)?;
    if let Side::S3(t) = &src {
        if wildcard(&t.key).is_some() {
            return Err("sync takes a prefix or a directory, not a wildcard".into());
        }
    }
    let (src_root, src_entries) = entries(client, &src, filters)?;
    let dst_entries = match &dst {
        Side::Local(dir) if !dir.exists() => Vec::new(),
        _ => entries(client, &dst, filters)?.1,
    };
    let existing: HashMap<&str, &Entry> = dst_entries.iter().map(|e| (e.name.as_str(), e)).collect();
    let mut jobs = Vec::new();
    for e in &src_entries {
        let differs = match existing.get(e.name.as_str()) {
            None => true,
            Some(d) if d.size != e.size => true,
            Some(d) if rules.checksum => !same_content(client, &src, e, &dst, d)?,
            // The source is newer than the copy. An upload's LastModified is its upload time,
            // and a download's mtime is set to the object's LastModified, so what sync itself
            // copied compares equal (or older) on the next run.
            Some(d) => matches!((e.modified, d.modified), (Some(s), Some(t)) if s > t),
        };
        if differs {
            jobs.push(job_for(&src, &src_root, e, &dst));
        }
    }
    if rules.delete {
        let wanted: std::collections::HashSet<&str> = src_entries.iter().map(|e| e.name.as_str()).collect();
        for d in dst_entries.iter().filter(|d| !wanted.contains(d.name.as_str())) {
            jobs.push(match &dst {
                Side::S3(t) => {
                    Job::DeleteObject { bucket: t.bucket.clone(), key: format!("{}{}", as_dir(&t.key), d.name) }
                }
                Side::Local(dir) => Job::DeleteFile { path: local_path(dir, &d.name)? },
            });
        }
    }
    run::run(client, jobs, out)
}

/// Whether two same-size entries hold the same bytes, by ETag: an S3 object's ETag against
/// another's, or against the ETag a local file would get (MD5, or the multipart form
/// `md5(part md5s)-N` with the client's part size). An ETag that cannot be compared (SSE-KMS,
/// another part size) counts as different, so the object is copied again.
fn same_content(client: &Client, src: &Side, s: &Entry, dst: &Side, d: &Entry) -> CliResult<bool> {
    let unquote = |t: &Option<String>| t.as_deref().map(|v| v.trim_matches('"').to_string());
    // A local file against an object's ETag, computed in that ETag's form.
    let file_matches = |dir: &Path, name: &str, remote: Option<String>| -> CliResult<bool> {
        let Some(remote) = remote else { return Ok(false) };
        let etag = local_etag(&local_path(dir, name)?, &remote, client.config().part_size_bytes())?;
        Ok(etag.as_deref() == Some(remote.as_str()))
    };
    match (src, dst) {
        (Side::S3(_), Side::S3(_)) => Ok(unquote(&s.etag).is_some() && unquote(&s.etag) == unquote(&d.etag)),
        (Side::Local(dir), Side::S3(_)) => file_matches(dir, &s.name, unquote(&d.etag)),
        (Side::S3(_), Side::Local(dir)) => file_matches(dir, &d.name, unquote(&s.etag)),
        _ => Ok(false),
    }
}

/// The ETag `path` would have in the form of `like` (plain MD5, or `...-N` multipart), or
/// `None` when `like`'s part count does not match the part size.
fn local_etag(path: &Path, like: &str, part_size: u64) -> CliResult<Option<String>> {
    use md5::{Digest, Md5};
    let mut file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let size = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
    let read_md5 = |file: &mut std::fs::File, len: u64| -> CliResult<[u8; 16]> {
        let mut h = Md5::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut left = len;
        while left > 0 {
            let n =
                file.read(&mut buf[..left.min(1 << 20) as usize]).map_err(|e| format!("{}: {e}", path.display()))?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            left -= n as u64;
        }
        Ok(h.finalize().into())
    };
    match like.split_once('-') {
        None => Ok(Some(hex::encode(read_md5(&mut file, size)?))),
        Some((_, n)) => {
            let parts: u64 = n.parse().unwrap_or(0);
            let needed = size.div_ceil(10_000).div_ceil(1 << 20) << 20;
            let part = part_size.max(needed);
            if parts == 0 || size.div_ceil(part) != parts {
                return Ok(None);
            }
            let mut all = Md5::new();
            for i in 0..parts {
                all.update(read_md5(&mut file, part.min(size - i * part))?);
            }
            Ok(Some(format!("{}-{parts}", hex::encode(all.finalize()))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_split_at_the_last_segment() {
        assert_eq!(wildcard("train/shard-0*.tar"), Some(("train/".into(), "shard-0*.tar".into())));
        assert_eq!(wildcard("a?"), Some((String::new(), "a?".into())));
        assert_eq!(wildcard("train/*/x"), None);
        assert_eq!(as_dir("data"), "data/");
        assert_eq!(as_dir(""), "");
    }

    #[test]
    fn a_destination_inside_its_source_is_refused() {
        let s3 = |k: &str| Side::S3(S3Target { bucket: "b".into(), key: k.into() });
        assert!(check_not_inside(&s3("data"), &s3("data/copy")).is_err());
        assert!(check_not_inside(&s3(""), &s3("x/")).is_err());
        assert!(check_not_inside(&s3("data"), &s3("database")).is_ok());
        assert!(check_not_inside(&s3("data/"), &s3("other/")).is_ok());
    }

    #[test]
    fn local_etags_match_s3s_forms() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"hello").unwrap();
        assert_eq!(local_etag(&path, "x", 8 << 20).unwrap().unwrap(), "5d41402abc4b2a76b9719d911017c592");
        let data: Vec<u8> = (0..(5 << 20) + 10).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let md5 = |b: &[u8]| -> [u8; 16] { md5::Md5::digest(b).into() };
        use md5::Digest;
        let mut joined = Vec::new();
        joined.extend(md5(&data[..5 << 20]));
        joined.extend(md5(&data[5 << 20..]));
        let want = format!("{}-2", hex::encode(md5(&joined)));
        assert_eq!(local_etag(&path, "abc-2", 5 << 20).unwrap().unwrap(), want);
        assert_eq!(local_etag(&path, "abc-3", 5 << 20).unwrap(), None, "another part size");
    }
}
