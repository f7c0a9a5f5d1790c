//! `gantry_client`: an engine client with its own worker threads.

use crate::config::gantry_config;
use crate::error::{gantry_error, gantry_result};
use crate::guard::{may_block, run, Failure};

/// A client: connection pool, memory budget and worker threads. Safe to share across
/// threads. Create with `gantry_client_new`, free with `gantry_client_free`.
#[derive(Debug)]
pub struct gantry_client {
    pub(crate) client: gantry::Client,
    pid: u32,
}

impl gantry_client {
    /// The engine client, unless this process is a fork child of the one that made it.
    pub(crate) fn get(&self) -> Result<&gantry::Client, Failure> {
        if self.pid != std::process::id() {
            return Err(Failure::Forked);
        }
        Ok(&self.client)
    }
}

/// Borrows a client argument (for calls that do not block).
///
/// # Safety
/// `client` is NULL or a live client.
pub(crate) unsafe fn async_client_arg<'a>(client: *const gantry_client) -> Result<&'a gantry::Client, Failure> {
    // SAFETY: the caller passes NULL or a live client.
    unsafe { client.as_ref() }.ok_or(Failure::Null("client"))?.get()
}

/// Borrows a client argument for a blocking call, which is refused on a worker thread.
///
/// # Safety
/// `client` is NULL or a live client.
pub(crate) unsafe fn client_arg<'a>(client: *const gantry_client) -> Result<&'a gantry::Client, Failure> {
    may_block()?;
    // SAFETY: forwarded contract.
    unsafe { async_client_arg(client) }
}

/// Creates a client from `config` (copied; the config may be freed right after). Starts the
/// client's worker threads. On failure (bad configuration, no credentials) nothing is created.
///
/// # Safety
/// `config` is a live configuration; `out_client` and `out_err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_client_new(
    config: *const gantry_config,
    out_client: *mut *mut gantry_client,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    run(out_err, || {
        // SAFETY: the caller passes NULL or a live configuration.
        let config = unsafe { config.as_ref() }.ok_or(Failure::Null("config"))?;
        if out_client.is_null() {
            return Err(Failure::Null("out_client"));
        }
        let client = gantry::Client::new(config.build()?)?;
        let handle = Box::new(gantry_client { client, pid: std::process::id() });
        // SAFETY: checked non-NULL; the caller owns the new client.
        unsafe { *out_client = Box::into_raw(handle) };
        Ok(())
    })
}

/// Frees a client: cancels its transfers and stops its worker threads without waiting.
/// NULL is allowed. Freeing twice, or while another thread still uses the client, is
/// undefined behaviour. In a fork child, the parent's client is released without touching
/// its (absent) threads.
///
/// # Safety
/// `client` is NULL or a client not yet freed and not in use by other threads.
#[no_mangle]
pub unsafe extern "C" fn gantry_client_free(client: *mut gantry_client) {
    if client.is_null() {
        return;
    }
    // SAFETY: came from Box::into_raw in gantry_client_new; freed once.
    let client = unsafe { Box::from_raw(client) };
    if client.pid != std::process::id() {
        // The runtime's threads and locks belong to the parent; dropping could deadlock on a
        // lock a parent thread held at fork time. Keep the handle reachable instead (so leak
        // checkers in the child see no lost memory) and never touch it again.
        park_forked(client);
    }
}

/// Handles of parent clients freed in a fork child: an intrusive lock-free stack.
struct Parked {
    _client: Box<gantry_client>,
    next: *mut Parked,
}

static PARKED: std::sync::atomic::AtomicPtr<Parked> = std::sync::atomic::AtomicPtr::new(std::ptr::null_mut());

fn park_forked(client: Box<gantry_client>) {
    use std::sync::atomic::Ordering::{AcqRel, Acquire};
    let node = Box::into_raw(Box::new(Parked { _client: client, next: std::ptr::null_mut() }));
    let mut head = PARKED.load(Acquire);
    loop {
        // SAFETY: node is ours until the exchange publishes it.
        unsafe { (*node).next = head };
        match PARKED.compare_exchange_weak(head, node, AcqRel, Acquire) {
            Ok(_) => return,
            Err(h) => head = h,
        }
    }
}
