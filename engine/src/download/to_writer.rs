//! Copies an in-order download into a blocking writer (a pipe, a device such as `/dev/null`,
//! standard output, a socket) on a thread of its own.
//!
//! Why batches: the stream yields one chunk per socket read (tens of KiB). Handing each chunk
//! to the writer thread separately woke that thread for almost every chunk, over 100,000
//! thread wake-ups per GiB, which cost more CPU than the writes. Chunks that arrive close
//! together now travel as one batch (up to [`BATCH_BYTES`], or what arrived within
//! [`BATCH_WAIT`] of the batch's first chunk), written with one vectored write.

use std::io::{IoSlice, Write};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::stream::GetStream;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::types::Verification;

/// A batch is handed over once it holds this many bytes.
const BATCH_BYTES: usize = 1 << 20;
/// ... or once its first chunk has waited this long: a slow download still reaches a pipe's
/// reader promptly.
const BATCH_WAIT: Duration = Duration::from_millis(5);
/// Batches queued for the writer: a writer slower than the network holds the download back
/// (through the stream's read window) instead of filling memory.
const QUEUED_BATCHES: usize = 2;

/// Streams every byte of `stream` into the writer that `open` returns, in order. `open` runs
/// on the writer's thread, since opening a FIFO for writing waits for its reader. Must run on
/// a tokio runtime (the client's workers).
///
/// A write failure stops the download and is the error reported (not the cancellation it
/// caused); otherwise a download failure is reported. Returns how the bytes were verified.
pub(crate) async fn stream_into<W, O>(mut stream: GetStream, open: O) -> Result<Verification>
where
    O: FnOnce() -> Result<W> + Send + 'static,
    W: Write + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Vec<Bytes>>(QUEUED_BATCHES);
    let writer = tokio::task::spawn_blocking(move || -> Result<()> {
        let mut out = open()?;
        let mut write_all = || -> std::io::Result<()> {
            while let Some(batch) = rx.blocking_recv() {
                write_batch(&mut out, &batch)?;
            }
            out.flush()
        };
        write_all().map_err(|e| Error::local_io("cannot write the downloaded bytes", e))
    });
    let streamed = feed(&mut stream, &tx).await;
    drop(tx);
    let verification = stream.verification();
    drop(stream);
    join_writer(writer).await?;
    streamed?;
    // The feed stops early only when the writer has gone, whose error came first.
    verification.ok_or_else(|| Error::new(ErrorKind::Internal, Operation::GetObject, "the stream ended early"))
}

/// Waits for a download's writer thread. Its error comes first: a write failure stops the
/// download, and the caller reports it rather than the cancellation it caused.
pub(crate) async fn join_writer(writer: tokio::task::JoinHandle<Result<()>>) -> Result<()> {
    writer.await.map_err(|_| Error::new(ErrorKind::Internal, Operation::LocalIo, "file writer panicked"))?
}

/// Moves the stream's chunks into the writer's queue in batches; stops early (with `Ok`) when
/// the writer has gone, whose error the caller reports.
async fn feed(stream: &mut GetStream, tx: &mpsc::Sender<Vec<Bytes>>) -> Result<()> {
    while let Some(first) = stream.next_chunk().await {
        let first = first?;
        let mut size = first.len();
        let mut batch = vec![first];
        // One timer per batch, not per chunk; `next_chunk` keeps its progress in the stream,
        // so abandoning it when the timer fires loses nothing.
        let wait = tokio::time::sleep(BATCH_WAIT);
        tokio::pin!(wait);
        while size < BATCH_BYTES {
            let next = tokio::select! {
                biased;
                next = stream.next_chunk() => next,
                _ = &mut wait => break,
            };
            let Some(chunk) = next else { break };
            let chunk = chunk?;
            size += chunk.len();
            batch.push(chunk);
        }
        if tx.send(batch).await.is_err() {
            break;
        }
    }
    Ok(())
}

/// Writes every chunk of `batch` with as few system calls as the writer allows.
fn write_batch(out: &mut impl Write, batch: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = batch.iter().filter(|c| !c.is_empty()).map(|c| IoSlice::new(c)).collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match out.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `max` bytes per call, as a pipe may.
    struct Trickle {
        out: Vec<u8>,
        max: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.max);
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> std::io::Result<usize> {
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.max - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
                if n == self.max {
                    break;
                }
            }
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn short_vectored_writes_keep_every_byte_in_order() {
        let batch: Vec<Bytes> = (0..50u8).map(|i| Bytes::from(vec![i; (i as usize * 37) % 300])).collect();
        let expected: Vec<u8> = batch.iter().flat_map(|c| c.iter().copied()).collect();
        for max in [1, 7, 256, 1 << 20] {
            let mut w = Trickle { out: Vec::new(), max };
            write_batch(&mut w, &batch).unwrap();
            assert_eq!(w.out, expected, "max {max}");
        }
    }

    #[test]
    fn a_writer_that_takes_nothing_is_an_error_not_a_hang() {
        let mut w = Trickle { out: Vec::new(), max: 0 };
        let err = write_batch(&mut w, &[Bytes::from_static(b"abc")]).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::WriteZero);
    }
}
