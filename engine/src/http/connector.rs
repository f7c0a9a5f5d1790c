//! Opens one HTTP/1.1 connection: DNS, a socket2 socket with our options, TCP connect,
//! optional TLS (rustls), and hyper's client handshake.
//!
//! Sockets are made here rather than by a generic connector so that the options that matter
//! for bulk transfer (`TCP_NODELAY`, buffer sizes) and, later, NIC binding (`SO_BINDTODEVICE`,
//! source address) stay in one place under our control.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::RequestBody;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpStream;

use super::lanes::LocalBind;
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
    tls_timeout: Duration,
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
    pub(crate) send: http1::SendRequest<RequestBody>,
    pub(crate) driver: tokio::task::AbortHandle,
}

/// hyper's read buffer ceiling. Larger reads mean fewer syscalls and wake-ups per GiB.
const MAX_READ_BUF: usize = 1024 * 1024;

impl Connector {
    pub(crate) fn new(
        connect_timeout: Duration,
        tls_timeout: Duration,
        recv_buffer: Option<usize>,
        send_buffer: Option<usize>,
    ) -> Self {
        let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Connector { connect_timeout, tls_timeout, recv_buffer, send_buffer, tls: Arc::new(tls) }
    }

    /// Connects to the first of `addrs` that answers, from the local end `bind`, reporting
    /// each attempt's outcome to `record`. A local binding that cannot work at all (no such
    /// interface, missing privilege, address not on this host) fails at once with
    /// [`ErrorKind::InvalidInput`] and a message saying what to fix.
    pub(crate) async fn connect(
        &self,
        authority: &Authority,
        bind: &LocalBind,
        addrs: &[SocketAddr],
        op: Operation,
        mut record: impl FnMut(SocketAddr, bool),
    ) -> Result<Sender, Error> {
        let mut last = None;
        for &addr in addrs {
            let socket =
                new_socket(addr, bind, self.recv_buffer, self.send_buffer).map_err(|e| bind_error(bind, e, op))?;
            match self.connect_one(socket, addr, bind, authority, op).await {
                Ok(sender) => {
                    record(addr, true);
                    return Ok(sender);
                }
                Err(e) => {
                    record(addr, false);
                    last = Some(e);
                }
            }
        }
        Err(last.unwrap_or_else(|| {
            Error::new(ErrorKind::Connect, op, format!("{} resolved to no address", authority.host))
        }))
    }

    /// TCP connect, then (for https) the TLS handshake, each under its own timeout.
    async fn connect_one(
        &self,
        socket: Socket,
        addr: SocketAddr,
        bind: &LocalBind,
        authority: &Authority,
        op: Operation,
    ) -> Result<Sender, Error> {
        let socket = tokio::net::TcpSocket::from_std_stream(std::net::TcpStream::from(socket));
        let stream = match tokio::time::timeout(self.connect_timeout, socket.connect(addr)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                return Err(
                    Error::new(ErrorKind::Connect, op, format!("cannot connect to {addr} from {bind}")).with_source(e)
                )
            }
            Err(_) => {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    op,
                    format!("connect to {addr} from {bind} timed out after {:?}", self.connect_timeout),
                ))
            }
        };
        let result = if authority.tls {
            match tokio::time::timeout(self.tls_timeout, self.handshake_tls(stream, authority)).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(Error::new(
                        ErrorKind::Timeout,
                        op,
                        format!("TLS handshake with {addr} timed out after {:?}", self.tls_timeout),
                    ))
                }
            }
        } else {
            handshake(TokioIo::new(stream)).await
        };
        result.map_err(|e| {
            Error::new(ErrorKind::Connect, op, format!("connection set-up with {addr} failed")).with_source(e)
        })
    }

    async fn handshake_tls(&self, stream: TcpStream, authority: &Authority) -> std::io::Result<Sender> {
        let name = rustls::pki_types::ServerName::try_from(authority.host.clone())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, stream).await?;
        handshake(TokioIo::new(tls)).await
    }
}

/// A non-blocking TCP socket with our options, bound to the lane's local end.
fn new_socket(addr: SocketAddr, bind: &LocalBind, recv: Option<usize>, send: Option<usize>) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_tcp_nodelay(true)?;
    socket.set_nonblocking(true)?;
    if let Some(n) = recv {
        socket.set_recv_buffer_size(n)?;
    }
    if let Some(n) = send {
        socket.set_send_buffer_size(n)?;
    }
    match bind {
        LocalBind::Default => {}
        LocalBind::Device(name) => socket.bind_device(Some(name.as_bytes()))?,
        LocalBind::Address(ip) => socket.bind(&SocketAddr::new(*ip, 0).into())?,
    }
    Ok(socket)
}

/// Explains a failed local binding: these are set-up mistakes, not network weather.
pub(crate) fn bind_error(bind: &LocalBind, e: std::io::Error, op: Operation) -> Error {
    let hint = match (bind, e.raw_os_error()) {
        (LocalBind::Device(d), Some(1)) => {
            format!("binding to network interface {d:?} (SO_BINDTODEVICE) needs CAP_NET_RAW or root on this kernel")
        }
        (LocalBind::Device(d), Some(19)) => format!("network interface {d:?} does not exist"),
        (LocalBind::Address(a), Some(99)) => format!("source address {a} is not an address of this host"),
        _ => format!("cannot bind a socket to {bind}"),
    };
    Error::new(ErrorKind::InvalidInput, op, hint).with_source(e)
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
