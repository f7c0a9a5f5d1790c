//! Per-connection I/O wrapper that lets a response body end the connection with a FIN or an
//! RST exactly after the bytes it already produced have left hyper's write buffer.
//!
//! Every accepted socket gets `SO_LINGER = 0`, so any abortive close (hyper dropping the
//! connection after a service or body error, or the server shutting down) is an RST. Graceful
//! closes that hyper initiates itself (`Connection: close`, peer EOF) go through
//! `poll_shutdown`, where linger is restored first so the response is not cut off. A
//! [`EndAction::Fin`] request shuts down the write half (FIN) and restores linger, so the
//! following drop is a normal close.

use std::io;
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use socket2::SockRef;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// How a body asks its connection to end after the flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EndAction {
    /// Abortive close: TCP RST (the socket has `SO_LINGER = 0`).
    Reset,
    /// Half-close with a FIN, then a normal close.
    Fin,
}

/// Shared between a connection's I/O wrapper and the responses served on it.
#[derive(Default)]
pub(crate) struct ConnCtl {
    pending: Mutex<Option<(EndAction, oneshot::Sender<()>)>>,
}

impl ConnCtl {
    /// Asks the connection to end with `action` once hyper's write buffer is drained; the
    /// receiver resolves when that happened (or the connection is gone).
    pub(crate) fn request_end(&self, action: EndAction) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        *self.pending.lock().unwrap_or_else(|e| e.into_inner()) = Some((action, tx));
        rx
    }

    fn take(&self) -> Option<(EndAction, oneshot::Sender<()>)> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The TCP stream handed to hyper.
pub(crate) struct FaultIo {
    inner: TcpStream,
    ctl: Arc<ConnCtl>,
    /// After a FIN the write half is gone; later writes are swallowed.
    write_closed: bool,
}

impl FaultIo {
    pub(crate) fn new(inner: TcpStream, ctl: Arc<ConnCtl>) -> FaultIo {
        FaultIo { inner, ctl, write_closed: false }
    }

    /// Runs a pending end action; called from `poll_flush`, which hyper reaches only after its
    /// own buffer was fully written to the socket.
    fn run_pending(&mut self) {
        if let Some((action, done)) = self.ctl.take() {
            if action == EndAction::Fin && !self.write_closed {
                let sock = SockRef::from(&self.inner);
                let _ = sock.set_linger(None);
                let _ = sock.shutdown(Shutdown::Write);
                self.write_closed = true;
            }
            let _ = done.send(());
        }
    }
}

impl AsyncRead for FaultIo {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.write_closed {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.write_closed {
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.write_closed {
            ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        }
        self.run_pending();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.write_closed {
            return Poll::Ready(Ok(()));
        }
        // A graceful close hyper chose: keep the response intact (no RST on drop).
        let _ = SockRef::from(&self.inner).set_linger(None);
        self.write_closed = true;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
