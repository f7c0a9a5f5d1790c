//! Opens one HTTP/1.1 connection: DNS, a socket2 socket with our options, TCP connect,
//! optional TLS (rustls), and hyper's client handshake.
//!
//! Sockets are made here rather than by a generic connector so that the options that matter
//! for bulk transfer (`TCP_NODELAY`, buffer sizes) and, later, NIC binding (`SO_BINDTODEVICE`,
//! source address) stay in one place under our control.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpStream;

use crate::error::{Error, ErrorKind, Operation};

/// Where a connection goes: scheme, host and port (the pool key without the local side).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Authority {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// Socket and TLS settings shared by every connection of a client.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) connect_timeout: Duration,
    pub(crate) recv_buffer: Option<usize>,
    pub(crate) send_buffer: Option<usize>,
    tls: Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector").field("connect_timeout", &self.connect_timeout).finish()
    }
}

/// A hyper request sender with the body type every engine request uses, plus the handle of
/// the task that drives its socket: aborting that task closes the socket at once, which is
/// how a cancelled request stops sending (hyper would otherwise finish writing a body whose
/// response nobody awaits, and an aborted upload's part could still land on the server).
#[derive(Debug)]
pub(crate) struct Sender {
    pub(crate) send: http1::SendRequest<Full<Bytes>>,
    pub(crate) driver: tokio::task::AbortHandle,
}

/// hyper's read buffer ceiling. Larger reads mean fewer syscalls and wake-ups per GiB.
const MAX_READ_BUF: usize = 1024 * 1024;

impl Connector {
    pub(crate) fn new(connect_timeout: Duration, recv_buffer: Option<usize>, send_buffer: Option<usize>) -> Self {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Connector { connect_timeout, recv_buffer, send_buffer, tls: Arc::new(tls) }
    }

    /// Resolves `authority` and connects to the first address that answers.
    pub(crate) async fn connect(&self, authority: &Authority, op: Operation) -> Result<Sender, Error> {
        let connect_err = |msg: String| Error::new(ErrorKind::Connect, op, msg);
        let addrs: Vec<SocketAddr> = tokio::time::timeout(
            self.connect_timeout,
            tokio::net::lookup_host((authority.host.as_str(), authority.port)),
        )
        .await
        .map_err(|_| Error::new(ErrorKind::Timeout, op, format!("DNS lookup of {} timed out", authority.host)))?
        .map_err(|e| connect_err(format!("cannot resolve {}", authority.host)).with_source(e))?
        .collect();
        let mut last = None;
        for addr in addrs {
            match tokio::time::timeout(self.connect_timeout, self.connect_addr(addr, authority)).await {
                Ok(Ok(sender)) => return Ok(sender),
                Ok(Err(e)) => last = Some(connect_err(format!("cannot connect to {addr}")).with_source(e)),
                Err(_) => {
                    last = Some(Error::new(
                        ErrorKind::Timeout,
                        op,
                        format!("connect to {addr} timed out after {:?}", self.connect_timeout),
                    ))
                }
            }
        }
        Err(last.unwrap_or_else(|| connect_err(format!("{} resolved to no address", authority.host))))
    }

    async fn connect_addr(&self, addr: SocketAddr, authority: &Authority) -> std::io::Result<Sender> {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_tcp_nodelay(true)?;
        socket.set_nonblocking(true)?;
        if let Some(n) = self.recv_buffer {
            socket.set_recv_buffer_size(n)?;
        }
        if let Some(n) = self.send_buffer {
            socket.set_send_buffer_size(n)?;
        }
        let socket = tokio::net::TcpSocket::from_std_stream(std::net::TcpStream::from(socket));
        let stream = socket.connect(addr).await?;
        if authority.tls {
            self.handshake_tls(stream, authority).await
        } else {
            handshake(TokioIo::new(stream)).await
        }
    }

    async fn handshake_tls(&self, stream: TcpStream, authority: &Authority) -> std::io::Result<Sender> {
        let name = rustls::pki_types::ServerName::try_from(authority.host.clone())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, stream).await?;
        handshake(TokioIo::new(tls)).await
    }
}

async fn handshake<T>(io: T) -> std::io::Result<Sender>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) =
        http1::Builder::new().max_buf_size(MAX_READ_BUF).handshake(io).await.map_err(std::io::Error::other)?;
    // The connection future drives the socket; it ends when the sender is dropped, the peer
    // closes, or the pool aborts it. Errors surface through the sender.
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    })
    .abort_handle();
    Ok(Sender { send: sender, driver })
}
