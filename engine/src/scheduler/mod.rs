//! Admission of part requests: who may send next.
//!
//! Every transfer (a *meta-request*: one download or one upload) is driven by one driver task
//! that walks its parts in order. Before a part request is sent, the driver asks
//! [`Scheduler::admit`] for everything the part needs, in this order:
//!
//! 1. the transfer's own **read window** (in-order streams only): at most `read_window /
//!    part_size` parts may be fetched ahead of the reader. It is taken first because it is
//!    the transfer's own gate: a stream whose reader lags waits here *holding nothing shared*
//!    (no memory reservation, no slot), so it cannot starve other transfers;
//! 2. a **memory reservation** for the bytes the part will keep (from the
//!    [`BufferPool`] budget); caller-owned bytes (an upload from the caller's
//!    buffer) need none;
//! 3. a **connection slot**: the number of slots is the configured connection count, so it
//!    bounds concurrent requests and therefore open connections. It is taken last, so a
//!    transfer waiting for memory never idles a connection.
//!
//! The gates are tokio semaphores, which serve waiters first-come first-served. Because each
//! driver waits for one part at a time, concurrent transfers alternate at every gate: a huge
//! download cannot starve a small one that starts later, it only shares the slots with it
//! round-robin.
//!
//! The slot is given back when the part's HTTP exchange ends; the memory reservation (and the
//! window permit) live as long as the part's bytes are held (until written to a file, copied
//! to the caller, or read from a stream), which is how a slow consumer pushes back on the
//! network.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::buffer_pool::{BufferPool, MemoryPermit};

/// The two admission gates shared by all transfers of a client.
#[derive(Debug)]
pub(crate) struct Scheduler {
    slots: Arc<Semaphore>,
    pub(crate) memory: BufferPool,
}

/// Permission to run one HTTP exchange; dropping it frees the slot.
pub(crate) type ConnectionSlot = OwnedSemaphorePermit;

/// Everything one part request was admitted with (see the module docs for the order).
#[derive(Debug)]
pub(crate) struct Admission {
    /// The part's share of its stream's read window (streams only).
    pub(crate) window: Option<OwnedSemaphorePermit>,
    /// The part's memory reservation (`None` when the bytes are the caller's).
    pub(crate) memory: Option<MemoryPermit>,
    pub(crate) slot: ConnectionSlot,
}

impl Scheduler {
    pub(crate) fn new(max_connections: usize, memory_limit_bytes: u64) -> Self {
        Scheduler { slots: Arc::new(Semaphore::new(max_connections)), memory: BufferPool::new(memory_limit_bytes) }
    }

    /// Admits one part request: waits for `window` (a stream's read window), then reserves
    /// `memory_bytes` (when the part keeps bytes of its own), then a connection slot.
    pub(crate) async fn admit(&self, window: Option<&Arc<Semaphore>>, memory_bytes: Option<u64>) -> Admission {
        let window = match window {
            Some(w) => Some(w.clone().acquire_owned().await.expect("a read window is never closed")),
            None => None,
        };
        let memory = match memory_bytes {
            Some(bytes) => Some(self.memory.reserve(bytes).await),
            None => None,
        };
        let slot = self.slot().await;
        Admission { window, memory, slot }
    }

    /// Waits for a free connection slot (FIFO across all transfers): for requests that keep
    /// no bytes (CreateMultipartUpload, CompleteMultipartUpload, PutObject of caller bytes).
    pub(crate) async fn slot(&self) -> ConnectionSlot {
        self.slots.clone().acquire_owned().await.expect("the slot semaphore is never closed")
    }

    /// A slot only if one is free now: for optional extra requests (hedges) that must never
    /// delay or starve the regular ones.
    pub(crate) fn try_slot(&self) -> Option<ConnectionSlot> {
        self.slots.clone().try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MIB: u64 = 1 << 20;

    /// Polls `fut` once: whether it is ready now.
    async fn ready_now<F: std::future::Future>(fut: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::ZERO, fut).await.ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_window_waits_holding_nothing_shared() {
        let s = Arc::new(Scheduler::new(2, 4 * MIB));
        let window = Arc::new(Semaphore::new(1));
        let first = s.admit(Some(&window), Some(MIB)).await;
        drop(first.slot);
        let before = s.memory.in_use_bytes();
        let waiting = tokio::spawn({
            let (window, s) = (window.clone(), s.clone());
            async move { s.admit(Some(&window), Some(MIB)).await.memory.is_some() }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "the window is full");
        assert_eq!(s.memory.in_use_bytes(), before, "no memory taken while waiting on the window");
        let slots = (s.try_slot(), s.try_slot());
        assert!(slots.0.is_some() && slots.1.is_some(), "no slot taken while waiting");
        drop(slots);
        drop(first.window);
        assert!(waiting.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_for_memory_holds_no_slot_and_slots_go_first_come_first_served() {
        let s = Arc::new(Scheduler::new(1, 2 * MIB));
        let big = s.admit(None, Some(2 * MIB)).await;
        drop(big.slot);
        // Memory is exhausted: the next part waits for it without taking the one slot.
        let blocked = tokio::spawn({
            let s = s.clone();
            async move { s.admit(None, Some(MIB)).await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let slot = ready_now(s.slot()).await.expect("the slot is free while memory is awaited");
        // Two more waiters for the slot are served in the order they came.
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let waiters: Vec<_> = (0..2)
            .map(|i| {
                let (s, order) = (s.clone(), order.clone());
                tokio::spawn(async move {
                    let _slot = s.slot().await;
                    order.lock().unwrap().push(i);
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(slot);
        drop(big.memory);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1]);
        blocked.await.unwrap();
    }
}
