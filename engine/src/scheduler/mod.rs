//! Admission of part requests: who may send next.
//!
//! Every transfer (a *meta-request*: one download or one upload) is driven by one driver task
//! that walks its parts in order. Before a part request is sent, the driver must hold two
//! things:
//!
//! 1. a **memory reservation** for the bytes the part will keep (from the
//!    [`BufferPool`](crate::buffer_pool::BufferPool) budget), and
//! 2. a **connection slot**: the number of slots is the configured connection count, so it
//!    bounds concurrent requests and therefore open connections.
//!
//! Both are tokio semaphores, which serve waiters first-come first-served. Because each driver
//! waits for one part at a time, two concurrent transfers end up alternating at both gates:
//! a huge download cannot starve a small one that starts later, it only shares the slots with
//! it round-robin. A driver never holds a slot while it waits for memory (memory is taken
//! first), so a transfer blocked on memory does not idle a connection.
//!
//! The slot is given back when the part's HTTP exchange ends; the memory reservation lives
//! as long as the part's bytes are held (until written to a file, copied to the caller, or
//! read from a stream), which is how a slow stream reader pushes back on the network.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::buffer_pool::BufferPool;

/// The two admission gates shared by all transfers of a client.
#[derive(Debug)]
pub(crate) struct Scheduler {
    slots: Arc<Semaphore>,
    pub(crate) memory: BufferPool,
}

/// Permission to run one HTTP exchange; dropping it frees the slot.
pub(crate) type ConnectionSlot = OwnedSemaphorePermit;

impl Scheduler {
    pub(crate) fn new(max_connections: usize, memory_limit_bytes: u64) -> Self {
        Scheduler { slots: Arc::new(Semaphore::new(max_connections)), memory: BufferPool::new(memory_limit_bytes) }
    }

    /// Waits for a free connection slot (FIFO across all transfers).
    pub(crate) async fn slot(&self) -> ConnectionSlot {
        self.slots.clone().acquire_owned().await.expect("the slot semaphore is never closed")
    }

    /// A slot only if one is free now: for optional extra requests (hedges) that must never
    /// delay or starve the regular ones.
    pub(crate) fn try_slot(&self) -> Option<ConnectionSlot> {
        self.slots.clone().try_acquire_owned().ok()
    }
}
