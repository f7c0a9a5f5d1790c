//! The fleet commands end to end (`cp --recursive`, wildcards, `sync`) against `gantry serve`
//! and MinIO (an S3 implementation nobody here wrote), and mid-fleet failures against the
//! fault server. Trees are compared file by file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gantry_integration::{embedded, minio, pattern, Backend};

const BIN: &str = env!("CARGO_BIN_EXE_gantry");

fn gantry(b: &Backend, args: &[&str]) -> Output {
    gantry_at(&b.endpoint, (&b.keys.0, &b.keys.1), args)
}

fn gantry_at(endpoint: &str, keys: (&str, &str), args: &[&str]) -> Output {
    Command::new(BIN)
        .env("AWS_ACCESS_KEY_ID", keys.0)
        .env("AWS_SECRET_ACCESS_KEY", keys.1)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        .env_remove("AWS_PROFILE")
        .args(args)
        .args(["--endpoint-url", endpoint, "--part-size", "5MiB"])
        // The large files (2.5 parts) are then copied server-side as UploadPartCopy parts.
        .args(["--set", "copy_threshold=5MiB", "--set", "copy_part_size=5MiB"])
        .output()
        .unwrap()
}

fn ok(b: &Backend, args: &[&str]) -> String {
    let out = gantry(b, args);
    assert!(out.status.success(), "gantry {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn bucket(b: &Backend) -> String {
    let client = b.client(|c| c);
    b.bucket(&client)
}

/// Every file below `root`, relative, with its bytes.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// `small` small files in nested directories, a few awkward names, and `large` files of 2.5
/// parts (multipart uploads and part copies).
fn make_tree(root: &Path, small: usize, large: usize) {
    for i in 0..small {
        let dir = root.join(format!("d{:02}/e{}", i % 50, i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i:05}.bin")), pattern(100 + i % 2000, i as u64)).unwrap();
    }
    let odd = root.join("odd names");
    std::fs::create_dir_all(&odd).unwrap();
    for name in ["sp ace.txt", "ünïcödé.txt", "a+b.txt", "100%.txt", "q&a=1.txt"] {
        std::fs::write(odd.join(name), name.as_bytes()).unwrap();
    }
    for i in 0..large {
        std::fs::write(root.join(format!("large-{i}.bin")), pattern((12 << 20) + 5, 1000 + i as u64)).unwrap();
    }
}

fn round_trip(b: &Backend, small: usize) {
    let bkt = bucket(b);
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    make_tree(&src, small, 2);
    let want = tree(&src);
    let s3 = |p: &str| format!("s3://{bkt}/{p}");
    ok(b, &["cp", "--recursive", "--quiet", src.to_str().unwrap(), &s3("tree")]);
    let listed = ok(b, &["ls", "--recursive", &s3("tree/")]);
    assert_eq!(listed.lines().count(), want.len());
    // Down again into a directory that does not exist yet.
    let down = work.path().join("down/here");
    ok(b, &["cp", "--recursive", "--quiet", &s3("tree/"), down.to_str().unwrap()]);
    assert!(tree(&down) == want, "the downloaded tree differs");
    // Prefix to prefix, by the server: the objects match, the multipart one by content.
    let copied = ok(b, &["cp", "--recursive", "--json", &s3("tree/"), &s3("copy/")]);
    let summary: serde_json::Value = serde_json::from_str(copied.lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["failed"], 0);
    assert_eq!(summary["summary"]["objects"], want.len());
    let back = work.path().join("copy");
    ok(b, &["cp", "--recursive", "--quiet", &s3("copy/"), back.to_str().unwrap()]);
    assert!(tree(&back) == want, "the server-side copy differs");
}

#[test]
fn recursive_round_trip_on_gantry_serve() {
    round_trip(&embedded(), 5000);
}

#[test]
fn recursive_round_trip_on_minio() {
    let Some(b) = minio() else { return };
    round_trip(&b, 5000);
}

#[test]
fn wildcards_and_filters_select() {
    let b = embedded();
    let bkt = bucket(&b);
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    std::fs::create_dir_all(src.join("train")).unwrap();
    for name in ["shard-00.tar", "shard-01.tar", "shard-10.tar", "readme.md"] {
        std::fs::write(src.join("train").join(name), name.as_bytes()).unwrap();
    }
    let s3 = |p: &str| format!("s3://{bkt}/{p}");
    // Later filters win: everything out, then the tars back in.
    ok(&b, &["cp", "-r", "--quiet", "--exclude", "*", "--include", "*.tar", src.to_str().unwrap(), &s3("data")]);
    let keys = ok(&b, &["ls", "-r", &s3("data/")]);
    assert_eq!(keys.lines().count(), 3, "{keys}");
    assert!(!keys.contains("readme"));
    // A wildcard in the last segment.
    let dst = work.path().join("picked");
    ok(&b, &["cp", "--quiet", &s3("data/train/shard-0*.tar"), dst.to_str().unwrap()]);
    let got: Vec<String> = tree(&dst).into_iter().map(|(n, _)| n).collect();
    assert_eq!(got, ["shard-00.tar", "shard-01.tar"]);
    // A wildcard that matches nothing: a clear message and exit status 1.
    let out = gantry(&b, &["cp", &s3("data/train/nothing-*.tar"), dst.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no objects matched"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sync_transfers_only_what_differs() {
    let b = embedded();
    let bkt = bucket(&b);
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    make_tree(&src, 40, 0);
    let dst = format!("s3://{bkt}/mirror/");
    let count = |json: &str| json.lines().filter(|l| l.contains(r#""ok":true"#)).count();
    let first = ok(&b, &["sync", "--json", src.to_str().unwrap(), &dst]);
    assert_eq!(count(&first), 45);
    let second = ok(&b, &["sync", "--json", src.to_str().unwrap(), &dst]);
    assert_eq!(count(&second), 0, "a second sync transfers nothing: {second}");
    // One file changes (size and time): exactly that one goes.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(src.join("odd names/sp ace.txt"), b"changed, and longer than before").unwrap();
    let third = ok(&b, &["sync", "--json", src.to_str().unwrap(), &dst]);
    assert_eq!(count(&third), 1, "{third}");
    assert!(third.contains("sp ace.txt"));
    // Down: a fresh directory gets everything, a second run nothing.
    let down = work.path().join("down");
    assert_eq!(count(&ok(&b, &["sync", "--json", &dst, down.to_str().unwrap()])), 45);
    assert_eq!(count(&ok(&b, &["sync", "--json", &dst, down.to_str().unwrap()])), 0);
    assert!(tree(&down) == tree(&src));
    // --checksum: same sizes, same bytes: nothing; a same-size change of content: that one.
    std::fs::write(src.join("a.txt"), b"0123456789").unwrap();
    ok(&b, &["sync", "--quiet", src.to_str().unwrap(), &dst]);
    std::fs::write(src.join("a.txt"), b"9876543210").unwrap();
    let stamp = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options().write(true).open(src.join("a.txt")).unwrap().set_modified(stamp).unwrap();
    assert_eq!(count(&ok(&b, &["sync", "--json", src.to_str().unwrap(), &dst])), 0, "older and same size: skipped");
    assert_eq!(count(&ok(&b, &["sync", "--json", "--checksum", src.to_str().unwrap(), &dst])), 1);
    // --delete with --dry-run changes nothing; without, the extra goes.
    std::fs::remove_file(src.join("a.txt")).unwrap();
    let dry = ok(&b, &["sync", "--delete", "--dry-run", src.to_str().unwrap(), &dst]);
    assert_eq!(dry.trim(), format!("(dryrun) delete: {dst}a.txt"));
    assert!(ok(&b, &["ls", "-r", &dst]).contains("a.txt"));
    let deleted = ok(&b, &["sync", "--delete", "--json", src.to_str().unwrap(), &dst]);
    assert_eq!(count(&deleted), 1);
    assert!(!ok(&b, &["ls", "-r", &dst]).contains(" a.txt"));
}

#[test]
fn bad_input_is_refused_before_any_transfer() {
    let b = embedded();
    let bkt = bucket(&b);
    let work = tempfile::tempdir().unwrap();
    let err = |args: &[&str]| {
        let out = gantry(&b, args);
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing: PathBuf = work.path().join("missing");
    assert!(err(&["cp", "-r", missing.to_str().unwrap(), &format!("s3://{bkt}/x")]).contains("missing"));
    assert!(err(&["cp", "-r", &format!("s3://{bkt}/data"), &format!("s3://{bkt}/data/inside")])
        .contains("inside the source"));
    let file = work.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    ok(&b, &["cp", "--quiet", file.to_str().unwrap(), &format!("s3://{bkt}/data/f")]);
    assert!(err(&["cp", "-r", &format!("s3://{bkt}/data/"), file.to_str().unwrap()]).contains("must be a directory"));
    assert!(err(&["sync", &format!("s3://{bkt}/data/"), file.to_str().unwrap()]).contains("must be a directory"));
}

/// One object of a fleet refused (403) by the fault server, the others fine: they all land,
/// the failure is named, the exit status is 1. The same for uploads (one PutObject refused).
#[test]
fn a_failure_mid_fleet_is_named_and_the_rest_complete() {
    use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
    let server = FaultServer::start();
    for i in 0..20 {
        server.insert_object("fleet", &format!("p/k{i:02}"), bytes::Bytes::from(pattern(1000 + i, i as u64)));
    }
    server.add_rule(Rule::new(
        Match::op(Op::GetObject).key("p/k07"),
        Fault::Status { status: 403, code: "AccessDenied" },
    ));
    let endpoint = server.endpoint();
    let run = |args: &[&str]| gantry_at(&endpoint, ("AKID", "SECRET"), args);
    let work = tempfile::tempdir().unwrap();
    let out = run(&["cp", "-r", "s3://fleet/p/", work.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 20 objects failed") && stderr.contains("s3://fleet/p/k07"), "{stderr}");
    assert_eq!(tree(work.path()).len(), 19, "the others landed");
    assert!(!work.path().join("k07").exists(), "no partial file under the final name");
    // Uploads: one key refused.
    server.add_rule(Rule::new(
        Match::op(Op::PutObject).key("up/k03"),
        Fault::Status { status: 403, code: "AccessDenied" },
    ));
    let out = run(&["cp", "-r", "--json", work.path().to_str().unwrap(), "s3://fleet/up"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.contains(r#""ok":false"#)).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(failed[0].contains("k03"));
    assert!(stdout.lines().last().unwrap().contains(r#""failed":1"#));
    assert_eq!(server.requests().iter().filter(|r| r.op == Op::PutObject).count(), 19);
}

/// Deletes refused per key inside a DeleteObjects batch (as a bucket policy denying some keys
/// does on S3): `rm --recursive` and `sync --delete` delete the rest, name the refused key and
/// exit 1; `sync --delete` sends its deletes as one batch, not one request per key.
#[test]
fn a_refused_delete_is_named_and_the_rest_go() {
    use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
    let server = FaultServer::start();
    let put = |prefix: &str| {
        for i in 0..30 {
            server.insert_object("fleet", &format!("{prefix}/k{i:02}"), bytes::Bytes::from(pattern(10, i)));
        }
    };
    put("rm");
    put("mirror");
    let refused = Fault::Status { status: 403, code: "AccessDenied" };
    server.add_rule(Rule::new(Match::op(Op::DeleteObject).key("rm/k11"), refused.clone()));
    server.add_rule(Rule::new(Match::op(Op::DeleteObject).key("mirror/k22"), refused));
    let endpoint = server.endpoint();
    let run = |args: &[&str]| gantry_at(&endpoint, ("AKID", "SECRET"), args);

    let out = run(&["rm", "--recursive", "s3://fleet/rm/"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("s3://fleet/rm/k11") && stderr.contains("AccessDenied"), "{stderr}");
    assert!(stderr.contains("1 of 30 keys were not deleted"), "{stderr}");
    let left: Vec<String> =
        (0..30).map(|i| format!("rm/k{i:02}")).filter(|k| server.object("fleet", k).is_some()).collect();
    assert_eq!(left, ["rm/k11"]);

    // The local side holds 10 of the 30 names: sync --delete removes the other 20 but one.
    let work = tempfile::tempdir().unwrap();
    for i in 0..10 {
        std::fs::write(work.path().join(format!("k{i:02}")), pattern(10, i)).unwrap();
    }
    server.reset_log();
    let out = run(&["sync", "--delete", "--json", work.path().to_str().unwrap(), "s3://fleet/mirror/"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: Vec<&str> = stdout.lines().filter(|l| l.contains(r#""ok":false"#)).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(failed[0].contains("mirror/k22") && failed[0].contains("AccessDenied"), "{}", failed[0]);
    let deleted = stdout.lines().filter(|l| l.contains(r#""op":"delete""#) && l.contains(r#""ok":true"#)).count();
    assert_eq!(deleted, 19, "{stdout}");
    assert_eq!(server.request_count(Op::DeleteObjects), 1, "one batch");
    assert_eq!(server.request_count(Op::DeleteObject), 0);
    let left = (0..30).filter(|i| server.object("fleet", &format!("mirror/k{i:02}")).is_some()).count();
    assert_eq!(left, 11, "the 10 the source has, and the refused one");
}

/// `cp -r` from S3 lists page by page while the first objects already move (a prefix of
/// millions starts at once): with the second ListObjectsV2 page held back 2 s by the server,
/// downloads of the first page's objects arrive before the third page is asked for. A key
/// with no place in the destination (`../`) fails alone, named, and the others land.
#[test]
fn listing_and_transfers_overlap() {
    use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
    use std::time::Duration;
    let server = FaultServer::start();
    for i in 0..2500 {
        server.insert_object("fleet", &format!("big/k{i:04}"), bytes::Bytes::from(pattern(100, i)));
    }
    server.insert_object("fleet", "big/sub/../../escape", bytes::Bytes::from_static(b"x"));
    server
        .add_rule(Rule::new(Match::op(Op::ListObjectsV2).every_nth(2), Fault::Stall(Duration::from_secs(2))).times(1));
    let work = tempfile::tempdir().unwrap();
    let out = gantry_at(
        &server.endpoint(),
        ("AKID", "SECRET"),
        &["cp", "-r", "--quiet", "s3://fleet/big/", work.path().to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 2501 objects failed") && stderr.contains("big/sub/../../escape"), "{stderr}");
    assert!(stderr.contains("leave the destination"), "{stderr}");
    assert_eq!(tree(work.path()).len(), 2500);
    assert!(!work.path().parent().unwrap().join("escape").exists());
    let log = server.requests();
    let lists: Vec<usize> = log.iter().enumerate().filter(|(_, r)| r.op == Op::ListObjectsV2).map(|(i, _)| i).collect();
    assert_eq!(lists.len(), 3, "three pages of 1,000");
    let early = log[..lists[2]].iter().filter(|r| r.op == Op::GetObject).count();
    assert!(early >= 1, "no download started before the last page was listed");
}

/// A destination bucket that does not exist fails every object the same way: the fleet stops
/// at the first NoSuchBucket instead of trying (and printing) all of them, and exits with the
/// not-found status (3).
#[test]
fn a_missing_bucket_stops_the_fleet() {
    use gantry_faults::{FaultServer, Op};
    let server = FaultServer::start();
    server.insert_object("fleet", "x", bytes::Bytes::from_static(b"x"));
    let work = tempfile::tempdir().unwrap();
    for i in 0..200 {
        std::fs::write(work.path().join(format!("f{i:03}")), pattern(10, i)).unwrap();
    }
    let out = gantry_at(
        &server.endpoint(),
        ("AKID", "SECRET"),
        &["cp", "-r", "--concurrency", "2", work.path().to_str().unwrap(), "s3://no-such-bucket/p/"],
    );
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NoSuchBucket") && stderr.contains("stopped"), "{stderr}");
    let puts = server.request_count(Op::PutObject);
    assert!((1..=4).contains(&puts), "{puts} uploads tried after the bucket was found missing");
}

/// `rm --recursive` deletes each listing page while the next is listed: with the second page
/// held back 2 s, the first page's DeleteObjects arrives before the third page is asked for.
/// Folder markers (`dir/`) go too, and every key is gone in the end.
#[test]
fn rm_deletes_while_it_lists() {
    use gantry_faults::{Fault, FaultServer, Match, Op, Rule};
    use std::time::Duration;
    let server = FaultServer::start();
    for i in 0..2500 {
        server.insert_object("fleet", &format!("old/k{i:04}"), bytes::Bytes::from_static(b"x"));
    }
    server.insert_object("fleet", "old/zz-marker/", bytes::Bytes::new());
    server
        .add_rule(Rule::new(Match::op(Op::ListObjectsV2).every_nth(2), Fault::Stall(Duration::from_secs(2))).times(1));
    let out = gantry_at(&server.endpoint(), ("AKID", "SECRET"), &["rm", "-r", "--json", "s3://fleet/old/"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.lines().last().unwrap().contains(r#""deleted":2501"#), "{}", stdout.lines().last().unwrap());
    let log = server.requests();
    let lists: Vec<usize> = log.iter().enumerate().filter(|(_, r)| r.op == Op::ListObjectsV2).map(|(i, _)| i).collect();
    assert_eq!(lists.len(), 3);
    assert!(log[..lists[2]].iter().any(|r| r.op == Op::DeleteObjects), "no delete before the last page was listed");
    assert!(server.object("fleet", "old/zz-marker/").is_none() && server.object("fleet", "old/k0000").is_none());
}

/// A prefix-to-prefix copy takes each source's size from the listing: a small object is one
/// CopyObject with no HEAD before it (s5cmd's request count), and only an object above the
/// copy threshold (5 MiB here) is HEADed, for the ETag that pins its parts.
#[test]
fn listed_copies_send_no_head_under_the_threshold() {
    use gantry_faults::{FaultServer, Op};
    let server = FaultServer::start();
    for i in 0..20 {
        server.insert_object("fleet", &format!("src/k{i:02}"), bytes::Bytes::from(pattern(1000, i)));
    }
    server.insert_object("fleet", "src/large", bytes::Bytes::from(pattern(12 << 20, 99)));
    let out = gantry_at(
        &server.endpoint(),
        ("AKID", "SECRET"),
        &["cp", "-r", "--quiet", "s3://fleet/src/", "s3://fleet/dst/"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for i in 0..20 {
        assert_eq!(server.object("fleet", &format!("dst/k{i:02}")).unwrap(), pattern(1000, i));
    }
    assert_eq!(server.object("fleet", "dst/large").unwrap(), pattern(12 << 20, 99));
    assert_eq!(server.request_count(Op::CopyObject), 20);
    assert_eq!(server.request_count(Op::HeadObject), 1);
    assert_eq!(server.request_count(Op::UploadPartCopy), 3);
}

/// Keys `d` and `d/x` cannot both land in one directory tree: a file `d` and a directory `d`.
/// Whichever comes second fails alone and named; the other lands. With a directory `d`
/// already there, the object `d` is the one refused, as a directory.
#[test]
fn a_key_that_is_also_a_folder_fails_alone() {
    use gantry_faults::FaultServer;
    let server = FaultServer::start();
    server.insert_object("fleet", "p/d", bytes::Bytes::from_static(b"file"));
    server.insert_object("fleet", "p/d/x", bytes::Bytes::from_static(b"inside"));
    let run = |dst: &Path| {
        let args = ["cp", "-r", "--quiet", "--concurrency", "1", "s3://fleet/p/", dst.to_str().unwrap()];
        gantry_at(&server.endpoint(), ("AKID", "SECRET"), &args)
    };
    let work = tempfile::tempdir().unwrap();
    let fresh = work.path().join("fresh");
    let out = run(&fresh);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 of 2 objects failed") && stderr.contains("s3://fleet/p/d/x"), "{stderr}");
    assert_eq!(std::fs::read(fresh.join("d")).unwrap(), b"file");
    let made = work.path().join("made");
    std::fs::create_dir_all(made.join("d")).unwrap();
    let out = run(&made);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 of 2 objects failed") && stderr.contains("is a directory"), "{stderr}");
    assert_eq!(std::fs::read(made.join("d/x")).unwrap(), b"inside");
}
