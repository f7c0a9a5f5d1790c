//! When a part is slow enough to deserve a duplicate request.
//!
//! Part durations (normalised to a full part) of recent completions give a running p95; a part
//! that has run longer than `latency_factor × p95` gets one hedge request for its remaining
//! bytes. Until enough parts have completed there is no reference, so nothing is hedged.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use crate::config::Hedging;

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
