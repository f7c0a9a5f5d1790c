//! A request body made of a few shared byte segments, sent in order without being joined.
//!
//! Most requests are one segment (an XML document, a part slice of caller memory). An
//! aws-chunked upload is three: the chunk header, the caller's bytes and the trailer; keeping
//! them apart means the trailer mode costs no copy of the part.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// Slices handed to hyper at a time: hyper asks for the next one only when its write buffer
/// has drained, so each ask is a sign of upload progress (the slices share the caller's bytes).
const SLICE: usize = 256 << 10;

/// Segments sent back to back; the length is known up front (it is the Content-Length).
#[derive(Debug, Clone)]
pub(crate) struct RequestBody {
    segments: VecDeque<Bytes>,
    remaining: u64,
    progress: Arc<SendProgress>,
}

/// How far hyper has taken a request body, for the upload stall and first-byte timeouts.
#[derive(Debug)]
pub(crate) struct SendProgress {
    origin: Instant,
    /// Nanoseconds after `origin` of the last slice taken.
    last: AtomicU64,
    done: AtomicBool,
}

impl SendProgress {
    /// When the last slice was taken, and whether it was the final one.
    pub(crate) fn last(&self) -> (Instant, bool) {
        let at = self.origin + Duration::from_nanos(self.last.load(Ordering::Acquire));
        (at, self.done.load(Ordering::Acquire))
    }

    /// Starts the clocks now (the connection is ready; time spent connecting is not a stall).
    pub(crate) fn restart(&self) {
        self.mark(false);
    }

    fn mark(&self, done: bool) {
        let nanos = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last.store(nanos, Ordering::Release);
        if done {
            self.done.store(true, Ordering::Release);
        }
    }
}

impl RequestBody {
    pub(crate) fn new(segments: impl IntoIterator<Item = Bytes>) -> Self {
        let mut sliced = VecDeque::new();
        for b in segments {
            let mut at = 0;
            while at < b.len() {
                let end = (at + SLICE).min(b.len());
                sliced.push_back(b.slice(at..end));
                at = end;
            }
        }
        let remaining = sliced.iter().map(|b| b.len() as u64).sum();
        let progress = Arc::new(SendProgress {
            origin: Instant::now(),
            last: AtomicU64::new(0),
            done: AtomicBool::new(sliced.is_empty()),
        });
        RequestBody { segments: sliced, remaining, progress }
    }

    /// The shared progress record (readable while hyper owns the body).
    pub(crate) fn progress(&self) -> Arc<SendProgress> {
        self.progress.clone()
    }

    /// Total bytes still to send.
    pub(crate) fn len(&self) -> u64 {
        self.remaining
    }
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = self.segments.pop_front();
        if let Some(b) = &next {
            self.remaining -= b.len() as u64;
            self.progress.mark(self.segments.is_empty());
        }
        Poll::Ready(next.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.segments.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn sends_segments_in_order() {
        let body = RequestBody::new([Bytes::from_static(b"ab"), Bytes::new(), Bytes::from_static(b"cde")]);
        assert_eq!(body.len(), 5);
        assert_eq!(http_body::Body::size_hint(&body).exact(), Some(5));
        assert_eq!(body.collect().await.unwrap().to_bytes(), Bytes::from_static(b"abcde"));
    }
}
