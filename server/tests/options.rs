//! The server's test options over the wire: rotating and expiring keys (answers s3s sends for
//! real SigV4-signed requests), TLS with `self_signed` certificates, and connection pacing.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use aws_sigv4::http_request::{sign, PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use gantry_server::{start_background, tls, BackgroundServer, KeyRing, ServerConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;

const MIB: usize = 1 << 20;

#[derive(Debug)]
struct Response {
    status: u16,
    body: Vec<u8>,
}

impl Response {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A request to send: method, path, and the keys to sign with (`None`: unsigned).
struct Req<'a> {
    method: &'a str,
    path: &'a str,
    keys: Option<(&'a str, &'a str)>,
    body: Vec<u8>,
}

impl<'a> Req<'a> {
    fn get(path: &'a str) -> Self {
        Req { method: "GET", path, keys: None, body: Vec::new() }
    }

    fn signed(mut self, access_key: &'a str, secret: &'a str) -> Self {
        self.keys = Some((access_key, secret));
        self
    }

    /// The request as HTTP/1.1 bytes for `host`, SigV4-signed when it has keys.
    fn to_bytes(&self, host: &str) -> Vec<u8> {
        let mut req = http::Request::builder()
            .method(self.method)
            .uri(format!("http://{host}{}", self.path))
            .header("host", host)
            .header("content-length", self.body.len())
            .body(())
            .unwrap();
        if let Some((ak, sk)) = self.keys {
            let identity: Identity = aws_credential_types::Credentials::new(ak, sk, None, None, "test").into();
            let mut settings = SigningSettings::default();
            settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
            let params = v4::SigningParams::builder()
                .identity(&identity)
                .region("us-east-1")
                .name("s3")
                .time(SystemTime::now())
                .settings(settings)
                .build()
                .unwrap()
                .into();
            let uri = req.uri().to_string();
            let headers = req.headers().iter().map(|(k, v)| (k.as_str(), v.to_str().unwrap()));
            let signable = SignableRequest::new(self.method, &uri, headers, SignableBody::Bytes(&self.body)).unwrap();
            let (instructions, _) = sign(signable, &params).unwrap().into_parts();
            instructions.apply_to_request_http1x(&mut req);
        }
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        for (k, v) in req.headers() {
            out.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap()));
        }
        out.push_str("connection: close\r\n\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// Sends `req` on a fresh stream and reads the answer (Content-Length framed, or to EOF).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, host: &str, req: &Req<'_>) -> Response {
    stream.write_all(&req.to_bytes(host)).await.unwrap();
    stream.flush().await.unwrap();
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before the response head: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status code");
    let length = head.lines().find_map(|l| l.strip_prefix("content-length:")).map(|v| v.trim().parse().unwrap());
    let mut body = buf.split_off(head_end);
    match length {
        Some(len) => {
            let have = body.len().min(len);
            body.resize(len, 0);
            stream.read_exact(&mut body[have..]).await.unwrap();
        }
        None => {
            // No length: read to EOF (a TLS peer may close without close_notify).
            let _ = stream.read_to_end(&mut body).await;
        }
    }
    Response { status, body }
}

async fn plain(server: &BackgroundServer, req: &Req<'_>) -> Response {
    let stream = TcpStream::connect(server.addr()).await.unwrap();
    exchange(stream, &server.addr().to_string(), req).await
}

fn tls_client(ca: &Path) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

fn start(root: &Path, config: impl FnOnce(ServerConfig) -> ServerConfig) -> BackgroundServer {
    std::fs::create_dir_all(root.join("bucket")).unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    start_background(config(ServerConfig::new(root, addr)), 1).unwrap()
}

#[tokio::test]
async fn keyring_rotation_and_expiry_on_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let ring = KeyRing::new();
    ring.insert("AK1", "S1", None);
    ring.insert("OLD", "S0", Some(SystemTime::now() - Duration::from_secs(1)));
    ring.insert("SOON", "S2", Some(SystemTime::now() + Duration::from_millis(400)));
    let server = start(dir.path(), |c| c.with_keyring(ring.clone()));

    let r = plain(&server, &Req::get("/bucket/").signed("AK1", "S1")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = plain(&server, &Req::get("/bucket/").signed("SOON", "S2")).await;
    assert_eq!(r.status, 200, "{}", r.text());

    // The signature is still s3s's to verify.
    let r = plain(&server, &Req::get("/bucket/").signed("AK1", "wrong")).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("<Code>SignatureDoesNotMatch</Code>"), "{}", r.text());

    let r = plain(&server, &Req::get("/bucket/").signed("OLD", "S0")).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("<Code>ExpiredToken</Code>"), "{}", r.text());
    assert!(r.text().contains("The provided token has expired."), "{}", r.text());

    let r = plain(&server, &Req::get("/bucket/").signed("NOPE", "S1")).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("<Code>InvalidAccessKeyId</Code>"), "{}", r.text());

    // Rotation while running: AK2 in, AK1 out; SOON expires on its own.
    ring.insert("AK2", "S3", None);
    assert!(ring.remove("AK1"));
    let r = plain(&server, &Req::get("/bucket/").signed("AK2", "S3")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = plain(&server, &Req::get("/bucket/").signed("AK1", "S1")).await;
    assert_eq!(r.status, 403, "{}", r.text());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = plain(&server, &Req::get("/bucket/").signed("SOON", "S2")).await;
    assert_eq!(r.status, 400, "{}", r.text());

    let refusals = ring.refusals();
    assert_eq!((refusals.unknown_key, refusals.expired), (2, 2), "{refusals:?}");
}

#[tokio::test]
async fn tls_handshake_with_self_signed_ca() {
    let dir = tempfile::tempdir().unwrap();
    let files = tls::self_signed(&dir.path().join("tls")).unwrap();
    let server = start(&dir.path().join("s3"), |c| c.with_tls(files.tls_config()));
    assert!(server.endpoint_url().starts_with("https://127.0.0.1:"), "{}", server.endpoint_url());
    let connector = tls_client(&files.ca);

    for name in ["localhost", "127.0.0.1"] {
        let tcp = TcpStream::connect(server.addr()).await.unwrap();
        let server_name = rustls::pki_types::ServerName::try_from(name).unwrap().to_owned();
        let stream = connector.connect(server_name, tcp).await.unwrap();
        assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let host = format!("{name}:{}", server.addr().port());
        let r = exchange(
            stream,
            &host,
            &Req::get("/").signed(gantry_server::DEFAULT_ACCESS_KEY, gantry_server::DEFAULT_SECRET_KEY),
        )
        .await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.text().contains("<Name>bucket</Name>"), "{}", r.text());
    }

    // A client that does not trust the CA is refused.
    let other = tls::self_signed(&dir.path().join("other")).unwrap();
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let server_name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    assert!(tls_client(&other.ca).connect(server_name, tcp).await.is_err());
}

/// Times a 1 MiB GET and a 1 MiB PUT through a server paced at 4 MiB/s, plain or TLS.
async fn paced_transfers(use_tls: bool) {
    let dir = tempfile::tempdir().unwrap();
    let files = tls::self_signed(&dir.path().join("tls")).unwrap();
    let root = dir.path().join("s3");
    let server = start(&root, |c| {
        let c = c.without_auth().with_pace_bytes_per_sec(4 * MIB as u64);
        if use_tls {
            c.with_tls(files.tls_config())
        } else {
            c
        }
    });
    let data: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
    let connector = tls_client(&files.ca);
    let send = |req: Req<'static>| {
        let connector = connector.clone();
        let addr = server.addr();
        async move {
            let tcp = TcpStream::connect(addr).await.unwrap();
            let host = addr.to_string();
            if use_tls {
                let name = rustls::pki_types::ServerName::from(addr.ip());
                exchange(connector.connect(name, tcp).await.unwrap(), &host, &req).await
            } else {
                exchange(tcp, &host, &req).await
            }
        }
    };

    // Objects live in the server's own layout: the PUT stores what the GET reads back.
    let t = Instant::now();
    let r = send(Req { method: "PUT", path: "/bucket/paced", keys: None, body: data.clone() }).await;
    let took = t.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    eprintln!("paced PUT of 1 MiB at 4 MiB/s (tls: {use_tls}): {took:?}");
    assert!(took >= Duration::from_millis(200), "PUT took {took:?}");
    assert!(took < Duration::from_secs(5), "PUT took {took:?}");

    let t = Instant::now();
    let r = send(Req::get("/bucket/paced")).await;
    let took = t.elapsed();
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body == data, "GET body differs from what was PUT");
    eprintln!("paced GET of 1 MiB at 4 MiB/s (tls: {use_tls}): {took:?}");
    assert!(took >= Duration::from_millis(200), "GET took {took:?}");
    assert!(took < Duration::from_secs(5), "GET took {took:?}");
}

#[tokio::test]
async fn pacing_slows_plain_connections() {
    paced_transfers(false).await;
}

#[tokio::test]
async fn pacing_slows_tls_connections() {
    paced_transfers(true).await;
}

#[tokio::test]
async fn bad_tls_files_and_zero_pace_fail_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let missing = dir.path().join("none.pem");
    let e = start_background(
        ServerConfig::new(dir.path(), addr).with_tls(gantry_server::TlsConfig::new(&missing, &missing)),
        1,
    )
    .unwrap_err();
    assert!(e.to_string().contains("none.pem"), "{e}");
    let e = start_background(ServerConfig::new(dir.path(), addr).with_pace_bytes_per_sec(0), 1).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}
