//! The `gantry-fault-server` binary: flags, startup line, SIGTERM summary.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

#[tokio::test]
async fn binary_serves_faults_and_prints_summary() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry-fault-server"))
        .args(["--port", "0", "--first-byte-ms", "1", "--conn-rate-mbps", "100", "--seed", "3"])
        .args(["--fault", "503,op=GetObject,every=2", "--reject-trailers"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("{line:?}"));
    let addr: SocketAddr = url.parse().unwrap();

    assert_eq!(common::send(addr, "PUT", "/b", &[], b"").await.ok().status, Some(200));
    assert_eq!(common::send(addr, "PUT", "/b/k", &[], b"hello").await.ok().status, Some(200));
    let chunked = [("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", "1")];
    assert_eq!(common::send(addr, "PUT", "/b/c", &chunked, b"1\r\nx\r\n0\r\n\r\n").await.ok().status, Some(501));
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(common::send(addr, "GET", "/b/k", &[], b"").await.ok().status.unwrap());
    }
    assert_eq!(statuses, [200, 503, 200, 503]);

    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let summary = rest.trim();
    assert!(summary.starts_with("{\"requests\":7,\"faults_fired\":2,\"by_op\":{\"GetObject\":4,"), "{summary}");
    assert!(summary.contains("\"PutObject\":2") && summary.contains("\"CreateBucket\":1"), "{summary}");
    assert!(summary.ends_with("}}"), "{summary}");
}

#[test]
fn binary_rejects_bad_fault_spec() {
    let out = Command::new(env!("CARGO_BIN_EXE_gantry-fault-server"))
        .args(["--port", "0", "--fault", "teapot"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown fault kind"));
}

#[tokio::test]
async fn binary_serves_https_with_a_self_signed_ca() {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = std::env::temp_dir().join(format!("gantry-fault-server-tls-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_gantry-fault-server"))
        .args(["--port", "0", "--tls-self-signed"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on https://").unwrap_or_else(|| panic!("{line:?}"));
    let addr: SocketAddr = url.parse().unwrap();

    // Trust exactly the CA the server wrote, and check the leaf's IP address name.
    let mut roots = rustls::RootCertStore::empty();
    let ca = std::fs::read(dir.join("ca.pem")).unwrap();
    use rustls::pki_types::pem::PemObject;
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let mut tls = connector.connect(name, tcp).await.expect("handshake against ca.pem");
    tls.write_all(b"PUT /b HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").await.unwrap();
    tls.write_all(b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello").await.unwrap();
    tls.write_all(b"GET /b/k HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(answer.matches("HTTP/1.1 200").count(), 3, "{answer}");
    assert!(answer.ends_with("hello"), "{answer}");

    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn binary_names_a_bad_tls_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_gantry-fault-server"))
        .args(["--port", "0", "--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/cert.pem"));
}
