//! Per-connection bandwidth pacing ([`crate::ServerConfig::pace_bytes_per_sec`]).
//!
//! [`Paced`] wraps an accepted connection (below TLS, so TLS framing counts) and gives each
//! direction its own token bucket of `rate` bytes per second. A read or write may move at most
//! the tokens in its bucket; when the bucket is empty the call sleeps on a tokio timer until a
//! small batch has accumulated. Reads that are held back leave data in the kernel's receive
//! buffer, so TCP flow control slows the sender: the client sees a slow server in both
//! directions.
//!
//! Bursts are at most 64 KiB (or one second's worth when the rate is lower), except that the
//! bucket always holds at least 4 ms of traffic: tokio's timer ticks in milliseconds, so a
//! 64 KiB bucket could not pace faster than about 30 MiB/s.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The burst size for rates up to 16 MiB/s.
const MAX_SMALL_BURST: u64 = 64 << 10;
/// How much a drained bucket waits to accumulate before moving data again (fewer, larger
/// wake-ups than one per byte), capped by the burst size.
const REFILL_BATCH: u64 = 16 << 10;

/// An I/O object whose reads and writes are each limited to a rate.
#[derive(Debug)]
pub(crate) struct Paced<S> {
    inner: S,
    read: Bucket,
    write: Bucket,
}

impl<S> Paced<S> {
    /// Wraps `inner`; `bytes_per_sec` must be positive.
    pub(crate) fn new(inner: S, bytes_per_sec: u64) -> Self {
        Paced { inner, read: Bucket::new(bytes_per_sec), write: Bucket::new(bytes_per_sec) }
    }
}

/// A token bucket: `tokens` bytes may move now, refilled at `rate` per second up to `burst`.
#[derive(Debug)]
struct Bucket {
    rate: f64,
    burst: f64,
    batch: f64,
    tokens: f64,
    refilled: Instant,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Bucket {
    fn new(bytes_per_sec: u64) -> Self {
        let rate = bytes_per_sec.max(1);
        let burst = rate.min(MAX_SMALL_BURST).max(rate / 250);
        let batch = REFILL_BATCH.max(rate / 1000).min(burst);
        Bucket {
            rate: rate as f64,
            burst: burst as f64,
            batch: batch as f64,
            tokens: burst as f64,
            refilled: Instant::now(),
            sleep: None,
        }
    }

    /// Ready with how many bytes may move now (at least a batch), or pending until the timer
    /// has let a batch accumulate.
    fn poll_allowance(&mut self, cx: &mut Context<'_>) -> Poll<usize> {
        loop {
            if let Some(sleep) = &mut self.sleep {
                ready!(sleep.as_mut().poll(cx));
                self.sleep = None;
            }
            let now = Instant::now();
            let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
            self.refilled = now;
            // Move data only once a batch has accumulated: handing out the few bytes that
            // trickle in between polls made one tiny write (and syscall) per poll, which
            // burned CPU and paced downloads far below the rate.
            if self.tokens >= self.batch * 0.999 {
                return Poll::Ready((self.tokens as usize).max(1));
            }
            let wait = Duration::from_secs_f64((self.batch - self.tokens) / self.rate);
            self.sleep = Some(Box::pin(tokio::time::sleep_until(now + wait)));
        }
    }

    fn spend(&mut self, n: usize) {
        self.tokens -= n as f64;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Paced<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let this = &mut *self;
        let allowed = ready!(this.read.poll_allowance(cx)).min(buf.remaining());
        // A window of at most `allowed` bytes over `buf`'s unfilled part; zeroing it first keeps
        // this free of `unsafe` and costs little next to the rates being paced.
        let mut window = ReadBuf::new(buf.initialize_unfilled_to(allowed));
        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut window))?;
        let n = window.filled().len();
        buf.advance(n);
        this.read.spend(n);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Paced<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Pin::new(&mut self.inner).poll_write(cx, buf);
        }
        let this = &mut *self;
        let allowed = ready!(this.write.poll_allowance(cx)).min(buf.len());
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &buf[..allowed]))?;
        this.write.spend(n);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant as StdInstant;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    const MIB: usize = 1 << 20;

    /// Moves `len` bytes from `tx` to `rx` and returns how long it took.
    async fn transfer<W, R>(mut tx: W, mut rx: R, len: usize) -> Duration
    where
        W: AsyncWrite + Unpin + Send + 'static,
        R: AsyncRead + Unpin,
    {
        let t = StdInstant::now();
        let writer = tokio::spawn(async move {
            tx.write_all(&vec![7u8; len]).await.unwrap();
            tx.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        rx.read_to_end(&mut got).await.unwrap();
        writer.await.unwrap();
        assert_eq!(got.len(), len);
        assert!(got.iter().all(|&b| b == 7));
        t.elapsed()
    }

    #[tokio::test]
    async fn paced_write_takes_its_time() {
        // 1 MiB at 4 MiB/s: 250 ms, less the first 64 KiB burst.
        let (a, b) = tokio::io::duplex(256 << 10);
        let took = transfer(Paced::new(a, 4 * MIB as u64), b, MIB).await;
        assert!(took >= Duration::from_millis(200), "took {took:?}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

    #[tokio::test]
    async fn paced_read_takes_its_time() {
        let (a, b) = tokio::io::duplex(256 << 10);
        let took = transfer(a, Paced::new(b, 4 * MIB as u64), MIB).await;
        assert!(took >= Duration::from_millis(200), "took {took:?}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn high_rates_are_not_capped_by_the_timer() {
        // Virtual time, so only the pacing counts. 16 MiB at 1 GiB/s is ~16 ms; with a 64 KiB
        // bucket refilled once per 1 ms tick it would be at least 256 ms.
        let (a, b) = tokio::io::duplex(1 << 20);
        let t = Instant::now();
        transfer(Paced::new(a, 1 << 30), b, 16 * MIB).await;
        let took = t.elapsed();
        assert!(took < Duration::from_millis(40), "took {took:?}");
    }

    #[test]
    fn burst_sizes() {
        assert_eq!(Bucket::new(1000).burst, 1000.0);
        assert_eq!(Bucket::new(4 << 20).burst, (64 << 10) as f64);
        assert_eq!(Bucket::new(1 << 30).burst, ((1u64 << 30) / 250) as f64);
    }
}
