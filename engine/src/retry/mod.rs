//! Per-request retry loop state.
//!
//! Callers write their own loop (so an attempt may borrow resume state, such as how many bytes
//! of a part already arrived), hand each failure to [`Retry::on_error`], which either sleeps
//! the backoff and lets the loop go on or gives the error back as final, and report the
//! success with [`Retry::succeeded`]. The decision is made from [`Error::is_retryable`], the
//! attempt count and the client-wide [`budget::RetryBudget`]: typed errors, never message text.

pub(crate) mod backoff;
pub(crate) mod budget;

use std::sync::Arc;

use crate::config::RetryConfig;
use crate::error::{Error, ErrorKind};
use crate::metrics::Metrics;
use budget::RetryBudget;

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

/// Retry state of one logical request.
#[derive(Debug)]
pub(crate) struct Retry<'a> {
    policy: &'a RetryPolicy,
    attempt: u32,
    spent: u32,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(policy: &'a RetryPolicy) -> Self {
        Retry { policy, attempt: 0, spent: 0 }
    }

    /// 0 for the first attempt, then 1, 2, ...
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Sleeps before the next attempt if `err` is retryable, attempts remain and the retry
    /// budget allows; otherwise returns `err` as the final outcome.
    pub(crate) async fn on_error(&mut self, err: Error) -> Result<(), Error> {
        let metrics = &self.policy.metrics;
        if !err.is_retryable() || self.attempt + 1 >= self.policy.config.max_attempts {
            metrics.add_failure(err.kind(), false);
            return Err(err);
        }
        let cost = if err.kind() == ErrorKind::Timeout { budget::TIMEOUT_RETRY_COST } else { budget::RETRY_COST };
        if !self.policy.budget.try_take(cost) {
            metrics.add_failure(err.kind(), false);
            metrics.add_budget_exhausted();
            tracing::debug!(error = %err, "retry budget exhausted; failing instead of retrying");
            return Err(err);
        }
        self.spent += cost;
        metrics.add_failure(err.kind(), true);
        let config = &self.policy.config;
        let wait = backoff::full_jitter(&mut rand::rng(), config.initial_backoff, config.max_backoff, self.attempt);
        tracing::debug!(attempt = self.attempt, ?wait, error = %err, "retrying");
        self.attempt += 1;
        tokio::time::sleep(wait).await;
        Ok(())
    }

    /// Reports success: returns the tokens this request's retries spent, or earns one.
    pub(crate) fn succeeded(self) {
        self.policy.budget.give(if self.spent > 0 { self.spent } else { budget::SUCCESS_REWARD });
    }
}
