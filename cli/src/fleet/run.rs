//! Runs a fleet's jobs over one client: `--concurrency` objects in flight (parts within each
//! object keep the client's own parallelism), one progress bar for objects and bytes on a
//! terminal, a line per object (`--json`: a JSON object) and a summary. A failed object is
//! reported and the others go on; the command then fails, naming every failure.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Instant, SystemTime};

use futures::StreamExt;
use gantry::{Client, CopyOptions, PutOptions};
use indicatif::{HumanBytes, ProgressBar, ProgressStyle};

use crate::interrupt::Interrupt;
use crate::CliResult;

/// One object to move.
#[derive(Debug, Clone)]
pub(crate) enum Job {
    Upload {
        path: PathBuf,
        bucket: String,
        key: String,
        size: u64,
    },
    /// `modified` becomes the file's mtime, so a later `sync` sees it as up to date.
    Download {
        bucket: String,
        key: String,
        path: PathBuf,
        size: u64,
        modified: Option<SystemTime>,
    },
    Copy {
        src_bucket: String,
        src_key: String,
        bucket: String,
        key: String,
        size: u64,
    },
    DeleteObject {
        bucket: String,
        key: String,
    },
    DeleteFile {
        path: PathBuf,
    },
    /// An object that cannot be moved (a key with no place in the destination directory):
    /// reported as failed while the others go.
    Refused {
        source: String,
        reason: String,
    },
}

impl Job {
    fn verb(&self) -> &'static str {
        match self {
            Job::Upload { .. } => "upload",
            Job::Download { .. } => "download",
            Job::Copy { .. } => "copy",
            Job::DeleteObject { .. } | Job::DeleteFile { .. } => "delete",
            Job::Refused { .. } => "skip",
        }
    }

    fn size(&self) -> u64 {
        match self {
            Job::Upload { size, .. } | Job::Download { size, .. } | Job::Copy { size, .. } => *size,
            _ => 0,
        }
    }

    fn source(&self) -> String {
        match self {
            Job::Upload { path, .. } | Job::DeleteFile { path } => path.display().to_string(),
            Job::Download { bucket, key, .. } | Job::DeleteObject { bucket, key } => format!("s3://{bucket}/{key}"),
            Job::Copy { src_bucket, src_key, .. } => format!("s3://{src_bucket}/{src_key}"),
            Job::Refused { source, .. } => source.clone(),
        }
    }

    fn destination(&self) -> Option<String> {
        match self {
            Job::Upload { bucket, key, .. } | Job::Copy { bucket, key, .. } => Some(format!("s3://{bucket}/{key}")),
            Job::Download { path, .. } => Some(path.display().to_string()),
            _ => None,
        }
    }

    /// What `aws s3` prints for it: `upload: ./a to s3://b/a`, `delete: s3://b/x`.
    fn describe(&self) -> String {
        match self.destination() {
            Some(d) => format!("{}: {} to {d}", self.verb(), self.source()),
            None => format!("{}: {}", self.verb(), self.source()),
        }
    }
}

/// How the results are shown.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) dry_run: bool,
    pub(crate) concurrency: usize,
    pub(crate) guess_mime_type: bool,
}

impl Output {
    /// The output settings of a fleet command's flags.
    pub(crate) fn new(fleet: &super::FleetArgs, json: bool, quiet: bool, no_guess_mime_type: bool) -> Output {
        Output {
            json,
            quiet,
            dry_run: fleet.dry_run,
            concurrency: fleet.concurrency,
            guess_mime_type: !no_guess_mime_type,
        }
    }
}

/// Jobs a planner may queue ahead of the runner: enough that a listing page of 1,000 never
/// waits on the transfers, few enough that a listing of millions is not held in memory.
const PLAN_AHEAD: usize = 4096;

/// Where a planner sends the jobs it makes.
pub(crate) type JobSender = tokio::sync::mpsc::Sender<Job>;

/// Runs `jobs`; fails when any failed, after all of them ran.
pub(crate) fn run(client: &Client, jobs: Vec<Job>, out: Output) -> CliResult {
    run_planned(client, out, |tx| async move {
        for job in jobs {
            if tx.send(job).await.is_err() {
                break;
            }
        }
        Ok(())
    })
    .map(|_| ())
}

/// Runs the jobs `plan` sends while `plan` is still making them (a listing pages on while the
/// first objects move, as `aws s3` and s5cmd do: a prefix of a million keys starts at once
/// and is never held in memory whole). Returns how many jobs there were. Fails when any job
/// failed, once all of them ran, or when the plan failed (a listing refused midway), once the
/// jobs it had sent ran.
pub(crate) fn run_planned<F>(client: &Client, out: Output, plan: impl FnOnce(JobSender) -> F) -> CliResult<usize>
where
    F: Future<Output = CliResult>,
{
    let started = Instant::now();
    let bar = (!out.dry_run && !out.quiet && !out.json && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(0);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} · {msg} · eta {eta}")
        {
            bar.set_style(style);
        }
        bar
    });
    let received = Cell::new(0usize);
    let mut tally =
        Tally { done: 0, bytes: 0, failures: Vec::new(), received: &received, stop: None, out, bar: bar.as_ref() };
    let stopped = Cell::new(false);
    let interrupt = Interrupt::install(client)?;
    let (tx, rx) = tokio::sync::mpsc::channel(PLAN_AHEAD);
    let planned = interrupt.run(client, async {
        let jobs = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|job| (job, rx)) });
        let running = async {
            if out.dry_run {
                jobs.for_each(|job| {
                    received.set(received.get() + 1);
                    report_dry_run(&job, out);
                    std::future::ready(())
                })
                .await;
                return;
            }
            // S3 deletes (sync --delete) are set aside and go as DeleteObjects batches after the
            // transfers, each key still reported on its own.
            let deletes = RefCell::new(Vec::new());
            // Local directories this fleet has made (downloads).
            let made_dirs = RefCell::new(HashSet::new());
            let transfers = jobs
                .take_while(|_| std::future::ready(!stopped.get()))
                .filter_map(|job| {
                    received.set(received.get() + 1);
                    if let Some(b) = &bar {
                        b.inc_length(job.size());
                    }
                    std::future::ready(match job {
                        Job::DeleteObject { .. } => {
                            deletes.borrow_mut().push(job);
                            None
                        }
                        job => Some(job),
                    })
                })
                .map(|job| {
                    let made_dirs = &made_dirs;
                    async move {
                        let result = execute(client, &job, out.guess_mime_type, made_dirs).await;
                        (job, result)
                    }
                })
                .buffer_unordered(out.concurrency.max(1));
            {
                let mut transfers = std::pin::pin!(transfers);
                while let Some((job, result)) = transfers.next().await {
                    tally.record(job, result);
                    stopped.set(tally.stop.is_some());
                }
            }
            if stopped.get() {
                return;
            }
            for (bucket, keys) in by_bucket(deletes.into_inner()) {
                let refused: HashMap<String, String> = match client.delete_objects(&bucket, keys.iter().cloned()).await
                {
                    Ok(out) => out.errors.into_iter().map(|e| (e.key.clone(), refusal(&e))).collect(),
                    Err(e) => keys.iter().map(|k| (k.clone(), e.to_string())).collect(),
                };
                for key in keys {
                    let result = refused.get(&key).map_or(Ok(0), |e| Err(JobError::Object(e.clone())));
                    tally.record(Job::DeleteObject { bucket: bucket.clone(), key }, result);
                }
            }
        };
        futures::join!(plan(tx), running).0
    })?;
    let Tally { done, bytes, failures, stop, .. } = tally;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let count = received.get();
    if out.dry_run {
        return planned.map(|()| count);
    }
    let seconds = started.elapsed().as_secs_f64();
    if out.json {
        let summary =
            serde_json::json!({"objects": done, "failed": failures.len(), "bytes": bytes, "seconds": seconds});
        println!("{}", serde_json::json!({ "summary": summary }));
    } else if !out.quiet && std::io::stderr().is_terminal() {
        eprintln!("{} objects, {} in {seconds:.1} s", done - failures.len(), HumanBytes(bytes));
    }
    let list: Vec<String> = failures.iter().map(|(src, e)| format!("  {src}: {e}")).collect();
    if let Some(e) = stop {
        // Its status (3 for a missing bucket, 4 for refused credentials) is the command's.
        eprintln!("{} of {done} objects failed:\n{}", failures.len(), list.join("\n"));
        eprintln!("stopped: every remaining object would fail the same way; none of them was tried");
        return Err(Box::new(e));
    }
    if let Err(e) = planned {
        // The plan's own error decides the exit status (a listing refused: 4); what failed
        // before it is still named.
        if !list.is_empty() {
            eprintln!("{} of {done} objects failed:\n{}", failures.len(), list.join("\n"));
        }
        return Err(e);
    }
    if failures.is_empty() {
        return Ok(count);
    }
    Err(format!("{} of {done} objects failed:\n{}", failures.len(), list.join("\n")).into())
}

fn report_dry_run(job: &Job, out: Output) {
    if out.json {
        let line = serde_json::json!({"op": job.verb(), "source": job.source(), "destination": job.destination(), "dry_run": true});
        println!("{line}");
    } else {
        println!("(dryrun) {}", job.describe());
    }
}

/// The running count of a fleet: what finished, what moved, what failed.
struct Tally<'a> {
    done: usize,
    bytes: u64,
    failures: Vec<(String, String)>,
    /// Jobs planned so far (a listing may still be adding to them).
    received: &'a Cell<usize>,
    /// The first failure that stops the fleet (see [`JobError::Fleet`]).
    stop: Option<gantry::Error>,
    out: Output,
    bar: Option<&'a ProgressBar>,
}

impl Tally<'_> {
    /// Reports one finished job and counts it.
    fn record(&mut self, job: Job, result: Result<u64, JobError>) {
        self.done += 1;
        match result {
            Ok(n) => {
                self.bytes += n;
                report_ok(&job, n, self.out, self.bar);
            }
            Err(e) => {
                let message = match &e {
                    JobError::Object(m) => m.clone(),
                    JobError::Fleet(e) => e.to_string(),
                };
                report_err(&job, &message, self.out, self.bar);
                self.failures.push((job.source(), message));
                if let (JobError::Fleet(e), None) = (e, &self.stop) {
                    self.stop = Some(e);
                }
            }
        }
        if let Some(b) = self.bar {
            b.set_position(self.bytes);
            b.set_message(format!("{}/{} objects", self.done, self.received.get()));
        }
    }
}

/// S3 delete jobs grouped by bucket, keys in their planned order.
fn by_bucket(deletes: Vec<Job>) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for job in deletes {
        if let Job::DeleteObject { bucket, key } = job {
            match groups.iter_mut().find(|(b, _)| *b == bucket) {
                Some((_, keys)) => keys.push(key),
                None => groups.push((bucket, vec![key])),
            }
        }
    }
    groups
}

/// How a key refused inside a DeleteObjects batch is shown: its S3 code and message.
fn refusal(e: &gantry::DeleteObjectError) -> String {
    match (&e.code, &e.message) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => "refused".to_string(),
    }
}

fn report_ok(job: &Job, bytes: u64, out: Output, bar: Option<&ProgressBar>) {
    if out.json {
        let line = serde_json::json!({"op": job.verb(), "source": job.source(), "destination": job.destination(), "bytes": bytes, "ok": true});
        println!("{line}");
    } else if !out.quiet {
        match bar {
            Some(b) => b.println(job.describe()),
            None => println!("{}", job.describe()),
        }
    }
}

fn report_err(job: &Job, e: &str, out: Output, bar: Option<&ProgressBar>) {
    if out.json {
        let line = serde_json::json!({"op": job.verb(), "source": job.source(), "destination": job.destination(), "ok": false, "error": e});
        println!("{line}");
    }
    let text = format!("{} failed: {e}", job.describe());
    match bar {
        Some(b) => b.println(text),
        None => eprintln!("{text}"),
    }
}

/// Why a job failed: that object alone, or a cause every other job would meet as well.
#[derive(Debug)]
enum JobError {
    Object(String),
    /// The bucket does not exist or the credentials are refused: going on would fail every
    /// remaining object the same way (10,000 lines of NoSuchBucket for one typo), so the
    /// fleet stops and the command exits with this error's status.
    Fleet(gantry::Error),
}

impl From<String> for JobError {
    fn from(message: String) -> Self {
        JobError::Object(message)
    }
}

impl From<gantry::Error> for JobError {
    fn from(e: gantry::Error) -> Self {
        let every_object = e.kind() == gantry::ErrorKind::Credentials
            || matches!(
                e.s3_code(),
                Some("NoSuchBucket" | "InvalidAccessKeyId" | "SignatureDoesNotMatch" | "ExpiredToken")
            );
        if every_object {
            JobError::Fleet(e)
        } else {
            JobError::Object(e.to_string())
        }
    }
}

/// Carries out one job; returns the bytes moved.
async fn execute(
    client: &Client,
    job: &Job,
    guess_mime_type: bool,
    made_dirs: &RefCell<HashSet<PathBuf>>,
) -> Result<u64, JobError> {
    match job {
        Job::Upload { path, bucket, key, .. } => {
            let guessed = guess_mime_type.then(|| mime_guess::from_path(path).first_raw()).flatten();
            let options = guessed.map_or_else(PutOptions::new, |ct| PutOptions::new().content_type(ct));
            let out = client.put_file_with(bucket, key, path, &options).await?;
            Ok(out.size)
        }
        Job::Download { bucket, key, path, modified, .. } => {
            // Each directory is made once per fleet, not once per file (10,000 files in one
            // directory were 10,000 failed mkdir calls). A path that is a directory is
            // refused by download_to_file.
            if let Some(parent) = path.parent().filter(|p| !made_dirs.borrow().contains(*p)) {
                std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                made_dirs.borrow_mut().insert(parent.to_path_buf());
            }
            let info = client.download_to_file(bucket, key, path).await?;
            if let Some(t) = modified {
                // Best effort: the bytes are in place either way.
                let _ = std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(*t));
            }
            Ok(info.size)
        }
        Job::Copy { src_bucket, src_key, bucket, key, size } => {
            // The listing gave the size: a small copy is one CopyObject with no HEAD before it.
            let options = CopyOptions::new().source_size(*size);
            let out = client.copy_object_with(src_bucket, src_key, bucket, key, &options).await?;
            Ok(out.size)
        }
        // Batched by `run` (DeleteObjects); a single one still works.
        Job::DeleteObject { bucket, key } => {
            client.delete_object(bucket, key).await?;
            Ok(0)
        }
        Job::DeleteFile { path } => {
            std::fs::remove_file(path).map_err(|e| format!("cannot delete {}: {e}", path.display()))?;
            Ok(0)
        }
        Job::Refused { reason, .. } => Err(reason.clone().into()),
    }
}
