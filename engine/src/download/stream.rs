//! The in-order download stream handed to callers by [`crate::Client::get_stream`].

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;

use super::StreamPart;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::task::TaskHandle;
use crate::types::{ObjectInfo, Verification};

/// An object's bytes in order, as they arrive.
///
/// Parts are fetched in parallel, but at most the configured read window runs ahead of the
/// reader: when the reader stops, the network stops too (backpressure), and the memory held
/// stays bounded. Dropping the stream cancels the download.
///
/// Read with [`GetStream::next_chunk`] or as a [`futures::Stream`]; the stream ends after
/// exactly [`ObjectInfo::size`] bytes, or with an error and nothing after it. The end comes
/// only once the bytes have been checked against the object's checksum, whose mismatch is
/// that final error ([`crate::ErrorKind::ChecksumMismatch`]); after the end,
/// [`GetStream::verification`] says how they were checked.
#[derive(Debug)]
pub struct GetStream {
    info: ObjectInfo,
    parts: mpsc::UnboundedReceiver<StreamPart>,
    current: Option<(StreamPart, u64)>,
    driver: TaskHandle<Verification>,
    finished: bool,
    verification: Option<Verification>,
}

impl GetStream {
    pub(crate) fn new(
        info: ObjectInfo,
        parts: mpsc::UnboundedReceiver<StreamPart>,
        driver: TaskHandle<Verification>,
    ) -> Self {
        GetStream { info, parts, current: None, driver, finished: false, verification: None }
    }

    /// Size, ETag and metadata of the object being read.
    pub fn info(&self) -> &ObjectInfo {
        &self.info
    }

    /// How the bytes were verified: `Some` once the stream has ended without an error (the
    /// next chunk was `None`), `None` before.
    pub fn verification(&self) -> Option<Verification> {
        self.verification
    }

    /// The next chunk in order; `None` after the last byte.
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes>> {
        std::future::poll_fn(|cx| self.poll_chunk(cx)).await
    }

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        loop {
            if self.finished {
                return Poll::Ready(None);
            }
            if let Some((part, received)) = &mut self.current {
                match ready!(part.rx.poll_recv(cx)) {
                    Some(Ok(data)) => {
                        *received += data.len() as u64;
                        return Poll::Ready(Some(Ok(data)));
                    }
                    Some(Err(e)) => {
                        self.finished = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                    None if *received == part.len => {
                        // Dropping the part frees its memory and its window slot.
                        self.current = None;
                        continue;
                    }
                    // The part task was stopped: the driver holds the reason.
                    None => return self.poll_driver(cx, true),
                }
            }
            match ready!(self.parts.poll_recv(cx)) {
                Some(part) => self.current = Some((part, 0)),
                None => return self.poll_driver(cx, false),
            }
        }
    }

    fn poll_driver(&mut self, cx: &mut Context<'_>, cut_short: bool) -> Poll<Option<Result<Bytes>>> {
        let result = ready!(Pin::new(&mut self.driver).poll(cx));
        self.finished = true;
        Poll::Ready(match result {
            Err(e) => Some(Err(e)),
            Ok(_) if cut_short => {
                Some(Err(Error::new(ErrorKind::Internal, Operation::GetObject, "a part ended early")))
            }
            Ok(verification) => {
                self.verification = Some(verification);
                None
            }
        })
    }
}

impl futures::Stream for GetStream {
    type Item = Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_chunk(cx)
    }
}
