//! A raw HTTP/1.1 client over tokio `TcpStream`, so tests see exactly how the server ends a
//! response (complete, FIN, RST) and when each byte arrives.
#![allow(dead_code)]

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How the response stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Content-Length bytes arrived (or a body-less answer).
    Complete,
    /// The server closed cleanly (FIN) early.
    Eof,
    /// A read or write failed (e.g. connection reset).
    Error(io::ErrorKind),
}

/// Everything observed for one exchange.
#[derive(Debug)]
pub struct Outcome {
    pub status: Option<u16>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub end: End,
    pub head_at: Option<Duration>,
    pub first_body_at: Option<Duration>,
    pub done_at: Duration,
}

impl Outcome {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn content_length(&self) -> Option<usize> {
        self.header("content-length").and_then(|v| v.parse().ok())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Unwraps a normally completed answer.
    pub fn ok(self) -> Outcome {
        assert_eq!(self.end, End::Complete, "exchange did not complete: {:?} {:?}", self.status, self.text());
        self
    }
}

/// A keep-alive client connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    addr: SocketAddr,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        Conn { stream, buf: Vec::new(), addr }
    }

    /// Sends one request (Content-Length framing) and reads the answer.
    pub async fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Outcome {
        let start = Instant::now();
        let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            && (!body.is_empty() || method == "PUT" || method == "POST")
        {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        for (n, v) in headers {
            req.push_str(&format!("{n}: {v}\r\n"));
        }
        req.push_str("Authorization: AWS4-HMAC-SHA256 Credential=test\r\n\r\n");
        let mut wire = req.into_bytes();
        wire.extend_from_slice(body);
        let mut out = Outcome {
            status: None,
            headers: Vec::new(),
            body: Vec::new(),
            end: End::Complete,
            head_at: None,
            first_body_at: None,
            done_at: Duration::ZERO,
        };
        // Write concurrently with reading so early answers and resets are observed.
        let (mut rd, mut wr) = self.stream.split();
        let mut write_err: Option<io::ErrorKind> = None;
        let write = async {
            if let Err(e) = wr.write_all(&wire).await {
                // Keep reading: an early answer tells more than the write error. The kernel
                // reports a reset only once, so remember it for the outcome.
                write_err = Some(e.kind());
            }
        };
        let buf = &mut self.buf;
        let read = async {
            let mut chunk = vec![0u8; 256 * 1024];
            let mut body_len: Option<usize> = None;
            loop {
                if out.status.is_none() {
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..pos]).into_owned();
                        buf.drain(..pos + 4);
                        let mut lines = head.split("\r\n");
                        let status_line = lines.next().unwrap_or("");
                        let status: u16 = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                        if status == 100 {
                            continue;
                        }
                        out.status = Some(status);
                        out.head_at = Some(start.elapsed());
                        for l in lines {
                            if let Some((n, v)) = l.split_once(':') {
                                out.headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
                            }
                        }
                        let no_body = method == "HEAD" || status == 204 || status == 304;
                        body_len = Some(if no_body { 0 } else { out.content_length().unwrap_or(0) });
                    }
                }
                if let Some(len) = body_len {
                    if !buf.is_empty() && out.first_body_at.is_none() && len > 0 {
                        out.first_body_at = Some(start.elapsed());
                    }
                    let take = buf.len().min(len - out.body.len());
                    out.body.extend(buf.drain(..take));
                    if out.body.len() == len {
                        out.end = End::Complete;
                        return;
                    }
                }
                match rd.read(&mut chunk).await {
                    Ok(0) => {
                        out.end = End::Eof;
                        return;
                    }
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) => {
                        out.end = End::Error(e.kind());
                        return;
                    }
                }
            }
        };
        tokio::select! {
            _ = read => {}
            _ = async { write.await; std::future::pending::<()>().await } => {}
        }
        if let (End::Eof, Some(kind)) = (&out.end, write_err) {
            out.end = End::Error(kind);
        }
        out.done_at = start.elapsed();
        out
    }
}

/// One request on a fresh connection.
pub async fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Outcome {
    Conn::open(addr).await.request(method, path, headers, body).await
}

/// Deterministic pseudo-random test data.
pub fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Extracts the text of the first `<name>` element.
pub fn xml_field(doc: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = doc.find(&open)? + open.len();
    let end = doc[start..].find(&format!("</{name}>"))? + start;
    Some(doc[start..end].to_string())
}

/// All texts of `<name>` elements.
pub fn xml_fields(doc: &str, name: &str) -> Vec<String> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut out = Vec::new();
    let mut rest = doc;
    while let Some(s) = rest.find(&open) {
        let after = &rest[s + open.len()..];
        let Some(e) = after.find(&close) else { break };
        out.push(after[..e].to_string());
        rest = &after[e + close.len()..];
    }
    out
}
