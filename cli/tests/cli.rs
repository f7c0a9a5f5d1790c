//! The `gantry` binary end to end: `serve` as a process, `cp` in every direction, `demo`.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gantry");

struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(BIN)
        .args(["serve", "--dir"])
        .arg(dir.path())
        .args(["--addr", &format!("127.0.0.1:{port}"), "--bucket", "bkt"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "gantry serve did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, url: format!("http://127.0.0.1:{port}"), _dir: dir }
}

fn gantry(server: &Server) -> Command {
    let mut c = Command::new(BIN);
    c.env("AWS_ACCESS_KEY_ID", "gantry")
        .env("AWS_SECRET_ACCESS_KEY", "gantry-secret-key")
        .env("AWS_ENDPOINT_URL", &server.url)
        .env_remove("AWS_PROFILE");
    c
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn cp_file_and_std_streams_round_trip() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.bin");
    let body = data(21 << 20);
    std::fs::write(&src, &body).unwrap();

    let out =
        gantry(&server).args(["cp", "--json", "--part-size", "5MiB"]).arg(&src).arg("s3://bkt/dir/").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["bytes"], body.len() as u64);
    assert_eq!(json["direction"], "upload");
    assert_eq!(json["requests"], 7, "create + 5 parts + complete: {json}");
    assert_eq!(json["retries"], 0);
    assert!(json["seconds"].as_f64().unwrap() > 0.0 && json["mib_per_s"].as_f64().unwrap() > 0.0);

    // Download into a directory: the key's last segment names the file.
    let out = gantry(&server).args(["cp", "s3://bkt/dir/src.bin"]).arg(dir.path().join("missing/x")).output().unwrap();
    assert!(!out.status.success(), "a missing parent directory is an error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing is not a directory"));
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let out =
        gantry(&server).args(["cp", "--json", "s3://bkt/dir/src.bin"]).arg(dir.path().join("sub")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(dir.path().join("sub/src.bin")).unwrap(), body);

    // stdin → S3 → stdout.
    let mut child = gantry(&server).args(["cp", "-q", "-", "s3://bkt/piped"]).stdin(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(&body).unwrap();
    assert!(child.wait().unwrap().success());
    let out = gantry(&server).args(["cp", "s3://bkt/piped", "-"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stdout == body, "stdout must carry the exact bytes");
}

#[test]
fn cp_reports_typed_errors() {
    let server = serve();
    let out = gantry(&server).args(["cp", "s3://bkt/missing", "/tmp/never-written-gantry"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NoSuchKey") && err.contains("404"), "{err}");
    let out =
        gantry(&server).env("AWS_SECRET_ACCESS_KEY", "bad").args(["cp", "s3://bkt/missing", "-"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("403"));
    let out = gantry(&server).args(["cp", "--part-size", "1MiB", "s3://bkt/x", "-"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("part size"));
}

#[test]
fn demo_verifies_its_object() {
    let out = Command::new(BIN).args(["demo", "--size", "24MiB", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["verified"], true);
    assert_eq!(json["bytes"], 24u64 << 20);
    assert_eq!(json["parts"], 3);
}

#[test]
fn unknown_interface_is_a_clear_error() {
    let out = Command::new(BIN)
        .args(["cp", "--nic", "gantry-nonexistent0", "--endpoint-url", "http://127.0.0.1:9", "s3://bkt/k", "-"])
        .env("AWS_ACCESS_KEY_ID", "a")
        .env("AWS_SECRET_ACCESS_KEY", "b")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gantry-nonexistent0") && err.contains("does not exist"), "{err}");
    let out = Command::new(BIN)
        .args(["cp", "--bind", "192.0.2.1", "--endpoint-url", "http://127.0.0.1:9", "s3://bkt/k", "-"])
        .env("AWS_ACCESS_KEY_ID", "a")
        .env("AWS_SECRET_ACCESS_KEY", "b")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("192.0.2.1"));
}

#[test]
fn demo_over_tls() {
    let out = Command::new(BIN).args(["demo", "--tls", "--size", "12MiB", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json["verified"].as_bool(), json["tls"].as_bool()), (Some(true), Some(true)));
}

/// `gantry serve --tls-self-signed` and `cp --ca-bundle`: a private CA end to end through
/// the CLI; without the CA the certificate is refused; `--no-verify-ssl` warns.
#[test]
fn serve_and_cp_over_tls_with_a_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let tls_dir = dir.path().join("tls");
    let child = Command::new(BIN)
        .args(["serve", "--dir"])
        .arg(dir.path().join("s3"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--bucket", "bkt", "--tls-self-signed"])
        .arg(&tls_dir)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Server { child, url: format!("https://127.0.0.1:{port}"), _dir: tempfile::tempdir().unwrap() };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() || !tls_dir.join("ca.pem").exists() {
        assert!(Instant::now() < deadline, "gantry serve --tls-self-signed did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let src = dir.path().join("src.bin");
    let body = data(3 << 20);
    std::fs::write(&src, &body).unwrap();
    let cp = |extra: &[&str], from: &str, to: &str| {
        Command::new(BIN)
            .env("AWS_ACCESS_KEY_ID", "gantry")
            .env("AWS_SECRET_ACCESS_KEY", "gantry-secret-key")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_CA_BUNDLE")
            .args(["cp", "--quiet", "--endpoint-url", &format!("https://127.0.0.1:{port}")])
            .args(extra)
            .args([from, to])
            .output()
            .unwrap()
    };
    let ca = tls_dir.join("ca.pem");
    let out = cp(&["--ca-bundle", ca.to_str().unwrap()], src.to_str().unwrap(), "s3://bkt/k");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let back = dir.path().join("back.bin");
    let out = cp(&["--ca-bundle", ca.to_str().unwrap()], "s3://bkt/k", back.to_str().unwrap());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&back).unwrap() == body);
    let out = cp(&["--set", "max_attempts=1"], "s3://bkt/k", back.to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("certificate"), "{err}");
    let out = cp(&["--no-verify-ssl"], "s3://bkt/k", back.to_str().unwrap());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOT verified"));
}

/// `region` and `endpoint_url` of the profile are used, as awscli uses them: a bucket in
/// eu-west-1 behind an endpoint named only in `~/.aws/config` is reached with no
/// wrong-region answer at all (the server answers S3's 400 AuthorizationHeaderMalformed to a
/// request signed for another region).
#[test]
fn profile_region_and_endpoint_are_used() {
    let server = gantry_faults::FaultServer::start();
    server.insert_object("bkt", "k", bytes::Bytes::from(data(1 << 20)));
    server.set_bucket_region("bkt", "eu-west-1");
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        format!("[profile minio]\nregion = eu-west-1\nendpoint_url = {}\n", server.endpoint()),
    )
    .unwrap();
    std::fs::write(home.path().join(".aws/credentials"), "[minio]\naws_access_key_id = A\naws_secret_access_key = S\n")
        .unwrap();
    let out = Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("AWS_PROFILE", "minio")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["cp", "--json", "s3://bkt/k"])
        .arg(home.path().join("k"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["errors"], 0, "a request was signed for the wrong region: {json}");
    assert_eq!(std::fs::read(home.path().join("k")).unwrap(), data(1 << 20));
}

/// Exit statuses a script can branch on: 3 not found, 4 access denied, 2 usage.
#[test]
fn exit_statuses() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("f");
    std::fs::write(&src, b"bytes").unwrap();
    let out = gantry(&server).args(["cp", src.to_str().unwrap(), "s3://bkt/f"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dst = dir.path().join("got");
    let out = gantry(&server).args(["cp", "s3://bkt/missing", dst.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let out = gantry(&server)
        .env("AWS_SECRET_ACCESS_KEY", "wrong")
        .args(["cp", "s3://bkt/f", dst.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", String::from_utf8_lossy(&out.stderr));
    let out = gantry(&server).args(["cp", "--part-size", "1MiB", "s3://bkt/f", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A key ending in / (a folder marker with bytes) downloads to an explicit file path, and is
/// refused, with a reason, when the destination is a directory.
#[test]
fn key_ending_in_slash_to_an_explicit_path() {
    let server = gantry_faults::FaultServer::start();
    server.insert_object("bkt", "folder/", bytes::Bytes::from_static(b"marker"));
    let dir = tempfile::tempdir().unwrap();
    let cp = |dst: &std::path::Path| {
        Command::new(BIN)
            .env("AWS_ACCESS_KEY_ID", "a")
            .env("AWS_SECRET_ACCESS_KEY", "b")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["cp", "--quiet", "--endpoint-url", &server.endpoint(), "s3://bkt/folder/"])
            .arg(dst)
            .output()
            .unwrap()
    };
    let dst = dir.path().join("marker.bin");
    let out = cp(&dst);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&dst).unwrap(), b"marker");
    let out = cp(dir.path());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("give a file name"));
}

/// Honest messages: `serve` names the address in use and refuses a file as `--dir`, accepts a
/// host name in `--addr`; `cp` refuses a destination in a missing directory before any byte,
/// naming the path the user typed.
#[test]
fn serve_and_cp_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = Command::new(BIN).args(["serve", "--dir"]).arg(dir.path()).args(["--addr", &addr]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&addr), "{err}");
    assert!(!err.contains('\u{1b}'), "colour codes in a non-terminal log: {err:?}");
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let out = Command::new(BIN).args(["serve", "--dir"]).arg(&file).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a file, not a directory"));
    // A host name is accepted.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(BIN)
        .args(["serve", "--dir"])
        .arg(dir.path().join("s3"))
        .args(["--addr", &format!("localhost:{port}"), "--bucket", "bkt"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = Server { child, url: format!("http://127.0.0.1:{port}"), _dir: tempfile::tempdir().unwrap() };
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "serve --addr localhost:PORT did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let src = dir.path().join("src");
    std::fs::write(&src, b"bytes").unwrap();
    assert!(gantry(&server).args(["cp", src.to_str().unwrap(), "s3://bkt/k"]).output().unwrap().status.success());
    let dst = dir.path().join("nodir/sub/out.bin");
    let out = gantry(&server).args(["cp", "s3://bkt/k", dst.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("nodir/sub/out.bin") && err.contains("not a directory"), "{err}");
    assert!(!err.contains(".gantry-"), "an internal temporary name leaked: {err}");
    // A directory as the source is named as such.
    let out = gantry(&server).arg("cp").arg(dir.path()).arg("s3://bkt/d").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{} is a directory", dir.path().display())), "{err}");
    // A directory where no file can be created (even by root): the user's path, no jargon.
    let out = gantry(&server).args(["cp", "s3://bkt/k", "/proc/gantry-cannot-be-here"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("cannot create /proc/gantry-cannot-be-here"), "{err}");
    assert!(!err.contains(".gantry-") && !err.contains("LocalIo"), "{err}");
}

/// Content-Type: guessed from the file's extension (or the key's, for stdin), replaced by
/// `--content-type`, left out with `--no-guess-mime-type`; what a browser or CDN serving the
/// object reads back.
#[test]
fn uploads_carry_a_content_type() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("index.html");
    std::fs::write(&page, b"<p>hi</p>").unwrap();
    let big = dir.path().join("shard.json");
    std::fs::write(&big, data(9 << 20)).unwrap();
    let ok = |c: &mut Command| {
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    ok(gantry(&server).args(["cp", page.to_str().unwrap(), "s3://bkt/page"]));
    ok(gantry(&server).args(["cp", "--part-size", "5MiB", big.to_str().unwrap(), "s3://bkt/"]));
    ok(gantry(&server).args(["cp", "--content-type", "text/x-custom", page.to_str().unwrap(), "s3://bkt/custom"]));
    ok(gantry(&server).args(["cp", "--no-guess-mime-type", page.to_str().unwrap(), "s3://bkt/plain"]));
    let mut stdin = gantry(&server).args(["cp", "-", "s3://bkt/from-stdin.css"]).stdin(Stdio::piped()).spawn().unwrap();
    stdin.stdin.take().unwrap().write_all(b"p {}").unwrap();
    assert!(stdin.wait().unwrap().success());

    let client = gantry::Client::new(
        gantry::ClientConfig::builder()
            .endpoint_url(&server.url)
            .credentials(gantry::CredentialsSource::Static(gantry::Credentials::new("gantry", "gantry-secret-key")))
            .auto_config(false)
            .build()
            .unwrap(),
    )
    .unwrap();
    let content_type = |key: &str| client.block_on(client.head_object("bkt", key)).unwrap().content_type;
    assert_eq!(content_type("page").as_deref(), Some("text/html"));
    assert_eq!(content_type("shard.json").as_deref(), Some("application/json"), "multipart uploads too");
    assert_eq!(content_type("custom").as_deref(), Some("text/x-custom"));
    assert_eq!(content_type("from-stdin.css").as_deref(), Some("text/css"));
    assert_ne!(content_type("plain").as_deref(), Some("text/html"));
}

/// A server that answers 200 with a web page to every request has stored nothing: the upload
/// fails (a protocol error naming the missing ETag), single-request and multipart alike.
#[test]
fn an_endpoint_answering_200_to_anything_is_not_a_successful_upload() {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut conn = conn;
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let page = "<html><body>Welcome to our portal</body></html>";
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{page}",
                        page.len()
                    );
                    if conn.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    for (name, len) in [("small", 1000), ("large", 12 << 20)] {
        let src = dir.path().join(name);
        std::fs::write(&src, data(len)).unwrap();
        let out = Command::new(BIN)
            .env("AWS_ACCESS_KEY_ID", "a")
            .env("AWS_SECRET_ACCESS_KEY", "b")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["cp", "--part-size", "5MiB", "--endpoint-url", &url, src.to_str().unwrap(), "s3://bkt/k"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("not an S3 server") || err.contains("XML"), "{name}: {err}");
    }
}

/// A download asks for no HEAD (the progress total comes from the first answer), `--json`
/// says which checksum verified the bytes or why none did, and a mismatch on `cp ... -`
/// leaves every byte written and exits 1.
#[test]
fn cp_reports_verification_and_sends_no_head() {
    use gantry_faults::{ChecksumAlgo, ObjectChecksum, Op};
    let server = gantry_faults::FaultServer::start();
    let body = bytes::Bytes::from(data(12 << 20));
    server.insert_object_with("bkt", "crc32", body.clone(), &ObjectChecksum::single(ChecksumAlgo::Crc32));
    server.insert_object("bkt", "plain", body.clone());
    let dir = tempfile::tempdir().unwrap();
    let cp = |args: &[&str]| {
        Command::new(BIN)
            .env("AWS_ACCESS_KEY_ID", "a")
            .env("AWS_SECRET_ACCESS_KEY", "b")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["cp", "--part-size", "5MiB", "--endpoint-url", &server.endpoint()])
            .args(args)
            .output()
            .unwrap()
    };
    let json = |out: &std::process::Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let dst = dir.path().join("out");
    let line = json(&cp(&["--json", "s3://bkt/crc32", dst.to_str().unwrap()]));
    assert_eq!(line["checksum"], serde_json::json!({"verified": true, "algorithm": "CRC32", "parts": null}));
    assert_eq!(std::fs::read(&dst).unwrap(), body);
    let line = json(&cp(&["--json", "s3://bkt/plain", dst.to_str().unwrap()]));
    // What S3 stores for every new object when the upload named no checksum.
    assert_eq!(line["checksum"], serde_json::json!({"verified": true, "algorithm": "CRC64NVME", "parts": null}));
    assert_eq!(server.request_count(Op::HeadObject), 0, "a download needs no HEAD");

    server.corrupt_object("bkt", "crc32", 7 << 20);
    let out = cp(&["s3://bkt/crc32", "-"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("CRC32"), "{err}");
    // What was streamed stays written: everything up to the part still held back when the
    // check ended (the whole object when the last part was already out).
    let n = out.stdout.len();
    assert!(n >= 5 << 20 && n <= body.len(), "{n} bytes written");
    assert_eq!(out.stdout[..5 << 20], body[..5 << 20]);
}

/// A directory bucket just works from the CLI (issue: S3 Express One Zone): `cp` up and down
/// through the fault server's zonal-endpoint double, which refuses anything not signed with a
/// live session, with no flag for it.
#[test]
fn cp_to_and_from_a_directory_bucket() {
    let server = gantry_faults::FaultServer::start();
    server.enable_express(gantry_faults::ExpressSettings {
        base_access_key: "AKIDBASE".into(),
        base_secret_key: "base-secret".into(),
        session_lifetime: std::time::Duration::from_secs(300),
    });
    let bucket = "ckpt--use1-az4--x-s3";
    server.create_bucket(bucket);
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("step-100.pt");
    std::fs::write(&src, data(9 << 20)).unwrap();
    let cp = |args: &[&str]| {
        Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ENDPOINT_URL", server.endpoint())
            .env("AWS_ACCESS_KEY_ID", "AKIDBASE")
            .env("AWS_SECRET_ACCESS_KEY", "base-secret")
            .arg("cp")
            .args(args)
            .output()
            .unwrap()
    };
    let target = format!("s3://{bucket}/step-100");
    let out = cp(&[src.to_str().unwrap(), &target]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let back = dir.path().join("back.pt");
    let out = cp(&[&target, back.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&back).unwrap(), data(9 << 20));
    let stats = server.express_stats();
    assert_eq!(stats.refused, 0);
    assert_eq!(stats.sessions_created, 2, "one session per process");
}

#[test]
fn ls_and_rm_over_a_prefix() {
    let server = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, data(3000)).unwrap();
    for key in ["run/a.bin", "run/sub/b c+d.bin", "run/sub/ünï%.bin", "other/x"] {
        let ok = gantry(&server).arg("cp").arg(&file).arg(format!("s3://bkt/{key}")).arg("--quiet").status().unwrap();
        assert!(ok.success(), "{key}");
    }
    let text = |c: &mut Command| {
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    // No argument: the buckets.
    let buckets = text(gantry(&server).args(["ls", "--json"]));
    assert!(buckets.contains(r#""bucket":"bkt""#), "{buckets}");
    // One level: the object and the PRE line for sub/, names below the prefix.
    let one = text(gantry(&server).args(["ls", "s3://bkt/run/"]));
    assert!(one.contains("PRE sub/") && one.contains(" a.bin") && !one.contains("b c+d"), "{one}");
    // Recursive JSON: every key under the prefix, byte for byte.
    let all = text(gantry(&server).args(["ls", "--recursive", "--json", "s3://bkt/run/"]));
    let keys: Vec<String> = all
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, ["run/a.bin", "run/sub/b c+d.bin", "run/sub/ünï%.bin"]);
    // One object copied by the server; a destination ending in / takes the source's name.
    text(gantry(&server).args(["cp", "--quiet", "s3://bkt/run/a.bin", "s3://bkt/copied/"]));
    let copied = text(gantry(&server).args(["ls", "s3://bkt/copied/"]));
    assert!(copied.contains(" a.bin") && copied.contains("2.93 KiB"), "{copied}");
    text(gantry(&server).args(["rm", "s3://bkt/copied/a.bin"]));
    // A dry run lists and deletes nothing.
    let dry = text(gantry(&server).args(["rm", "--recursive", "--dry-run", "s3://bkt/run/"]));
    assert_eq!(dry.lines().count(), 3, "{dry}");
    assert!(dry.contains("(dryrun) delete: s3://bkt/run/sub/b c+d.bin"), "{dry}");
    assert_eq!(text(gantry(&server).args(["ls", "-r", "s3://bkt/run/"])).lines().count(), 3);
    // The real thing: the prefix is gone, the rest stays.
    let gone = text(gantry(&server).args(["rm", "--recursive", "--json", "s3://bkt/run/"]));
    assert!(gone.lines().last().unwrap().contains(r#""deleted":3"#), "{gone}");
    assert_eq!(text(gantry(&server).args(["ls", "-r", "s3://bkt/"])).lines().count(), 1);
    // A single key that does not exist: exit status 3, named.
    let out = gantry(&server).args(["rm", "s3://bkt/run/a.bin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let out = gantry(&server).args(["rm", "s3://bkt/other/x"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(gantry(&server).args(["ls", "-r", "s3://bkt/"])).lines().count(), 0);
}
