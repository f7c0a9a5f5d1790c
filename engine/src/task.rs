//! Tasks on the engine's runtime whose lifetime is tied to a handle: dropping the handle
//! aborts the task. This is how dropping a transfer's future or stream cancels it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::error::{Error, ErrorKind, Operation, Result};

/// A spawned engine task that is aborted when this handle is dropped.
#[derive(Debug)]
pub(crate) struct TaskHandle<T> {
    join: JoinHandle<Result<T>>,
    op: Operation,
}

impl<T: Send + 'static> TaskHandle<T> {
    /// Spawns `fut` on `handle`.
    pub(crate) fn spawn(handle: &Handle, op: Operation, fut: impl Future<Output = Result<T>> + Send + 'static) -> Self {
        TaskHandle { join: handle.spawn(fut), op }
    }
}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let op = self.op;
        Pin::new(&mut self.join).poll(cx).map(|r| match r {
            Ok(result) => result,
            Err(e) if e.is_panic() => {
                Err(Error::new(ErrorKind::Internal, op, "an engine task panicked").with_retryable(false))
            }
            Err(_) => Err(Error::cancelled(op)),
        })
    }
}

impl<T> Drop for TaskHandle<T> {
    fn drop(&mut self) {
        self.join.abort();
    }
}

/// Counts the work of a client still running on its runtime (transfers, and the aborts and
/// clean-ups that cancelled transfers leave behind), so a program about to exit can wait
/// until a cancelled upload has been aborted on the server and a partial file removed.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    count: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One unit of tracked work; dropping it (the work ended, or its task was aborted and its
/// future dropped) takes it off the count.
#[derive(Debug)]
pub(crate) struct Tracked(std::sync::Arc<Tracker>);

impl Tracker {
    pub(crate) fn enter(self: &std::sync::Arc<Self>) -> Tracked {
        self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Tracked(self.clone())
    }

    /// Resolves once no tracked work is left.
    pub(crate) async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
