//! Per-request retry loop state.
//!
//! Callers write their own loop (so an attempt may borrow resume state, such as how many bytes
//! of a part already arrived) and hand each failure to [`Retry::on_error`], which either sleeps
//! the backoff and lets the loop go on, or gives the error back as final. The decision is made
//! from [`Error::is_retryable`] alone: typed errors, never message text.

pub(crate) mod backoff;

use crate::config::RetryConfig;
use crate::error::Error;

/// Retry state of one logical request.
#[derive(Debug)]
pub(crate) struct Retry<'a> {
    config: &'a RetryConfig,
    attempt: u32,
}

impl<'a> Retry<'a> {
    pub(crate) fn new(config: &'a RetryConfig) -> Self {
        Retry { config, attempt: 0 }
    }

    /// 0 for the first attempt, then 1, 2, ...
    pub(crate) fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Sleeps before the next attempt if `err` is retryable and attempts remain; otherwise
    /// returns `err` as the final outcome.
    pub(crate) async fn on_error(&mut self, err: Error) -> Result<(), Error> {
        if !err.is_retryable() || self.attempt + 1 >= self.config.max_attempts {
            return Err(err);
        }
        let wait =
            backoff::full_jitter(&mut rand::rng(), self.config.initial_backoff, self.config.max_backoff, self.attempt);
        tracing::debug!(attempt = self.attempt, ?wait, error = %err, "retrying");
        self.attempt += 1;
        tokio::time::sleep(wait).await;
        Ok(())
    }
}
