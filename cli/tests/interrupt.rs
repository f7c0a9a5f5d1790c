//! Ctrl-C and SIGTERM against MinIO (an S3 implementation nobody here wrote): `gantry cp` is
//! signalled mid-transfer, and afterwards no multipart upload is left on the server
//! (ListMultipartUploads) and no partial or temporary file is left in the directory; the exit
//! status is 130 for SIGINT and 143 for SIGTERM.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gantry_integration::{minio, Backend};

const BIN: &str = env!("CARGO_BIN_EXE_gantry");

fn cp(b: &Backend, args: &[&str]) -> Child {
    Command::new(BIN)
        .env("AWS_ACCESS_KEY_ID", &b.keys.0)
        .env("AWS_SECRET_ACCESS_KEY", &b.keys.1)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        // One connection and small parts: slow enough to be caught mid-transfer.
        .args(["cp", "--quiet", "--max-connections", "1", "--part-size", "5MiB", "--endpoint-url", &b.endpoint])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").args(["-s", sig, &child.id().to_string()]).status().unwrap().success();
    assert!(ok, "kill -s {sig} failed");
}

fn write_file(path: &std::path::Path, len: usize) {
    let data: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
    std::fs::write(path, data).unwrap();
}

/// Waits until `cond` holds, polling, for at most `limit`.
fn until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn sigint_aborts_a_multipart_upload_and_sigterm_removes_a_partial_download() {
    let Some(b) = minio() else { return };
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.bin");
    write_file(&src, 768 << 20);

    // Upload, SIGINT once the multipart upload exists on the server.
    let mut child = cp(&b, &[src.to_str().unwrap(), &format!("s3://{bucket}/big")]);
    let uploads = || client.block_on(client.list_multipart_uploads(&bucket, None)).unwrap();
    assert!(until(Duration::from_secs(20), || !uploads().is_empty()), "the upload never started");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("cleaned up"), "{err}");
    assert!(uploads().is_empty(), "a multipart upload was left behind: {:?}", uploads());
    assert!(client.block_on(client.head_object(&bucket, "big")).is_err(), "a partial object became visible");

    // Download (after a real upload), SIGTERM mid-way: no file, no temporary file.
    let out = Command::new(BIN)
        .env("AWS_ACCESS_KEY_ID", &b.keys.0)
        .env("AWS_SECRET_ACCESS_KEY", &b.keys.1)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["cp", "--quiet", "--endpoint-url", &b.endpoint, src.to_str().unwrap(), &format!("s3://{bucket}/big")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let down = tempfile::tempdir().unwrap();
    let dst = down.path().join("copy.bin");
    let mut child = cp(&b, &[&format!("s3://{bucket}/big"), dst.to_str().unwrap()]);
    let temp_exists = || {
        std::fs::read_dir(down.path()).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains(".gantry-"))
    };
    assert!(until(Duration::from_secs(20), temp_exists), "the download never started");
    std::thread::sleep(Duration::from_millis(200));
    signal(&child, "TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    let left: Vec<_> = std::fs::read_dir(down.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "files left behind: {left:?}");
}

/// A second Ctrl-C exits at once, even when the first cannot take effect: here the upload
/// reads a stdin that never delivers, so the cancellation waits behind a blocked read.
#[test]
fn second_sigint_exits_at_once() {
    let Some(b) = minio() else { return };
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let mut child = Command::new(BIN)
        .env("AWS_ACCESS_KEY_ID", &b.keys.0)
        .env("AWS_SECRET_ACCESS_KEY", &b.keys.1)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["cp", "--quiet", "--endpoint-url", &b.endpoint, "-", &format!("s3://{bucket}/stdin")])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Keep stdin open and silent.
    let _stdin = child.stdin.take();
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let start = Instant::now();
    let status = child.wait().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted again"), "{err}");
}

/// What `kill -9` leaves behind is listed by `gantry uploads ls` and removed by `gantry
/// uploads abort` (one by id, then all, with `--older-than` keeping young ones).
#[test]
fn uploads_ls_and_abort_clean_up_after_kill_9() {
    let Some(b) = minio() else { return };
    let client = b.client(|c| c);
    let bucket = b.bucket(&client);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("big.bin");
    write_file(&src, 256 << 20);
    let uploads = || client.block_on(client.list_multipart_uploads(&bucket, None)).unwrap();
    for (n, key) in ["ckpt/a", "ckpt/b"].iter().enumerate() {
        let mut child = cp(&b, &[src.to_str().unwrap(), &format!("s3://{bucket}/{key}")]);
        assert!(until(Duration::from_secs(20), || uploads().len() > n), "upload {key} never started");
        signal(&child, "KILL");
        child.wait().unwrap();
    }
    assert_eq!(uploads().len(), 2, "kill -9 left both uploads behind");
    let gantry = |args: &[&str]| {
        Command::new(BIN)
            .env("AWS_ACCESS_KEY_ID", &b.keys.0)
            .env("AWS_SECRET_ACCESS_KEY", &b.keys.1)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(args)
            .args(["--endpoint-url", &b.endpoint])
            .output()
            .unwrap()
    };
    // The whole bucket: MinIO matches a ListMultipartUploads prefix only against whole keys.
    let ls = gantry(&["uploads", "ls", &format!("s3://{bucket}"), "--json"]);
    assert!(ls.status.success(), "{}", String::from_utf8_lossy(&ls.stderr));
    let listed: Vec<serde_json::Value> =
        String::from_utf8_lossy(&ls.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().all(|u| u["initiated"].is_string()), "{listed:?}");
    let first = listed.iter().find(|u| u["key"] == "ckpt/a").unwrap();
    let id = first["upload_id"].as_str().unwrap();
    let out = gantry(&["uploads", "abort", &format!("s3://{bucket}/ckpt/a"), "--upload-id", id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(uploads().len(), 1);
    // Younger than an hour: kept.
    let out = gantry(&["uploads", "abort", &format!("s3://{bucket}"), "--all", "--older-than", "1h"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stderr).contains("0 aborted, 1 younger kept"));
    assert_eq!(uploads().len(), 1);
    let out = gantry(&["uploads", "abort", &format!("s3://{bucket}"), "--all"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(uploads().is_empty());
}
