//! Per-request retry loop state.
//!
//! Callers write their own loop (so an attempt may borrow resume state, such as how many bytes
//! of a part already arrived), hand each failure to [`Retry::on_error`], which either sleeps
//! the backoff and lets the loop go on or gives the error back as final, and report the
//! success with [`Retry::succeeded`]. The decision is made from [`Error::is_retryable`], the
//! error's [`ErrorKind`], the attempt count and the client-wide [`budget::RetryBudget`]: typed
//! errors, never message text.
//!
//! Two kinds of failure are told apart:
//!
//! - A **connection fault** ([`ErrorKind::Transport`]: the connection was reset or closed
//!   while the request or its answer was on the wire) says nothing about the endpoint's load:
//!   one TCP connection died. The first one of a request is retried at once, on another
//!   connection (the broken one is never reused), with no backoff and no budget charge; a
//!   ranged GET resumes from its first byte not yet received. The attempt still counts
//!   towards `max_attempts`.
//! - Everything else that is retryable (throttling, 5xx, timeouts, protocol errors), and a
//!   connection fault that follows another one on the same request, backs off with full
//!   jitter and pays for the retry from the budget: an endpoint that is slow, throttling, or
//!   breaking every connection is given room instead of being hammered.
//!
//! **Idempotency.** An attempt can fail after the whole request went out, with the answer
//! lost ([`Error::answer_lost`]: a reset or timeout waiting for the head, a body cut). The
//! server may then have carried it out, and a repeat meets that: harmless for an
//! [`Idempotency::Idempotent`] request (GET, HEAD, PUT, UploadPart, DELETE, Abort), not for
//! CreateMultipartUpload (a second upload) or CompleteMultipartUpload (`NoSuchUpload` for an
//! upload the lost answer completed). Those retry only as [`Idempotency::Recoverable`], when
//! the operation runs a recovery step after the retries (it can ask [`Retry::lost_answers`]);
//! an [`Idempotency::NotIdempotent`] request fails at a lost answer. Errors that prove nothing
//! was done (connect failures, S3 error answers such as 503 `SlowDown`) retry as above
//! whatever the request.

pub(crate) mod backoff;
pub(crate) mod budget;

use std::sync::Arc;

use crate::config::RetryConfig;
use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;
use budget::RetryBudget;

/// Whether sending a request twice has the effect of sending it once: what a retry may do
/// after an attempt whose answer was lost (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idempotency {
    /// A repeat finds or leaves the same state (GET, HEAD, PutObject, UploadPart, DELETE,
    /// AbortMultipartUpload, listings): retried after every retryable error.
    Idempotent,
    /// A repeat can meet the first attempt's effect, and the operation has a recovery step for
    /// that, run by its caller after the retries: retried like an idempotent request.
    Recoverable,
    /// A repeat can meet the first attempt's effect and nothing repairs it: after a lost answer
    /// the error is final (and no longer retryable); other retryable errors still retry.
    NotIdempotent,
}

/// What every request's retry loop shares: the policy, the token bucket and the counters.
#[derive(Debug)]
pub(crate) struct RetryPolicy {
    pub(crate) config: RetryConfig,
    budget: RetryBudget,
    metrics: Arc<Metrics>,
}

impl RetryPolicy {
    pub(crate) fn new(config: RetryConfig, metrics: Arc<Metrics>) -> Self {
        RetryPolicy { budget: RetryBudget::new(config.budget_tokens), config, metrics }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Give the error back as final.
    Fail,
    /// The budget refused the retry.
    BudgetExhausted,
    /// Retry at once (a lone connection fault): no wait, no tokens.
    Immediate,
    /// Retry after a full-jitter wait below `ceiling`, paying `cost` tokens.
    Backoff { ceiling: std::time::Duration, cost: u32 },
    /// Give the error back as final: the answer was lost, the server may have acted, and the
    /// request is not idempotent.
    AnswerLost,
}

/// Retry state of one logical request.
#[derive(Debug)]
pub(crate) struct Retry<'a> {
    policy: &'a RetryPolicy,
    attempt: u32,
    /// Retries that backed off so far: the exponent of the next backoff (immediate retries
    /// after connection faults do not raise it).
    backoffs: u32,
    /// Whether the previous attempt ended in a connection fault.
    after_connection_fault: bool,
    spent: u32,
    idempotency: Idempotency,
    /// Failed attempts whose answer was lost (the server may have acted on them).
    lost_answers: u32,
}

impl<'a> Retry<'a> {
    /// Retry state of an idempotent request (see [`Retry::with_idempotency`] for others).
    pub(crate) fn new(policy: &'a RetryPolicy) -> Self {
        Retry {
            policy,
            attempt: 0,
            backoffs: 0,
            after_connection_fault: false,
            spent: 0,
            idempotency: Idempotency::Idempotent,
            lost_answers: 0,
        }
    }

    /// Declares the request's idempotency, which decides whether a lost answer is retried.
    pub(crate) fn with_idempotency(mut self, idempotency: Idempotency) -> Self {
        self.idempotency = idempotency;
        self
    }

    /// 0 for the first attempt, then 1, 2, ...
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How many failed attempts lost their answer after the request went out: when non-zero,
    /// the server may have acted more often than the final outcome says (what a
    /// [`Idempotency::Recoverable`] operation's recovery step looks at).
    pub(crate) fn lost_answers(&self) -> u32 {
        self.lost_answers
    }

    /// Decides what follows a failed attempt ending in `err` (taking budget tokens for a
    /// retry that backs off) and updates the state for the next attempt.
    fn decide(&mut self, err: &Error) -> Decision {
        if err.answer_lost() {
            self.lost_answers += 1;
        }
        if !err.is_retryable() || self.attempt + 1 >= self.policy.config.max_attempts {
            return Decision::Fail;
        }
        if err.answer_lost() && self.idempotency == Idempotency::NotIdempotent {
            return Decision::AnswerLost;
        }
        let connection_fault = err.kind() == ErrorKind::Transport;
        let repeated = std::mem::replace(&mut self.after_connection_fault, connection_fault);
        self.attempt += 1;
        if connection_fault && !repeated {
            return Decision::Immediate;
        }
        let cost = if err.kind() == ErrorKind::Timeout { budget::TIMEOUT_RETRY_COST } else { budget::RETRY_COST };
        if !self.policy.budget.try_take(cost) {
            return Decision::BudgetExhausted;
        }
        self.spent += cost;
        let config = &self.policy.config;
        let ceiling = backoff::ceiling(config.initial_backoff, config.max_backoff, self.backoffs);
        self.backoffs += 1;
        Decision::Backoff { ceiling, cost }
    }

    /// Waits before the next attempt if `err` is retryable, attempts remain and the retry
    /// budget allows (no wait after a lone connection fault, see the module docs); otherwise
    /// returns `err` as the final outcome.
    pub(crate) async fn on_error(&mut self, err: Error) -> Result<(), Error> {
        let metrics = &self.policy.metrics;
        match self.decide(&err) {
            Decision::Fail => {
                metrics.add_failure(err.kind(), false);
                Err(err)
            }
            Decision::AnswerLost => {
                metrics.add_failure(err.kind(), false);
                tracing::debug!(error = %err, "answer lost and the request is not idempotent; not retrying");
                Err(err.with_retryable(false))
            }
            Decision::BudgetExhausted => {
                metrics.add_failure(err.kind(), false);
                metrics.add_budget_exhausted();
                tracing::debug!(error = %err, "retry budget exhausted; failing instead of retrying");
                Err(err)
            }
            Decision::Immediate => {
                metrics.add_failure(err.kind(), true);
                tracing::debug!(attempt = self.attempt, error = %err, "connection fault; retrying at once");
                Ok(())
            }
            Decision::Backoff { ceiling, cost } => {
                metrics.add_failure(err.kind(), true);
                let wait = backoff::below(&mut rand::rng(), ceiling);
                tracing::debug!(attempt = self.attempt, ?wait, cost, error = %err, "retrying");
                tokio::time::sleep(wait).await;
                Ok(())
            }
        }
    }

    /// Reports success: returns the tokens this request's retries spent, or earns one.
    pub(crate) fn succeeded(self) {
        self.policy.budget.give(if self.spent > 0 { self.spent } else { budget::SUCCESS_REWARD });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::error::Operation;

    fn policy(max_attempts: u32, budget_tokens: u32) -> RetryPolicy {
        let config = RetryConfig {
            max_attempts,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(20),
            budget_tokens,
        };
        RetryPolicy::new(config, Arc::new(Metrics::default()))
    }

    fn err(kind: ErrorKind) -> Error {
        Error::new(kind, Operation::GetObject, "test")
    }

    /// Virtual time `on_error` took (the clock is paused: sleeps advance it exactly).
    async fn timed(retry: &mut Retry<'_>, kind: ErrorKind) -> (Result<(), Error>, Duration) {
        let t0 = tokio::time::Instant::now();
        let r = retry.on_error(err(kind)).await;
        (r, t0.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn a_reset_retries_at_once_and_free() {
        let p = policy(5, 100);
        let mut retry = Retry::new(&p);
        let (r, waited) = timed(&mut retry, ErrorKind::Transport).await;
        assert!(r.is_ok());
        assert_eq!(waited, Duration::ZERO, "a lone connection fault must not back off");
        assert_eq!(p.budget.available(), 100, "a lone connection fault must not cost tokens");
        assert_eq!(retry.attempt(), 1, "it still counts as an attempt");
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_consecutive_reset_backs_off() {
        let p = policy(5, 100);
        let mut retry = Retry::new(&p);
        assert_eq!(retry.decide(&err(ErrorKind::Transport)), Decision::Immediate);
        // The first backoff of the request: the base ceiling, not one raised by the free retry.
        let ceiling = Duration::from_millis(100);
        assert_eq!(retry.decide(&err(ErrorKind::Transport)), Decision::Backoff { ceiling, cost: budget::RETRY_COST });
        assert_eq!(p.budget.available(), 100 - budget::RETRY_COST);
        let (r, waited) = timed(&mut retry, ErrorKind::Transport).await;
        assert!(r.is_ok());
        assert!(waited < Duration::from_millis(200), "{waited:?}");
        assert_eq!(p.budget.available(), 100 - 2 * budget::RETRY_COST);
        // After another kind of failure, a reset is a lone one again.
        let mut retry = Retry::new(&p);
        assert!(matches!(retry.decide(&err(ErrorKind::Throttled)), Decision::Backoff { .. }));
        assert_eq!(retry.decide(&err(ErrorKind::Transport)), Decision::Immediate);
    }

    #[tokio::test(start_paused = true)]
    async fn throttling_keeps_backing_off_and_paying() {
        let p = policy(30, 1000);
        let mut retry = Retry::new(&p);
        let mut total = Duration::ZERO;
        for n in 0..20u32 {
            let before = p.budget.available();
            let (r, waited) = timed(&mut retry, ErrorKind::Throttled).await;
            assert!(r.is_ok());
            assert!(waited < backoff::ceiling(Duration::from_millis(100), Duration::from_secs(20), n));
            assert_eq!(before - p.budget.available(), budget::RETRY_COST);
            total += waited;
        }
        assert!(total > Duration::from_secs(1), "20 throttled retries waited only {total:?}");
        // Timeouts pay more, and also back off.
        let mut retry = Retry::new(&p);
        let before = p.budget.available();
        assert!(matches!(retry.decide(&err(ErrorKind::Timeout)), Decision::Backoff { .. }));
        assert_eq!(before - p.budget.available(), budget::TIMEOUT_RETRY_COST);
    }

    /// The retry decision table, kind × whether the answer was lost × idempotency: a lost
    /// answer (the server may have acted) is retried only for idempotent requests and those
    /// whose operation recovers from it; errors that prove nothing was done (connect failures,
    /// S3's error answers, a request that never went out whole) retry whatever the request;
    /// final kinds stay final.
    #[tokio::test(start_paused = true)]
    async fn decision_table_kind_by_idempotency() {
        use ErrorKind::*;
        use Idempotency::*;
        const Y: bool = true;
        const N: bool = false;
        // (kind, answer lost) → retried for [Idempotent, Recoverable, NotIdempotent]
        let table = [
            (Connect, N, [Y, Y, Y]),
            (Throttled, N, [Y, Y, Y]),
            (ServerError, N, [Y, Y, Y]),
            (ChecksumMismatch, N, [Y, Y, Y]),
            // Connect or TLS timeouts, a body that stopped going out.
            (Timeout, N, [Y, Y, Y]),
            // A request hyper never dispatched, or whose body did not all go out.
            (Transport, N, [Y, Y, Y]),
            (Protocol, N, [Y, Y, Y]),
            // The whole request went out and the answer was lost.
            (Timeout, Y, [Y, Y, N]),
            (Transport, Y, [Y, Y, N]),
            (Protocol, Y, [Y, Y, N]),
            (NotFound, N, [N, N, N]),
            (AccessDenied, N, [N, N, N]),
            (ClientError, N, [N, N, N]),
            (ObjectChanged, N, [N, N, N]),
            (ObjectChanged, Y, [N, N, N]),
        ];
        for (kind, lost, expected) in table {
            for (idempotency, want) in [Idempotent, Recoverable, NotIdempotent].into_iter().zip(expected) {
                let p = policy(5, 1000);
                let mut retry = Retry::new(&p).with_idempotency(idempotency);
                let e = if lost { err(kind).with_answer_lost() } else { err(kind) };
                let decision = retry.decide(&e);
                let retried = matches!(decision, Decision::Immediate | Decision::Backoff { .. });
                assert_eq!(retried, want, "{kind:?}, answer lost {lost}, {idempotency:?}: {decision:?}");
                if lost && idempotency == NotIdempotent && kind.default_retryable() {
                    assert_eq!(decision, Decision::AnswerLost);
                }
                assert_eq!(retry.lost_answers(), u32::from(lost), "{kind:?} {idempotency:?}");
            }
        }
    }

    /// A request that is not idempotent and has no recovery step (as CreateMultipartUpload
    /// would be without its clean-up) is not sent again after a lost answer (a reset after
    /// the server acted is what a lost response looks like): the error comes back at once,
    /// no longer retryable, without a wait or a budget charge. A failure that proves nothing
    /// was done (connect refused, 503 SlowDown) still retries.
    #[tokio::test(start_paused = true)]
    async fn a_lost_answer_of_a_request_that_is_not_idempotent_is_final() {
        let p = policy(5, 100);
        for kind in [ErrorKind::Transport, ErrorKind::Timeout] {
            let mut retry = Retry::new(&p).with_idempotency(Idempotency::NotIdempotent);
            let t0 = tokio::time::Instant::now();
            let e = retry.on_error(err(kind).with_answer_lost()).await.unwrap_err();
            assert_eq!(t0.elapsed(), Duration::ZERO);
            assert_eq!(e.kind(), kind);
            assert!(!e.is_retryable(), "{kind:?}: a caller must not resend it either");
            assert_eq!((retry.attempt(), retry.lost_answers()), (0, 1));
        }
        assert_eq!(p.budget.available(), 100);
        let mut retry = Retry::new(&p).with_idempotency(Idempotency::NotIdempotent);
        assert!(retry.on_error(err(ErrorKind::Connect)).await.is_ok());
        assert!(retry.on_error(err(ErrorKind::Throttled)).await.is_ok());
        // The same lost answer on an idempotent request is retried at once.
        let mut retry = Retry::new(&p);
        assert!(retry.on_error(err(ErrorKind::Transport).with_answer_lost()).await.is_ok());
        assert_eq!(retry.lost_answers(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn connection_faults_still_end_at_max_attempts_and_finals_stay_final() {
        let p = policy(3, 100);
        let mut retry = Retry::new(&p);
        assert!(retry.on_error(err(ErrorKind::Transport)).await.is_ok());
        assert!(retry.on_error(err(ErrorKind::Transport)).await.is_ok());
        let e = retry.on_error(err(ErrorKind::Transport)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Transport);
        let mut retry = Retry::new(&p);
        assert!(retry.on_error(err(ErrorKind::NotFound)).await.is_err());
        // An empty budget refuses backed-off retries but not a lone connection fault.
        let p = policy(5, 4);
        let mut retry = Retry::new(&p);
        assert!(retry.on_error(err(ErrorKind::Transport)).await.is_ok());
        assert_eq!(retry.decide(&err(ErrorKind::Throttled)), Decision::BudgetExhausted);
    }
}
