//! A request body made of a few shared byte segments, sent in order without being joined.
//!
//! Most requests are one segment (an XML document, a part slice of caller memory). An
//! aws-chunked upload is three: the chunk header, the caller's bytes and the trailer; keeping
//! them apart means the trailer mode costs no copy of the part.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// Segments sent back to back; the length is known up front (it is the Content-Length).
#[derive(Debug, Default, Clone)]
pub(crate) struct RequestBody {
    segments: VecDeque<Bytes>,
    remaining: u64,
}

impl RequestBody {
    pub(crate) fn new(segments: impl IntoIterator<Item = Bytes>) -> Self {
        let segments: VecDeque<Bytes> = segments.into_iter().filter(|b| !b.is_empty()).collect();
        let remaining = segments.iter().map(|b| b.len() as u64).sum();
        RequestBody { segments, remaining }
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
        Poll::Ready(self.segments.pop_front().map(|b| {
            self.remaining -= b.len() as u64;
            Ok(Frame::data(b))
        }))
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
