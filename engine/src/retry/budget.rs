//! The client-wide retry token bucket: every retry spends tokens, every success earns some
//! back. While an endpoint fails only now and then, the bucket stays full and each request
//! retries freely; when most requests fail, the bucket drains and requests fail fast instead
//! of multiplying the load on a struggling endpoint by `max_attempts`.

use std::sync::atomic::{AtomicU32, Ordering};

/// Tokens one retry costs.
pub(crate) const RETRY_COST: u32 = 5;
/// Tokens a retry after a timeout costs (timeouts are the expensive failures to repeat).
pub(crate) const TIMEOUT_RETRY_COST: u32 = 10;
/// Tokens a success on the first attempt earns.
pub(crate) const SUCCESS_REWARD: u32 = 1;

/// A lock-free token bucket; capacity 0 means unlimited.
#[derive(Debug)]
pub(crate) struct RetryBudget {
    capacity: u32,
    tokens: AtomicU32,
}

impl RetryBudget {
    pub(crate) fn new(capacity: u32) -> Self {
        RetryBudget { capacity, tokens: AtomicU32::new(capacity) }
    }

    /// Takes `cost` tokens if the bucket holds them.
    pub(crate) fn try_take(&self, cost: u32) -> bool {
        if self.capacity == 0 {
            return true;
        }
        self.tokens.fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| t.checked_sub(cost)).is_ok()
    }

    /// Returns `n` tokens, never above capacity.
    pub(crate) fn give(&self, n: u32) {
        if self.capacity == 0 {
            return;
        }
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(t.saturating_add(n).min(self.capacity)));
    }

    #[cfg(test)]
    pub(crate) fn available(&self) -> u32 {
        self.tokens.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drains_and_refills_within_capacity() {
        let b = RetryBudget::new(12);
        assert!(b.try_take(RETRY_COST));
        assert!(b.try_take(RETRY_COST));
        assert!(!b.try_take(RETRY_COST), "2 tokens left, a retry costs 5");
        assert_eq!(b.available(), 2);
        b.give(100);
        assert_eq!(b.available(), 12);
        let unlimited = RetryBudget::new(0);
        assert!((0..1000).all(|_| unlimited.try_take(TIMEOUT_RETRY_COST)));
    }
}
