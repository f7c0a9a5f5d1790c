//! Memory accounting for part buffers, and a free list so upload buffers are reused instead of
//! freshly allocated (fresh pages cost a page fault each; on VMs that is a visible share of a
//! core at multi-GiB/s).
//!
//! The limit is a hard cap: [`BufferPool::reserve`] waits until enough of the budget is free,
//! it never allocates past it. Download parts hold a reservation for the bytes they keep (the
//! network buffers hyper hands out); upload parts hold one for the buffer they fill.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Budget unit: 1 KiB, so one reservation of up to 4 TiB fits a `u32` permit count.
const UNIT: u64 = 1024;

/// The memory budget and the free list of upload buffers.
#[derive(Debug)]
pub(crate) struct BufferPool {
    budget: Arc<Semaphore>,
    limit_units: u32,
    peak_units: std::sync::atomic::AtomicU32,
    free: Mutex<Vec<Vec<u8>>>,
}

/// A reservation of part of the budget; dropping it gives the memory back.
#[derive(Debug)]
pub(crate) struct MemoryPermit {
    _permit: OwnedSemaphorePermit,
}

impl BufferPool {
    pub(crate) fn new(limit_bytes: u64) -> Self {
        let limit_units = u32::try_from(limit_bytes.div_ceil(UNIT)).unwrap_or(u32::MAX);
        BufferPool {
            budget: Arc::new(Semaphore::new(limit_units as usize)),
            limit_units,
            peak_units: Default::default(),
            free: Mutex::new(Vec::new()),
        }
    }

    /// Waits until `bytes` of the budget are free and reserves them. Waiters are served in
    /// FIFO order, which is what makes admission fair across transfers. A request larger than
    /// the whole budget is clamped to it (it then runs alone rather than never).
    pub(crate) async fn reserve(&self, bytes: u64) -> MemoryPermit {
        let units = u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX).clamp(1, self.limit_units);
        let permit = self.budget.clone().acquire_many_owned(units).await.expect("the budget semaphore is never closed");
        let in_use = self.limit_units - self.budget.available_permits() as u32;
        self.peak_units.fetch_max(in_use, std::sync::atomic::Ordering::Relaxed);
        MemoryPermit { _permit: permit }
    }

    /// Bytes of the budget reserved right now (for metrics).
    pub(crate) fn in_use_bytes(&self) -> u64 {
        u64::from(self.limit_units - self.budget.available_permits() as u32) * UNIT
    }

    /// The most bytes ever reserved at once (for metrics and the memory-limit tests).
    pub(crate) fn peak_bytes(&self) -> u64 {
        u64::from(self.peak_units.load(std::sync::atomic::Ordering::Relaxed)) * UNIT
    }

    /// Bytes of the budget not reserved right now.
    #[cfg(test)]
    pub(crate) fn available_bytes(&self) -> u64 {
        self.budget.available_permits() as u64 * UNIT
    }

    /// An empty buffer with at least `capacity` bytes of room, reused when one is free.
    pub(crate) fn take(&self, capacity: usize) -> Vec<u8> {
        let mut free = self.free.lock().expect("free list lock");
        if let Some(i) = free.iter().position(|b| b.capacity() >= capacity) {
            let mut buf = free.swap_remove(i);
            buf.clear();
            return buf;
        }
        drop(free);
        Vec::with_capacity(capacity)
    }

    /// Returns a buffer for reuse. Only as many buffers as the budget could hold are kept.
    pub(crate) fn give_back(&self, buf: Vec<u8>) {
        let mut free = self.free.lock().expect("free list lock");
        let kept: u64 = free.iter().map(|b| b.capacity() as u64).sum();
        if kept + buf.capacity() as u64 <= self.limit_units as u64 * UNIT {
            free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn reservations_wait_for_room() {
        let pool = Arc::new(BufferPool::new(10 * UNIT));
        let a = pool.reserve(6 * UNIT).await;
        assert_eq!(pool.available_bytes(), 4 * UNIT);
        let p2 = pool.clone();
        let waiter = tokio::spawn(async move { p2.reserve(6 * UNIT).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "must wait while the budget is short");
        drop(a);
        let _b = tokio::time::timeout(Duration::from_secs(1), waiter).await.unwrap().unwrap();
        // Oversized requests are clamped to the whole budget instead of deadlocking.
        drop(_b);
        let _all = pool.reserve(100 * UNIT).await;
        assert_eq!(pool.available_bytes(), 0);
    }

    #[test]
    fn buffers_are_reused() {
        let pool = BufferPool::new(1 << 20);
        let mut b = pool.take(1000);
        b.extend_from_slice(&[1; 10]);
        let ptr = b.as_ptr();
        pool.give_back(b);
        let c = pool.take(500);
        assert_eq!(c.as_ptr(), ptr);
        assert!(c.is_empty());
    }
}
