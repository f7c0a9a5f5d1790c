//! When a part is slow enough to deserve a duplicate request, and the race between the two.
//!
//! Part durations (normalised to a full part) of recent completions give a running p95; a part
//! that has run longer than `latency_factor × p95` gets one hedge request for its remaining
//! bytes. Until enough parts have completed there is no reference, so nothing is hedged.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::config::Hedging;
use crate::error::Error;
use crate::object_client::ResponseBody;
use crate::s3::get_object::RangeHead;
use crate::scheduler::ConnectionSlot;

/// Completions kept for the percentile.
const WINDOW: usize = 128;
/// Completions needed before hedging starts.
const MIN_SAMPLES: usize = 20;

/// Recent part durations, shared by every download of a client.
#[derive(Debug, Default)]
pub(crate) struct PartLatency {
    recent: Mutex<VecDeque<Duration>>,
}

impl PartLatency {
    /// Records a part of `len` bytes that took `took`, scaled to a part of `part_size` bytes.
    pub(crate) fn record(&self, took: Duration, len: u64, part_size: u64) {
        if len == 0 {
            return;
        }
        let scaled = took.mul_f64(part_size as f64 / len as f64);
        let mut recent = self.recent.lock().expect("latency lock");
        if recent.len() == WINDOW {
            recent.pop_front();
        }
        recent.push_back(scaled);
    }

    /// How long a part of `len` bytes may run before it is hedged, or `None` while there is
    /// no reference yet or hedging is off.
    pub(crate) fn hedge_after(&self, config: &Hedging, len: u64, part_size: u64) -> Option<Duration> {
        if !config.enabled {
            return None;
        }
        let mut sorted: Vec<Duration> = self.recent.lock().expect("latency lock").iter().copied().collect();
        if sorted.len() < MIN_SAMPLES {
            return None;
        }
        sorted.sort_unstable();
        let p95 = sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)];
        let scaled = p95.mul_f64(config.latency_factor * len as f64 / part_size as f64);
        Some(scaled.max(config.min_delay))
    }
}

/// A response body being read, and the object offset of its next byte.
pub(super) struct Source<B> {
    pub(super) pos: u64,
    pub(super) body: B,
    /// Whether this body answers the hedge request.
    pub(super) hedge: bool,
    /// An unranged first answer runs past the part: bytes beyond the part are ignored.
    pub(super) overruns: bool,
}

/// A hedge request being opened: its answer and the slot it runs on.
pub(super) type Opening<'a, B> =
    Pin<Box<dyn Future<Output = Result<(RangeHead, B, ConnectionSlot), Error>> + Send + 'a>>;

/// Which body a read came from.
pub(super) enum Read {
    Primary(Result<Option<Bytes>, Error>),
    Hedge(Result<Option<Bytes>, Error>),
}

/// One part's bodies: the original request's and, once the part has run too long, a hedge
/// request's for the bytes not yet received. The part reads whichever delivers; what the
/// bytes mean (delivery, checksums, resuming) stays with the part.
pub(super) struct Race<'a, B> {
    pub(super) primary: Source<B>,
    pub(super) hedge: Option<Source<B>>,
    /// When to start the hedge (`None`: not hedging, or already started).
    at: Option<Instant>,
    opening: Option<Opening<'a, B>>,
    slot: Option<ConnectionSlot>,
}

impl<'a, B: ResponseBody> Race<'a, B> {
    /// A race of `primary` alone, hedged at `at` if it is still running then.
    pub(super) fn new(primary: Source<B>, at: Option<Instant>) -> Self {
        Race { primary, hedge: None, at, opening: None, slot: None }
    }

    /// The next read of either body. Meanwhile starts the hedge when its time comes (only if
    /// a connection slot is free at once: a hedge never delays a regular request), with
    /// `open` given the slot, and adopts its answer when `accept`s it.
    pub(super) async fn next(
        &mut self,
        try_slot: impl Fn() -> Option<ConnectionSlot>,
        open: impl Fn(ConnectionSlot) -> Opening<'a, B>,
        accept: impl Fn(&RangeHead) -> bool,
    ) -> Read {
        loop {
            tokio::select! {
                chunk = self.primary.body.chunk() => return Read::Primary(chunk),
                chunk = async { self.hedge.as_mut().expect("guarded").body.chunk().await }, if self.hedge.is_some() => {
                    return Read::Hedge(chunk);
                }
                opened = async { self.opening.as_mut().expect("guarded").await }, if self.opening.is_some() => {
                    self.opening = None;
                    match opened {
                        Ok((head, body, slot)) if accept(&head) => {
                            self.hedge = Some(Source { pos: head.start, body, hedge: true, overruns: false });
                            self.slot = Some(slot);
                        }
                        Ok(_) => tracing::debug!("hedge answer does not fit the part; dropped"),
                        Err(e) => tracing::debug!(error = %e, "hedge request failed"),
                    }
                }
                _ = tokio::time::sleep_until(self.at.unwrap_or_else(Instant::now)), if self.at.is_some() => {
                    self.at = None;
                    if let Some(slot) = try_slot() {
                        self.opening = Some(open(slot));
                    }
                }
            }
        }
    }

    /// The original request failed: the hedge carries on alone. Returns whether there was one.
    pub(super) fn promote(&mut self) -> bool {
        match self.hedge.take() {
            Some(hedge) => {
                self.primary = hedge;
                true
            }
            None => false,
        }
    }

    /// The hedge failed: the original goes on alone.
    pub(super) fn drop_hedge(&mut self) {
        self.hedge = None;
        self.slot = None;
    }

    /// Whether the hedge delivered the part's last byte (`end`).
    pub(super) fn hedge_won(&self, end: u64) -> bool {
        self.primary.hedge || self.hedge.as_ref().is_some_and(|s| s.pos == end)
    }

    /// Ends the race: each body that delivered its last byte (`end`) is read to its end so its
    /// connection goes back to the pool; one still behind is dropped, which closes its
    /// connection. The hedge's slot is freed.
    pub(super) async fn finish(self, end: u64) {
        for source in std::iter::once(self.primary).chain(self.hedge) {
            if source.pos == end && !source.overruns {
                let mut body = source.body;
                let _ = body.chunk().await;
            }
        }
        drop(self.slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_samples_then_follows_p95() {
        let l = PartLatency::default();
        let on = Hedging { enabled: true, latency_factor: 2.0, min_delay: Duration::from_millis(10) };
        for i in 0..19 {
            l.record(Duration::from_millis(100 + i), 8, 8);
        }
        assert_eq!(l.hedge_after(&on, 8, 8), None);
        l.record(Duration::from_millis(1000), 8, 8);
        // p95 of 20 samples is the 19th smallest (index 19): the 1000 ms outlier.
        assert_eq!(l.hedge_after(&on, 8, 8), Some(Duration::from_millis(2000)));
        // A half-size part gets half the budget; a short one never goes below min_delay.
        assert_eq!(l.hedge_after(&on, 4, 8), Some(Duration::from_millis(1000)));
        assert_eq!(
            l.hedge_after(&Hedging { min_delay: Duration::from_secs(5), ..on.clone() }, 4, 8),
            Some(Duration::from_secs(5))
        );
        assert_eq!(l.hedge_after(&Hedging { enabled: false, ..on }, 8, 8), None);
    }
}
