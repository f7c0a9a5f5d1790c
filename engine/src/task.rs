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
