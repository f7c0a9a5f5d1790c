//! Exponential backoff with full jitter: the n-th retry waits a uniformly random time in
//! `[0, min(max, base * 2^n))`. Full jitter spreads a burst of failed parts so they do not
//! return to a struggling endpoint in lockstep (the AWS architecture blog's recommendation).

use std::time::Duration;

use rand::Rng;

/// Upper bound of the wait before retry number `retry` (0-based).
pub(crate) fn ceiling(base: Duration, max: Duration, retry: u32) -> Duration {
    let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(max)
}

/// A random wait in `[0, ceiling)` drawn from `rng`.
#[cfg(test)]
pub(crate) fn full_jitter(rng: &mut impl Rng, base: Duration, max: Duration, retry: u32) -> Duration {
    below(rng, ceiling(base, max, retry))
}

/// A random wait in `[0, top)` drawn from `rng` (zero when `top` is).
pub(crate) fn below(rng: &mut impl Rng, top: Duration) -> Duration {
    if top.is_zero() {
        return top;
    }
    Duration::from_nanos(rng.random_range(0..top.as_nanos().min(u64::MAX as u128) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn ceiling_doubles_then_caps() {
        let b = Duration::from_millis(100);
        let m = Duration::from_secs(1);
        assert_eq!(ceiling(b, m, 0), b);
        assert_eq!(ceiling(b, m, 1), Duration::from_millis(200));
        assert_eq!(ceiling(b, m, 3), Duration::from_millis(800));
        assert_eq!(ceiling(b, m, 4), m);
        assert_eq!(ceiling(b, m, 60), m);
    }

    #[test]
    fn jitter_stays_below_ceiling() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let b = Duration::from_millis(100);
        let m = Duration::from_secs(1);
        for retry in 0..10 {
            for _ in 0..100 {
                assert!(full_jitter(&mut rng, b, m, retry) < ceiling(b, m, retry));
            }
        }
    }
}
