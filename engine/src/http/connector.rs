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
use super::proxy::{Proxy, ProxyRules};
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
    proxy: Arc<ProxyRules>,
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

/// The socket read buffer under TLS (see `handshake_tls`).
const TLS_READ_BUF: usize = 256 * 1024;

/// hyper's read buffer ceiling. Larger reads mean fewer syscalls and wake-ups per GiB.
const MAX_READ_BUF: usize = 1024 * 1024;

impl Connector {
    pub(crate) fn new(
        connect_timeout: Duration,
        tls_timeout: Duration,
        recv_buffer: Option<usize>,
        send_buffer: Option<usize>,
    ) -> Self {
        let tls = super::trust::client_config(&Default::default()).expect("the default trust needs no files");
        Connector { connect_timeout, tls_timeout, recv_buffer, send_buffer, tls, proxy: Default::default() }
    }

    /// The same connector sending connections through `rules`' proxies.
    pub(crate) fn with_proxy(mut self, rules: ProxyRules) -> Self {
        self.proxy = Arc::new(rules);
        self
    }

    /// Where a connection for `authority` is dialled: the proxy, or the target itself.
    pub(crate) fn dial_target<'a>(&'a self, authority: &'a Authority) -> (&'a str, u16) {
        match self.proxy.for_target(authority) {
            Some(p) => (&p.host, p.port),
            None => (&authority.host, authority.port),
        }
    }

    /// The proxy that plain-http requests to `authority` are forwarded through (absolute-form
    /// requests on a connection to the proxy), if any.
    pub(crate) fn forward_proxy(&self, authority: &Authority) -> Option<&Proxy> {
        self.proxy.for_target(authority).filter(|_| !authority.tls)
    }

    /// The same connector trusting what `tls` trusts.
    pub(crate) fn with_tls(mut self, tls: Arc<rustls::ClientConfig>) -> Self {
        self.tls = tls;
        self
    }

    /// The request target to send for `url` to `authority`: origin-form (`/path?query`) on a
    /// direct connection.
    pub(crate) fn request_target(&self, authority: &Authority, url: &str, origin_form: &str) -> String {
        match self.forward_proxy(authority) {
            Some(_) => url.to_string(),
            None => origin_form.to_string(),
        }
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
        let stream = match self.proxy.for_target(authority) {
            Some(proxy) if authority.tls => {
                match tokio::time::timeout(self.connect_timeout, tunnel(stream, authority, proxy)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return Err(e.with_operation(op)),
                    Err(_) => {
                        return Err(Error::new(
                            ErrorKind::Timeout,
                            op,
                            format!("proxy {addr} did not open a tunnel within {:?}", self.connect_timeout),
                        ))
                    }
                }
            }
            _ => stream,
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
        // rustls asks the socket for one TLS record (16 KiB) at a time: a read buffer in
        // front of it turns ~66,000 recvfrom calls per GiB into ~4,000.
        let stream = tokio::io::BufReader::with_capacity(TLS_READ_BUF, stream);
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, stream).await?;
        handshake(TokioIo::new(tls)).await
    }
}

/// Opens a `CONNECT` tunnel to `authority` through the proxy `stream` is connected to.
async fn tunnel(mut stream: TcpStream, authority: &Authority, proxy: &Proxy) -> Result<TcpStream, Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let op = Operation::Config;
    let target = if authority.host.contains(':') {
        format!("[{}]:{}", authority.host, authority.port)
    } else {
        format!("{}:{}", authority.host, authority.port)
    };
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = &proxy.authorization {
        head.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    head.push_str("\r\n");
    let io = |e: std::io::Error| {
        Error::new(ErrorKind::Connect, op, format!("proxy {}:{} broke off the CONNECT", proxy.host, proxy.port))
            .with_source(e)
    };
    stream.write_all(head.as_bytes()).await.map_err(io)?;
    // Read the answer's head only: the tunnel's first bytes after it belong to TLS, and the
    // server says nothing before our ClientHello, so reading byte by byte over-reads nothing.
    let mut answer = Vec::with_capacity(256);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() > 16 << 10 {
            return Err(Error::new(ErrorKind::Protocol, op, "the proxy's CONNECT answer head is too long"));
        }
        let b = stream.read_u8().await.map_err(io)?;
        answer.push(b);
    }
    let text = String::from_utf8_lossy(&answer);
    let status_line = text.lines().next().unwrap_or_default().to_string();
    let status: u16 = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    match status {
        200..=299 => Ok(stream),
        407 => Err(Error::new(
            ErrorKind::AccessDenied,
            op,
            format!(
                "proxy {}:{} wants authentication ({status_line}); put user:password in the proxy URL",
                proxy.host, proxy.port
            ),
        )
        .with_http(407, None, None)
        .with_retryable(false)),
        _ => Err(Error::new(
            ErrorKind::Connect,
            op,
            format!("proxy {}:{} refused the tunnel to {target}: {status_line}", proxy.host, proxy.port),
        )
        .with_http(status, None, None)),
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
        LocalBind::Device(name) => bind_device(&socket, name)?,
        LocalBind::Address(ip) => socket.bind(&SocketAddr::new(*ip, 0).into())?,
    }
    Ok(socket)
}

/// `SO_BINDTODEVICE`: the socket leaves through interface `name` whatever the routing table says.
#[cfg(target_os = "linux")]
fn bind_device(socket: &Socket, name: &str) -> std::io::Result<()> {
    socket.bind_device(Some(name.as_bytes()))
}

/// Only Linux binds by interface name. `ClientConfigBuilder::build` refuses interface names
/// elsewhere, so this is not reached; it still fails clearly rather than silently unbound.
#[cfg(not(target_os = "linux"))]
fn bind_device(_socket: &Socket, _name: &str) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, crate::config::NIC_BY_NAME_LINUX_ONLY))
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
