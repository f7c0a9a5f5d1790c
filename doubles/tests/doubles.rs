//! Each double exercised over real sockets with a raw HTTP/1.1 client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use gantry_doubles::{
    ContainerServer, FnIssuer, ImdsServer, Issued, Mode, NetworkInterface, ProxyServer, SsoServer, StaticIssuer,
    StsFault, StsServer,
};

const TTL: &str = "X-aws-ec2-metadata-token-ttl-seconds";
const TOKEN: &str = "X-aws-ec2-metadata-token";
const CREDS: &str = "/latest/meta-data/iam/security-credentials/";
const FORM: &str = "application/x-www-form-urlencoded";
const ROLE: &str = "arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fpath%2Fdeploy";

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request with `Connection: close` to `addr` and reads the whole answer.
fn try_request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> std::io::Result<Reply> {
    let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let mut tcp = TcpStream::connect(addr)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.write_all(raw.as_bytes())?;
    let mut out = Vec::new();
    tcp.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok(Reply { status, head: head.to_owned(), body: body.to_owned() })
}

fn request(addr: SocketAddr, method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    try_request(addr, method, target, headers, body, Duration::from_secs(10)).expect("request failed")
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> &'a str {
    let from = s.find(start).unwrap_or_else(|| panic!("no {start} in {s}")) + start.len();
    &s[from..from + s[from..].find(end).unwrap()]
}

fn is_rfc3339_utc_seconds(s: &str) -> bool {
    s.len() == 20 && s.as_bytes()[10] == b'T' && s.ends_with('Z') && s.starts_with("20")
}

fn hour() -> Duration {
    Duration::from_secs(3600)
}

fn imds_token(imds: &ImdsServer, ttl: &str) -> String {
    let reply = request(imds.addr(), "PUT", "/latest/api/token", &[(TTL, ttl)], "");
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body
}

#[test]
fn imds_requires_session_tokens_and_serves_credentials() {
    let sources = Arc::new(Mutex::new(Vec::new()));
    let seen = sources.clone();
    let imds = ImdsServer::start(Arc::new(FnIssuer(move |source: &str| {
        seen.lock().unwrap().push(source.to_owned());
        Issued::random(hour())
    })));
    let a = imds.addr();
    let put = |headers: &[(&str, &str)]| request(a, "PUT", "/latest/api/token", headers, "").status;
    assert_eq!(put(&[]), 400);
    assert_eq!(put(&[(TTL, "0")]), 400);
    assert_eq!(put(&[(TTL, "21601")]), 400);
    assert_eq!(put(&[(TTL, "60"), ("X-Forwarded-For", "10.0.0.1")]), 403);
    assert_eq!(request(a, "GET", CREDS, &[], "").status, 401, "IMDSv1 must be refused");
    assert_eq!(request(a, "GET", CREDS, &[(TOKEN, "made-up")], "").status, 401);

    let reply = request(a, "PUT", "/latest/api/token", &[(TTL, "21600")], "");
    assert_eq!((reply.status, reply.header(TTL)), (200, Some("21600")));
    assert_eq!(reply.header("content-type"), Some("text/plain"));
    let token = reply.body;
    let get = |path: &str| request(a, "GET", path, &[(TOKEN, &token)], "");
    assert_eq!(get(CREDS).body, "gantry-test-role");
    let creds = get(&format!("{CREDS}gantry-test-role"));
    assert_eq!(creds.status, 200);
    assert!(creds.body.starts_with("{\n  \"Code\" : \"Success\",\n"), "{}", creds.body);
    let doc = creds.json();
    assert_eq!((doc["Code"].as_str(), doc["Type"].as_str()), (Some("Success"), Some("AWS-HMAC")));
    assert!(doc["AccessKeyId"].as_str().unwrap().starts_with("ASIA"));
    assert!(doc["SecretAccessKey"].is_string() && doc["Token"].is_string());
    assert!(is_rfc3339_utc_seconds(doc["Expiration"].as_str().unwrap()), "{doc}");
    assert!(is_rfc3339_utc_seconds(doc["LastUpdated"].as_str().unwrap()), "{doc}");
    assert_eq!(get(&format!("{CREDS}other-role")).status, 404);

    imds.set_region("eu-central-1");
    imds.set_instance_type("p5.48xlarge");
    imds.set_interfaces(vec![
        NetworkInterface { mac: "0e:00:00:00:00:01".into(), network_card_index: 0, device_number: 0 },
        NetworkInterface { mac: "0e:00:00:00:00:02".into(), network_card_index: 1, device_number: 1 },
    ]);
    assert_eq!(get("/latest/meta-data/placement/region").body, "eu-central-1");
    assert_eq!(get("/latest/meta-data/instance-type").body, "p5.48xlarge");
    let macs = "/latest/meta-data/network/interfaces/macs/";
    assert_eq!(get(macs).body, "0e:00:00:00:00:01/\n0e:00:00:00:00:02/");
    assert_eq!(get(&format!("{macs}0e:00:00:00:00:02/network-card-index")).body, "1");
    assert_eq!(get(&format!("{macs}0e:00:00:00:00:02/device-number")).body, "1");
    assert_eq!(get(&format!("{macs}0e:00:00:00:00:09/device-number")).status, 404);

    imds.set_role(None);
    assert_eq!(get(CREDS).status, 404);
    imds.expire_tokens();
    assert_eq!(get(CREDS).status, 401);
    assert_eq!((imds.token_requests(), imds.credential_requests(), imds.unauthorized()), (5, 2, 3));
    assert_eq!(*sources.lock().unwrap(), ["imds"]);
}

#[test]
fn imds_honours_token_ttl_and_modes() {
    let imds = ImdsServer::start(Arc::new(StaticIssuer::new("ASIAIMDS", "secret", "token", hour())));
    let a = imds.addr();
    let short = imds_token(&imds, "1");
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(request(a, "GET", CREDS, &[(TOKEN, &short)], "").status, 401, "token outlived its TTL");

    let token = imds_token(&imds, "300");
    let creds_path = format!("{CREDS}gantry-test-role");
    imds.set_mode(Mode::NotJson);
    let reply = request(a, "GET", &creds_path, &[(TOKEN, &token)], "");
    assert_eq!(reply.status, 200);
    assert!(serde_json::from_str::<serde_json::Value>(&reply.body).is_err());
    imds.set_mode(Mode::Error500);
    assert_eq!(request(a, "PUT", "/latest/api/token", &[(TTL, "60")], "").status, 500);
    imds.set_mode(Mode::Hang);
    let answer = try_request(a, "GET", &creds_path, &[(TOKEN, &token)], "", Duration::from_millis(300));
    assert!(answer.is_err(), "a hanging IMDS answered");
    imds.set_mode(Mode::Normal);
    assert_eq!(request(a, "GET", &creds_path, &[(TOKEN, &token)], "").json()["AccessKeyId"], "ASIAIMDS");
}

#[test]
fn container_endpoint_checks_a_changing_authorization_token() {
    let c = ContainerServer::start("/v1/credentials", Arc::new(StaticIssuer::new("ASIACONT", "secret", "tok", hour())));
    assert!(c.url().ends_with("/v1/credentials"));
    let get = |auth: Option<&str>| {
        let headers: Vec<(&str, &str)> = auth.map(|t| ("Authorization", t)).into_iter().collect();
        request(c.addr(), "GET", "/v1/credentials", &headers, "")
    };
    assert_eq!(get(None).status, 200, "no token configured");
    c.set_auth_token(Some("token-1"));
    let denied = get(None);
    assert_eq!(denied.status, 401);
    assert!(denied.json()["message"].is_string());
    let doc = get(Some("token-1")).json();
    assert_eq!((doc["AccessKeyId"].as_str(), doc["Token"].as_str()), (Some("ASIACONT"), Some("tok")));
    assert_eq!(doc["RoleArn"], "arn:aws:iam::123456789012:role/test");
    assert!(is_rfc3339_utc_seconds(doc["Expiration"].as_str().unwrap()));
    c.set_auth_token(Some("token-2"));
    assert_eq!(get(Some("token-1")).status, 401, "the rotated token must be re-read");
    assert_eq!(get(Some("token-2")).status, 200);
    assert_eq!(request(c.addr(), "GET", "/v2/other", &[], "").status, 404);
    assert_eq!((c.unauthorized(), c.credentials_served()), (2, 3));
    assert_eq!(c.last_authorization(), None);
    c.set_mode(Mode::Error500);
    assert_eq!(get(Some("token-2")).status, 500);
}

fn sigv4(akid: &str, service: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential={akid}/20260101/us-east-1/{service}/aws4_request, \
         SignedHeaders=content-type;host;x-amz-date, Signature=0123abcd"
    )
}

#[test]
fn sts_assume_role_checks_the_signing_key_and_supports_role_chains() {
    let sts = StsServer::start(Arc::new(FnIssuer(|_: &str| Issued::random(hour()))));
    let body = format!("Action=AssumeRole&Version=2011-06-15&RoleArn={ROLE}&RoleSessionName=gantry-1&ExternalId=ext-1");
    let post = |auth: Option<&str>, token: Option<&str>| {
        let mut headers = vec![("Content-Type", FORM), ("X-Amz-Date", "20260101T000000Z")];
        headers.extend(auth.map(|a| ("Authorization", a)));
        headers.extend(token.map(|t| ("X-Amz-Security-Token", t)));
        request(sts.addr(), "POST", "/", &headers, &body)
    };
    let code = |r: &Reply| (r.status, between(&r.body, "<Code>", "</Code>").to_owned());
    assert_eq!(code(&post(None, None)), (403, "MissingAuthenticationToken".into()));
    assert_eq!(code(&post(Some(&sigv4("AKIDBASE", "s3")), None)), (403, "SignatureDoesNotMatch".into()));
    let unknown = post(Some(&sigv4("AKIDBASE", "sts")), None);
    assert_eq!(code(&unknown), (403, "InvalidClientTokenId".into()));
    assert!(unknown.body.starts_with("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"));
    assert!(unknown.body.contains("<Type>Sender</Type>") && unknown.header("x-amzn-requestid").is_some());

    sts.accept_access_key("AKIDBASE");
    let ok = post(Some(&sigv4("AKIDBASE", "sts")), None);
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body.starts_with("<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"));
    assert_eq!(between(&ok.body, "<Arn>", "</Arn>"), "arn:aws:sts::123456789012:assumed-role/deploy/gantry-1");
    let role_id = between(&ok.body, "<AssumedRoleId>", "</AssumedRoleId>");
    assert!(role_id.starts_with("AROA") && role_id.ends_with(":gantry-1"));
    assert!(is_rfc3339_utc_seconds(between(&ok.body, "<Expiration>", "</Expiration>")));
    assert!(ok.body.contains("<ResponseMetadata>\n    <RequestId>"));
    let call = sts.calls().pop().unwrap();
    assert_eq!(call.caller_access_key_id.as_deref(), Some("AKIDBASE"));
    assert_eq!((call.external_id.as_deref(), call.status), (Some("ext-1"), 200));
    assert_eq!(call.role_arn, "arn:aws:iam::123456789012:role/path/deploy");

    // Role chain: the issued keys are refused until the double accepts its own keys.
    let issued = |r: &Reply| {
        (
            between(&r.body, "<AccessKeyId>", "</AccessKeyId>").to_owned(),
            between(&r.body, "<SessionToken>", "</SessionToken>").to_owned(),
        )
    };
    let (akid, token) = issued(&ok);
    assert_eq!(post(Some(&sigv4(&akid, "sts")), Some(&token)).status, 403);
    sts.set_accept_own_keys(true);
    let (akid, token) = issued(&post(Some(&sigv4("AKIDBASE", "sts")), None));
    assert_eq!(post(Some(&sigv4(&akid, "sts")), None).status, 403, "session token missing");
    assert_eq!(post(Some(&sigv4(&akid, "sts")), Some(&token)).status, 200);

    let expired = Issued::random(Duration::ZERO);
    sts.accept_issued(&expired);
    let reply = post(Some(&sigv4(&expired.access_key_id, "sts")), Some(&expired.session_token));
    assert_eq!(code(&reply), (403, "ExpiredToken".into()));

    sts.fail_next(StsFault::Throttling, 1);
    assert_eq!(code(&post(Some(&sigv4("AKIDBASE", "sts")), None)), (400, "Throttling".into()));
    let query = format!("/?{body}");
    let auth = sigv4("AKIDBASE", "sts");
    let headers = [("Authorization", auth.as_str()), ("X-Amz-Date", "20260101T000000Z")];
    assert_eq!(request(sts.addr(), "GET", &query, &headers, "").status, 200, "GET with a query string");
    let bad_name = query.replace("gantry-1", "a");
    assert_eq!(code(&request(sts.addr(), "GET", &bad_name, &headers, "")), (400, "ValidationError".into()));
    let bad_action = query.replace("AssumeRole&", "AssumeRoot&");
    assert_eq!(code(&request(sts.addr(), "GET", &bad_action, &headers, "")), (400, "InvalidAction".into()));
}

fn jwt() -> String {
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let claims =
        r#"{"sub":"system:serviceaccount:ns:sa","aud":["sts.amazonaws.com"],"iss":"https://oidc.example.com/id/AB"}"#;
    format!("{}.{}.signature", b64(r#"{"alg":"RS256"}"#), b64(claims))
}

fn web_identity_body(token: &str) -> String {
    format!("Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={ROLE}&RoleSessionName=s1&WebIdentityToken={token}")
}

#[test]
fn sts_web_identity_needs_an_accepted_token() {
    let sts = StsServer::start(Arc::new(StaticIssuer::new("ASIAWEB", "secret", "tok", hour())));
    let post = |token: &str| request(sts.addr(), "POST", "/", &[("Content-Type", FORM)], &web_identity_body(token));
    let denied = post(&jwt());
    assert_eq!(denied.status, 400);
    assert_eq!(between(&denied.body, "<Code>", "</Code>"), "InvalidIdentityToken");
    sts.accept_web_identity_token(&jwt());
    let ok = post(&jwt());
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert!(ok.body.contains("<AssumeRoleWithWebIdentityResult>"));
    assert_eq!(between(&ok.body, "<SubjectFromWebIdentityToken>", "<"), "system:serviceaccount:ns:sa");
    assert_eq!(between(&ok.body, "<Audience>", "<"), "sts.amazonaws.com");
    assert_eq!(between(&ok.body, "<Provider>", "<"), "https://oidc.example.com/id/AB");
    assert_eq!(between(&ok.body, "<AccessKeyId>", "<"), "ASIAWEB");
    let call = sts.calls().pop().unwrap();
    assert_eq!((call.caller_access_key_id, call.web_identity_token), (None, Some(jwt())));
    sts.set_mode(Mode::Error500);
    assert!(post(&jwt()).body.contains("<Type>Receiver</Type>"));
}

#[test]
fn sso_portal_checks_the_bearer_token() {
    let sso = SsoServer::start(Arc::new(StaticIssuer::new("ASIASSO", "secret", "tok", hour())));
    sso.accept_token("good");
    let path = "/federation/credentials?role_name=Admin&account_id=123456789012";
    let get = |token: &str| request(sso.addr(), "GET", path, &[("x-amz-sso_bearer_token", token)], "");
    let denied = get("bad");
    assert_eq!((denied.status, denied.header("x-amzn-ErrorType")), (401, Some("UnauthorizedException")));
    assert_eq!(denied.body, r#"{"message":"Session token not found or invalid"}"#);
    let doc = get("good").json();
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let expiration = doc["roleCredentials"]["expiration"].as_u64().unwrap();
    assert!(expiration > now_ms && expiration < now_ms + 3_700_000);
    assert_eq!(doc["roleCredentials"]["accessKeyId"], "ASIASSO");
    assert_eq!(doc["roleCredentials"]["sessionToken"], "tok");
    let calls = sso.calls();
    assert_eq!((calls.len(), calls[1].account_id.as_str(), calls[1].role_name.as_str()), (2, "123456789012", "Admin"));
    sso.revoke_token("good");
    assert_eq!(get("good").status, 401);
    assert_eq!(sso.unauthorized(), 2);
}

/// A TCP server that echoes one connection.
fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        let mut buf = [0u8; 1024];
        while let Ok(n @ 1..) = tcp.read(&mut buf) {
            tcp.write_all(&buf[..n]).unwrap();
        }
    });
    addr
}

#[test]
fn proxy_tunnels_connect_with_basic_auth() {
    let proxy = ProxyServer::start();
    proxy.set_basic_auth(Some(("user", "pass")));
    let echo = echo_server();
    let denied = request(proxy.addr(), "CONNECT", &echo.to_string(), &[], "");
    assert_eq!((denied.status, denied.header("proxy-authenticate")), (407, Some("Basic realm=\"gantry-test\"")));

    let mut tcp = TcpStream::connect(proxy.addr()).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = base64::engine::general_purpose::STANDARD.encode("user:pass");
    write!(tcp, "CONNECT {echo} HTTP/1.1\r\nHost: {echo}\r\nProxy-Authorization: Basic {auth}\r\n\r\n").unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8];
        tcp.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    tcp.write_all(b"ping through the tunnel").unwrap();
    let mut echoed = [0u8; 23];
    tcp.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"ping through the tunnel");
    assert_eq!((proxy.tunnels(), proxy.auth_failures()), (1, 1));
    assert_eq!(proxy.targets(), [echo.to_string()]);
}

#[test]
fn proxy_forwards_absolute_form_requests_with_bodies() {
    let proxy = ProxyServer::start();
    let imds = ImdsServer::start(Arc::new(StaticIssuer::new("ASIAPROXY", "secret", "tok", hour())));
    let sts = StsServer::start(Arc::new(StaticIssuer::new("ASIAPROXY", "secret", "tok", hour())));
    let p = proxy.addr();
    let token = request(p, "PUT", &format!("{}/latest/api/token", imds.url()), &[(TTL, "60")], "");
    assert_eq!((token.status, token.header(TTL)), (200, Some("60")));
    let role = request(p, "GET", &format!("{}{CREDS}", imds.url()), &[(TOKEN, &token.body)], "");
    assert_eq!(role.body, "gantry-test-role");
    sts.accept_web_identity_token("opaque-token");
    let reply =
        request(p, "POST", &format!("{}/", sts.url()), &[("Content-Type", FORM)], &web_identity_body("opaque-token"));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!((proxy.forwarded(), proxy.tunnels(), imds.token_requests()), (3, 0, 1));
    assert_eq!(proxy.targets()[0], imds.addr().to_string());
    assert_eq!(request(p, "GET", "/not-absolute", &[], "").status, 400);
}
