//! Every credential provider end to end: `gantry cp` runs as a process with a clean
//! environment describing one kind of machine (EC2, EKS, ECS, a laptop with SSO...), the
//! credential services are the local doubles of `gantry-doubles`, and the S3 server is the
//! embedded one verifying SigV4 against a key ring that holds exactly the keys the doubles
//! issued. A provider that sends the wrong key, or none, fails the round trip.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry_doubles::{ContainerServer, FnIssuer, ImdsServer, Issued, Issuer, Mode, SsoServer, StsServer};
use gantry_server::{BackgroundServer, KeyRing, ServerConfig};

const BIN: &str = env!("CARGO_BIN_EXE_gantry");

/// An S3 server whose key ring the doubles fill, and a home directory for `~/.aws`.
struct World {
    dir: tempfile::TempDir,
    ring: KeyRing,
    server: BackgroundServer,
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s3");
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("home/.aws")).unwrap();
    let ring = KeyRing::new();
    let config = ServerConfig::new(&root, "127.0.0.1:0".parse().unwrap()).with_keyring(ring.clone());
    let server = gantry_server::start_background(config, 2).unwrap();
    World { dir, ring, server }
}

impl World {
    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// An issuer whose every key is registered with the S3 server until it expires.
    fn issuer(&self, lifetime: Duration) -> Arc<dyn Issuer> {
        let ring = self.ring.clone();
        Arc::new(FnIssuer(move |_: &str| {
            let issued = Issued::random(lifetime);
            ring.insert(&issued.access_key_id, &issued.secret_access_key, Some(issued.expiration));
            issued
        }))
    }

    /// `gantry cp` with only `env` set (plus PATH and HOME), against the S3 server.
    fn cp(&self, env: &[(&str, &str)], args: &[&str]) -> Output {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["cp", "--json", "--quiet", "--endpoint-url", &self.server.endpoint_url()]);
        for (k, v) in env {
            c.env(k, v);
        }
        let start = Instant::now();
        let out = c.args(args).output().unwrap();
        assert!(start.elapsed() < Duration::from_secs(60), "gantry cp took {:?}", start.elapsed());
        out
    }

    /// Uploads and downloads a multi-part object with `env`; returns the credential source
    /// the upload reported.
    fn round_trip(&self, env: &[(&str, &str)]) -> String {
        let src = self.dir.path().join("src.bin");
        let data: Vec<u8> = (0..(12 << 20)).map(|i: usize| (i * 7 % 253) as u8).collect();
        std::fs::write(&src, &data).unwrap();
        let up = self.cp(env, &["--part-size", "5MiB", src.to_str().unwrap(), "s3://data/obj"]);
        assert!(up.status.success(), "upload failed: {}", String::from_utf8_lossy(&up.stderr));
        let dst = self.dir.path().join("dst.bin");
        let down = self.cp(env, &["s3://data/obj", dst.to_str().unwrap()]);
        assert!(down.status.success(), "download failed: {}", String::from_utf8_lossy(&down.stderr));
        assert!(std::fs::read(&dst).unwrap() == data, "downloaded bytes differ");
        let report: serde_json::Value = serde_json::from_slice(&up.stdout).unwrap();
        report["credentials"]["source"].as_str().unwrap_or_default().to_string()
    }

    /// A download destination.
    fn out(&self) -> String {
        self.dir.path().join("out.bin").to_string_lossy().into_owned()
    }

    fn write_aws(&self, name: &str, text: &str) -> PathBuf {
        let p = self.home().join(".aws").join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Reproduces EC2 with an instance profile: IMDSv2 token, role discovery, role credentials.
#[test]
fn imds_instance_profile() {
    let w = world();
    let imds = ImdsServer::start(w.issuer(Duration::from_secs(3600)));
    let url = imds.url();
    let env = [("AWS_EC2_METADATA_DISABLED", "false"), ("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
    assert_eq!(w.round_trip(&env), "imds");
    assert!(imds.token_requests() >= 2 && imds.credential_requests() >= 2);
    assert_eq!(imds.unauthorized(), 0, "every metadata read carried a session token");

    // No role attached, an answer that is not JSON, an IMDS that hangs: each a clear error.
    let src = w.dir.path().join("small");
    std::fs::write(&src, b"x").unwrap();
    imds.set_role(None);
    let o = w.cp(&env, &[src.to_str().unwrap(), "s3://data/x"]);
    assert!(!o.status.success() && stderr(&o).contains("IMDS: no role attached"), "{}", stderr(&o));
    imds.set_role(Some("gantry-test-role"));
    imds.set_mode(Mode::NotJson);
    let o = w.cp(&env, &[src.to_str().unwrap(), "s3://data/x"]);
    assert!(!o.status.success() && stderr(&o).contains("not JSON"), "{}", stderr(&o));
    imds.set_mode(Mode::Hang);
    let start = Instant::now();
    let o = w.cp(&env, &[src.to_str().unwrap(), "s3://data/x"]);
    assert!(!o.status.success() && stderr(&o).contains("no credentials"), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(10), "a hanging IMDS took {:?} to give up", start.elapsed());
}

/// Reproduces EKS Pod Identity: a full URI on this host and a token file the agent rotates.
#[test]
fn container_endpoint_with_rotating_token_file() {
    let w = world();
    let container = ContainerServer::start("/v1/credentials", w.issuer(Duration::from_secs(3600)));
    let token_file = w.dir.path().join("eks-pod-identity-token");
    std::fs::write(&token_file, "token-1\n").unwrap();
    container.set_auth_token(Some("token-1"));
    let url = container.url();
    let env = [
        ("AWS_CONTAINER_CREDENTIALS_FULL_URI", url.as_str()),
        ("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", token_file.to_str().unwrap()),
    ];
    assert_eq!(w.round_trip(&env), "container");
    // The agent rotates the token: the file is read again on the next fetch.
    std::fs::write(&token_file, "token-2").unwrap();
    container.set_auth_token(Some("token-2"));
    assert_eq!(w.round_trip(&env), "container");
    assert_eq!(container.last_authorization().as_deref(), Some("token-2"));
    // A stale token is refused with the endpoint's status in the message.
    container.set_auth_token(Some("token-3"));
    let o = w.cp(&env, &["s3://data/obj", w.dir.path().join("o").to_str().unwrap()]);
    assert!(!o.status.success() && stderr(&o).contains("HTTP 401"), "{}", stderr(&o));
    // Clear-text credentials from another host are refused before any request.
    let o = w.cp(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://192.0.2.1/creds")], &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("plain http"), "{}", stderr(&o));
}

/// Reproduces EKS IRSA: AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN through STS.
#[test]
fn web_identity_from_the_environment() {
    let w = world();
    let sts = StsServer::start(w.issuer(Duration::from_secs(3600)));
    sts.accept_web_identity_token("oidc-token-1");
    let token_file = w.dir.path().join("token");
    std::fs::write(&token_file, "oidc-token-1").unwrap();
    let url = sts.url();
    let env = [
        ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.to_str().unwrap()),
        ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/irsa"),
        ("AWS_ROLE_SESSION_NAME", "pod-1"),
        ("AWS_ENDPOINT_URL_STS", url.as_str()),
    ];
    assert_eq!(w.round_trip(&env), "web identity");
    let calls = sts.calls();
    assert!(calls.iter().all(|c| c.action == "AssumeRoleWithWebIdentity" && c.role_session_name == "pod-1"));
    // A token STS refuses, and a missing token file, each name the cause.
    std::fs::write(&token_file, "oidc-token-stale").unwrap();
    let o = w.cp(&env, &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("InvalidIdentityToken"), "{}", stderr(&o));
    std::fs::remove_file(&token_file).unwrap();
    let o = w.cp(&env, &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("web identity token file not found"), "{}", stderr(&o));
}

/// Reproduces `role_arn` profiles: a chain of two roles on top of a profile's keys, each hop an
/// AssumeRole signed with the previous hop's credentials.
#[test]
fn assume_role_chain_from_profiles() {
    let w = world();
    let sts = StsServer::start(w.issuer(Duration::from_secs(3600)));
    sts.accept_access_key("AKIABASEKEY");
    sts.set_accept_own_keys(true);
    w.write_aws("credentials", "[base]\naws_access_key_id = AKIABASEKEY\naws_secret_access_key = base-secret\n");
    w.write_aws(
        "config",
        "[profile hop1]\nrole_arn = arn:aws:iam::1:role/hop1\nsource_profile = base\n\n\
         [profile hop2]\nrole_arn = arn:aws:iam::2:role/hop2\nsource_profile = hop1\nexternal_id = ext-7\n\
         role_session_name = training\n",
    );
    let url = sts.url();
    let env = [("AWS_PROFILE", "hop2"), ("AWS_ENDPOINT_URL_STS", url.as_str())];
    assert_eq!(w.round_trip(&env), "profile");
    let calls = sts.calls();
    let hop1 = calls.iter().find(|c| c.role_arn == "arn:aws:iam::1:role/hop1").expect("hop1 assumed");
    assert_eq!(hop1.caller_access_key_id.as_deref(), Some("AKIABASEKEY"));
    let hop2 = calls.iter().find(|c| c.role_arn == "arn:aws:iam::2:role/hop2").expect("hop2 assumed");
    assert!(hop2.caller_access_key_id.as_deref().is_some_and(|k| k.starts_with("ASIA")), "signed by hop1's keys");
    assert_eq!((hop2.external_id.as_deref(), hop2.role_session_name.as_str()), (Some("ext-7"), "training"));
    // --profile wins over AWS_PROFILE; a missing profile is named.
    let o = w.cp(&env, &["--profile", "nope", "s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("profile \"nope\" is not in"), "{}", stderr(&o));
}

/// Reproduces `credential_process`: the JSON document on stdout, and processes that fail.
#[test]
fn credential_process_profiles() {
    let w = world();
    let issued = Issued::random(Duration::from_secs(3600));
    w.ring.insert(&issued.access_key_id, &issued.secret_access_key, Some(issued.expiration));
    let script = w.dir.path().join("creds.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '{{\"Version\": 1, \"AccessKeyId\": \"%s\", \"SecretAccessKey\": \"%s\", \
             \"SessionToken\": \"%s\", \"Expiration\": \"2099-01-01T00:00:00Z\"}}' {} {} {}\n",
            issued.access_key_id, issued.secret_access_key, issued.session_token
        ),
    )
    .unwrap();
    w.write_aws(
        "config",
        &format!(
            "[default]\ncredential_process = sh {}\n\n[profile garbage]\ncredential_process = echo '<html>'\n\n\
             [profile failing]\ncredential_process = sh -c 'echo token expired >&2; exit 1'\n",
            script.display()
        ),
    );
    assert_eq!(w.round_trip(&[]), "profile");
    let o = w.cp(&[("AWS_PROFILE", "garbage")], &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("not the expected JSON"), "{}", stderr(&o));
    let o = w.cp(&[("AWS_PROFILE", "failing")], &["s3://data/obj", &w.out()]);
    let e = stderr(&o);
    assert!(!o.status.success() && e.contains("exited 1: token expired"), "{e}");
    assert!(!e.contains(&issued.secret_access_key), "a secret reached the output");
    // A malformed file is a clear error, not a panic.
    w.write_aws("config", "[default\ncredential_process = x\n");
    let o = w.cp(&[], &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("cannot parse"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

/// Reproduces IAM Identity Center: `aws sso login` left a token in the cache; the portal's
/// GetRoleCredentials trades it for role credentials; an expired token says to log in again.
#[test]
fn sso_session_profile() {
    let w = world();
    let sso = SsoServer::start(w.issuer(Duration::from_secs(3600)));
    sso.accept_token("portal-token");
    w.write_aws(
        "config",
        "[profile dev]\nsso_session = corp\nsso_account_id = 111122223333\nsso_role_name = Trainer\n\n\
         [sso-session corp]\nsso_region = us-east-2\nsso_start_url = https://corp.awsapps.com/start\n",
    );
    let cache = w.home().join(".aws/sso/cache");
    std::fs::create_dir_all(&cache).unwrap();
    // The AWS CLI names the file by the SHA-1 of the session name.
    let file = cache.join(format!("{}.json", sha1_hex(b"corp")));
    let write_token = |expires: &str| {
        std::fs::write(
            &file,
            format!(r#"{{"startUrl":"https://corp.awsapps.com/start","region":"us-east-2","accessToken":"portal-token","expiresAt":"{expires}"}}"#),
        )
        .unwrap()
    };
    write_token("2099-01-01T00:00:00Z");
    let url = sso.url();
    let env = [("AWS_PROFILE", "dev"), ("AWS_ENDPOINT_URL_SSO", url.as_str())];
    assert_eq!(w.round_trip(&env), "profile");
    let calls = sso.calls();
    assert!(calls.iter().all(|c| c.account_id == "111122223333" && c.role_name == "Trainer"));
    write_token("2020-01-01T00:00:00Z");
    let o = w.cp(&env, &["s3://data/obj", &w.out()]);
    assert!(!o.status.success() && stderr(&o).contains("aws sso login --profile dev"), "{}", stderr(&o));
}

/// Keys nobody registered with the server fail: the round trips above prove the keys used.
#[test]
fn unregistered_keys_are_refused() {
    let w = world();
    let env = [("AWS_ACCESS_KEY_ID", "AKIAUNKNOWN"), ("AWS_SECRET_ACCESS_KEY", "x")];
    let o = w.cp(&env, &["s3://data/obj", &w.out()]);
    assert!(!o.status.success(), "unknown keys were accepted");
    assert!(w.ring.refusals().unknown_key >= 1);
}

fn sha1_hex(data: &[u8]) -> String {
    use sha1::Digest;
    hex::encode(sha1::Sha1::digest(data))
}

/// Writes `len` bytes of a pattern to `path` in 8 MiB pieces.
fn write_pattern(path: &std::path::Path, len: usize, seed: u8) {
    use std::io::Write;
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let piece: Vec<u8> = (0..(8 << 20)).map(|i: usize| (i * 13 + seed as usize) as u8).collect();
    for _ in 0..len / piece.len() {
        f.write_all(&piece).unwrap();
    }
    f.flush().unwrap();
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    use std::io::Read;
    let (mut fa, mut fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let na = fa.read(&mut ba).unwrap();
        let mut nb = 0;
        while nb < na {
            match fb.read(&mut bb[nb..na]).unwrap() {
                0 => return false,
                n => nb += n,
            }
        }
        if na == 0 {
            return fb.read(&mut bb).unwrap() == 0;
        }
        if ba[..na] != bb[..na] {
            return false;
        }
    }
}

/// A paced server, so transfers take long enough to outlive their credentials, and an
/// unpaced twin on the same directory to put objects in place quickly.
struct PacedWorld {
    world: World,
    twin: BackgroundServer,
}

impl std::ops::Deref for PacedWorld {
    type Target = World;
    fn deref(&self) -> &World {
        &self.world
    }
}

impl PacedWorld {
    /// Uploads `path` as `data/key` through the unpaced twin (the store has a layout of its
    /// own: objects enter through S3, not by writing files into its directory).
    fn preload(&self, path: &std::path::Path, key: &str) {
        self.cp_with_own_key(path.to_str().unwrap(), &format!("s3://data/{key}"));
    }

    /// Downloads `key` to `path` outside the run under test: the bytes the server holds.
    fn fetch(&self, key: &str, path: &std::path::Path) {
        self.cp_with_own_key(&format!("s3://data/{key}"), path.to_str().unwrap());
    }

    /// `gantry cp src dst` with a key of its own, added to the ring only meanwhile.
    fn cp_with_own_key(&self, src: &str, dst: &str) {
        self.ring.insert("AKIAPRELOAD", "preload-secret", None);
        let out = Command::new(BIN)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("AWS_ACCESS_KEY_ID", "AKIAPRELOAD")
            .env("AWS_SECRET_ACCESS_KEY", "preload-secret")
            // The server assembles (and hashes) a 1 GiB object inside CompleteMultipartUpload;
            // on a loaded machine that can outlast the default 30 s first-byte timeout, and
            // a resent Complete then meets an upload that no longer exists.
            .args([
                "cp",
                "--quiet",
                "--set",
                "first_byte_timeout_ms=300000",
                "--endpoint-url",
                &self.twin.endpoint_url(),
            ])
            .arg(src)
            .arg(dst)
            .output()
            .unwrap();
        assert!(out.status.success(), "cp {src} {dst} failed: {}", String::from_utf8_lossy(&out.stderr));
        self.ring.remove("AKIAPRELOAD");
    }
}

fn paced_world(bytes_per_sec_per_connection: u64) -> PacedWorld {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s3");
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::create_dir_all(dir.path().join("home/.aws")).unwrap();
    let ring = KeyRing::new();
    let config = ServerConfig::new(&root, "127.0.0.1:0".parse().unwrap())
        .with_keyring(ring.clone())
        .with_pace_bytes_per_sec(bytes_per_sec_per_connection);
    let server = gantry_server::start_background(config, 2).unwrap();
    let twin = ServerConfig::new(&root, "127.0.0.1:0".parse().unwrap()).with_keyring(ring.clone());
    let twin = gantry_server::start_background(twin, 2).unwrap();
    PacedWorld { world: World { dir, ring, server }, twin }
}

/// Runs `gantry cp` in the background (a long transfer), returning its handle.
fn spawn_cp(w: &World, env: &[(&str, &str)], args: &[&str]) -> std::process::Child {
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", w.home())
        .env("AWS_REGION", "us-east-1")
        .args(["cp", "--json", "--quiet", "--endpoint-url", &w.server.endpoint_url()]);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
}

fn finish(child: std::process::Child, what: &str) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The long run: IMDS credentials that the server refuses 20 s after they were issued, and
/// IMDS session tokens that go stale every 15 s, while a 1 GiB upload and a 1 GiB download
/// run for a minute or more each at the same time. Every
/// request must be signed with live keys (refreshed in the background, ahead of expiry): no
/// attempt fails, no key is refused as expired, and every byte is exact.
#[test]
fn long_transfers_outlive_twenty_second_credentials() {
    const GIB: usize = 1 << 30;
    // 8 connections x 2 MiB/s each way: about 64 s per GiB.
    let w = paced_world(2 << 20);
    let imds = ImdsServer::start(w.issuer(Duration::from_secs(20)));
    let url = imds.url();
    let env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
    let up_src = w.dir.path().join("up.bin");
    write_pattern(&up_src, GIB, 1);
    let stored = w.dir.path().join("down-src.bin");
    write_pattern(&stored, GIB, 2);
    w.preload(&stored, "down");
    let down_dst = w.dir.path().join("down.bin");
    let start = Instant::now();
    let args = ["--max-connections", "8", "--set", "first_byte_timeout_ms=300000"];
    let up = spawn_cp(&w, &env, &[&args[..], &[up_src.to_str().unwrap(), "s3://data/up"]].concat());
    let down = spawn_cp(&w, &env, &[&args[..], &["s3://data/down", down_dst.to_str().unwrap()]].concat());
    // IMDS drops its session tokens every 15 s (as after an IMDS restart): the refreshes
    // that follow meet 401, fetch a new token, and go on.
    let imds = Arc::new(imds);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let expirer = {
        let (imds, stop) = (imds.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut last = Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed() > Duration::from_secs(15) {
                    imds.expire_tokens();
                    last = Instant::now();
                }
            }
        })
    };
    let (up, down) = (finish(up, "upload"), finish(down, "download"));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    expirer.join().unwrap();
    assert!(imds.unauthorized() >= 1, "no stale IMDS token was met");
    let elapsed = start.elapsed();
    eprintln!("long run: {elapsed:?}; upload {up}; download {down}; refused {:?}", w.ring.refusals());
    assert!(elapsed > Duration::from_secs(40), "the run must outlast its credentials: {elapsed:?}");
    for (name, r) in [("upload", &up), ("download", &down)] {
        assert_eq!(r["errors"], 0, "{name}: a request failed");
        assert_eq!(r["retries"], 0, "{name}: a request was retried");
        assert!(r["credentials"]["refreshes"].as_u64().unwrap() >= 3, "{name}: credentials were not refreshed");
        assert_eq!(r["credentials"]["forced_refreshes"], 0, "{name}: a refresh came too late");
    }
    assert_eq!(w.ring.refusals().total(), 0, "the server refused a key");
    let up_back = w.dir.path().join("up-back.bin");
    w.fetch("up", &up_back);
    assert!(same_file(&up_src, &up_back), "uploaded bytes differ");
    assert!(same_file(&stored, &down_dst), "downloaded bytes differ");
}

/// The server refuses credentials before the expiry they were issued with (revoked early, a
/// clock ahead): S3 answers ExpiredToken, the client refreshes once and resends, and the
/// transfer succeeds.
#[test]
fn expired_token_answer_forces_a_refresh() {
    let w = paced_world(4 << 20);
    let ring = w.ring.clone();
    let issuer: Arc<dyn Issuer> = Arc::new(FnIssuer(move |_: &str| {
        let issued = Issued::random(Duration::from_secs(3600));
        // The server lets these keys live for 4 s only.
        ring.insert(
            &issued.access_key_id,
            &issued.secret_access_key,
            Some(std::time::SystemTime::now() + Duration::from_secs(4)),
        );
        issued
    }));
    let imds = ImdsServer::start(issuer);
    let url = imds.url();
    let env = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.as_str())];
    let stored = w.dir.path().join("obj-src.bin");
    write_pattern(&stored, 64 << 20, 3);
    w.preload(&stored, "obj");
    let dst = w.dir.path().join("obj.bin");
    let down =
        spawn_cp(&w, &env, &["--max-connections", "2", "--part-size", "8MiB", "s3://data/obj", dst.to_str().unwrap()]);
    let r = finish(down, "download");
    assert!(r["credentials"]["forced_refreshes"].as_u64().unwrap() >= 1, "{r}");
    assert!(w.ring.refusals().expired >= 1);
    assert!(same_file(&stored, &dst));
}
