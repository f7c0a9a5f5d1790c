//! `gantry_client`: an engine client with its own worker threads.

use crate::config::gantry_config;
use crate::error::{gantry_error, gantry_result};
use crate::guard::{out_arg, Failure};
use crate::handle::{borrow, Boxed};

/// A client: connection pool, memory budget and worker threads. Safe to share across
/// threads. Create with `gantry_client_new`; the caller owns it (Box-owned) and frees it once
/// with `gantry_client_free`, from any thread, once no other thread uses it and not from a
/// callback of its own requests.
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

impl Boxed for gantry_client {}

/// Borrows a client argument, refused in a fork child. (Calls that block say so to
/// `ffi_fn!`, which makes the may-block check.)
///
/// # Safety
/// `client` is NULL or a live client.
pub(crate) unsafe fn client_arg<'a>(client: *const gantry_client) -> Result<&'a gantry::Client, Failure> {
    // SAFETY: the caller passes NULL or a live client.
    unsafe { borrow(client, "client") }?.get()
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
    ffi_fn!(out_err, || {
        // SAFETY: the caller passes NULL or a live configuration.
        let config = unsafe { borrow(config, "config") }?;
        let out_client = out_arg(out_client, "out_client")?;
        let client = gantry::Client::new(config.build()?)?;
        // SAFETY: checked non-NULL, writable per the contract; the caller owns the new client.
        unsafe { *out_client = gantry_client { client, pid: std::process::id() }.into_raw() };
        Ok(())
    })
}

/// Frees a client: cancels its transfers and stops its worker threads without waiting (it
/// never blocks). NULL is allowed. Freeing twice, or while another thread still uses the
/// client, is undefined behaviour. In a fork child, the parent's client is released without
/// touching its (absent) threads. On a panic (a bug) the client is leaked.
///
/// # Safety
/// `client` is NULL or a client not yet freed and not in use by other threads.
#[no_mangle]
pub unsafe extern "C" fn gantry_client_free(client: *mut gantry_client) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a client handed out once by gantry_client_new, freed once.
        let Some(client) = (unsafe { gantry_client::from_raw(client) }) else { return Ok(()) };
        if client.pid != std::process::id() {
            // The runtime's threads and locks belong to the parent; dropping could deadlock on
            // a lock a parent thread held at fork time. Keep the handle reachable instead (so
            // leak checkers in the child see no lost memory) and never touch it again.
            park_forked(client);
        }
        Ok(())
    })
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
