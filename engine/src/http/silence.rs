//! Bounded waiting on an endpoint that has never answered.
//!
//! An endpoint that accepts connections and never answers (a wrong port, a firewall that
//! accepts and drops, a hung proxy, a service that is not S3) would otherwise cost every
//! request its full timeouts times its attempts: 5 × 30 s per request with the defaults. Until
//! the endpoint has answered this client once, waits for it are therefore budgeted:
//!
//! - every attempt's *silent* waits (connecting, the TLS handshake, the request body not
//!   being taken, the response head not arriving) are capped, a quarter of the bound for
//!   the first two attempts (a lost first request is retried soon), then half of it or what
//!   is left of it;
//! - the time covered by silent waits is summed client-wide (overlapping waits of parallel
//!   requests count once), and the attempt that brings the sum to the bound fails with a
//!   final [`ErrorKind::Timeout`] naming the endpoint: "no response from <endpoint> in N s
//!   over K attempts". Later attempts still go out, one quarter of the bound each, so a
//!   long-lived client notices when the endpoint comes back.
//!
//! The first answer of any kind (a response head, an error status included) turns all of
//! this off for good: the state is one flag per client, not per connection, because an
//! endpoint that has answered once is real, and a later silent stretch is a transient
//! (overload, a stuck server thread, a network blip) that deserves the regular timeouts
//! and retries. Per-connection state would not do: a retry runs on a fresh connection,
//! which would know nothing. A client talks to one endpoint (the bucket-region redirects of
//! AWS's own endpoints go to AWS hosts that answer the same way), so one flag is enough.
//! Once answered, the cost on the request path is one relaxed atomic load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Authority;
use crate::error::{Error, ErrorKind, Operation};

/// The silence budget of one client (see the module docs).
#[derive(Debug)]
pub(crate) struct Silence {
    /// Zero disables the budget.
    bound: Duration,
    answered: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Time covered by silent waits so far.
    waited: Duration,
    /// The end of the latest silent wait recorded (waits that overlap it count once).
    covered_until: Option<Instant>,
    /// Attempts that ended in a silent wait.
    attempts: u32,
}

impl Silence {
    pub(crate) fn new(bound: Duration) -> Self {
        Silence { bound, answered: AtomicBool::new(false), state: Mutex::new(State::default()) }
    }

    /// The endpoint answered: the budget no longer applies.
    pub(crate) fn answered(&self) {
        if !self.answered.load(Ordering::Relaxed) {
            self.answered.store(true, Ordering::Relaxed);
        }
    }

    /// The longest silent wait the next attempt may make, or `None` when the budget does not
    /// apply (the endpoint answered, or the bound is off).
    pub(crate) fn attempt_cap(&self) -> Option<Duration> {
        if self.bound.is_zero() || self.answered.load(Ordering::Relaxed) {
            return None;
        }
        let state = self.state.lock().expect("silence lock");
        let quarter = self.bound / 4;
        let step = if state.attempts < 2 { quarter } else { self.bound / 2 };
        let left = self.bound.saturating_sub(state.waited);
        Some(step.min(left).max(quarter).max(Duration::from_millis(1)))
    }

    /// Records a silent wait from `since` to now. Returns the final error when the silent
    /// time has reached the bound.
    pub(crate) fn record(&self, since: Instant, authority: &Authority, op: Operation) -> Option<Error> {
        let now = Instant::now();
        let mut state = self.state.lock().expect("silence lock");
        let from = state.covered_until.map_or(since, |c| c.max(since));
        state.waited += now.saturating_duration_since(from);
        state.covered_until = Some(state.covered_until.map_or(now, |c| c.max(now)));
        state.attempts += 1;
        // Timers fire a little late or early; a wait within 1 ms of the bound has reached it.
        if state.waited + Duration::from_millis(1) < self.bound {
            return None;
        }
        let (waited, attempts) = (state.waited, state.attempts);
        drop(state);
        let scheme = if authority.tls { "https" } else { "http" };
        let host = if authority.host.contains(':') { format!("[{}]", authority.host) } else { authority.host.clone() };
        Some(
            Error::new(
                ErrorKind::Timeout,
                op,
                format!(
                    "no response from {scheme}://{host}:{} in {} over {attempts} attempt{}",
                    authority.port,
                    seconds(waited),
                    if attempts == 1 { "" } else { "s" },
                ),
            )
            .with_retryable(false),
        )
    }
}

/// `20 s`, `1.5 s`: whole seconds without decimals.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 0.05 {
        format!("{:.0} s", s.round())
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority() -> Authority {
        Authority { tls: false, host: "127.0.0.1".into(), port: 9 }
    }

    #[test]
    fn caps_escalate_and_sum_to_the_bound() {
        let s = Silence::new(Duration::from_secs(20));
        assert_eq!(s.attempt_cap(), Some(Duration::from_secs(5)));
        let op = Operation::GetObject;
        // Three sequential silent waits of their full caps: 5 + 5 + 10 = 20 s.
        let mut caps = Vec::new();
        let mut final_error = None;
        for _ in 0..3 {
            let cap = s.attempt_cap().unwrap();
            caps.push(cap);
            // A wait that started `cap` ago, not overlapping the previous one.
            s.state.lock().unwrap().covered_until = None;
            final_error = s.record(Instant::now() - cap, &authority(), op);
        }
        assert_eq!(caps[..2], [Duration::from_secs(5), Duration::from_secs(5)]);
        // What is left of the bound: 10 s less the microseconds between the clock readings.
        assert!(caps[2] <= Duration::from_secs(10) && caps[2] > Duration::from_millis(9990), "{caps:?}");
        let e = final_error.expect("the third silent wait reaches the bound");
        assert_eq!(e.kind(), ErrorKind::Timeout);
        assert!(!e.is_retryable());
        assert_eq!(e.message(), "no response from http://127.0.0.1:9 in 20 s over 3 attempts");
        // Exhausted: later attempts still probe, a quarter of the bound each.
        assert_eq!(s.attempt_cap(), Some(Duration::from_secs(5)));
    }

    #[test]
    fn overlapping_waits_count_once_and_an_answer_ends_it() {
        let s = Silence::new(Duration::from_secs(20));
        let since = Instant::now() - Duration::from_secs(5);
        for _ in 0..16 {
            assert!(s.record(since, &authority(), Operation::GetObject).is_none());
        }
        let waited = s.state.lock().unwrap().waited;
        assert!(waited >= Duration::from_secs(5) && waited < Duration::from_secs(6), "{waited:?}");
        s.answered();
        assert_eq!(s.attempt_cap(), None);
        assert_eq!(Silence::new(Duration::ZERO).attempt_cap(), None, "0 turns the budget off");
    }
}
