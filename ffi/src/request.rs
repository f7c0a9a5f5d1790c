//! `gantry_request`: the handle of every asynchronous call (wait, cancel, size, read window,
//! free), and the two ways a request runs.
//!
//! - `gantry_get_async` (ABI 0.1) runs on a thread of its own that drives the in-order stream
//!   and calls the callbacks, so its callbacks may block (that is its backpressure).
//! - The `*_start` calls (ABI 0.2) run as tasks on the client's worker threads: no thread per
//!   request, so thousands of small GETs cost no threads. Their callbacks run on a worker and
//!   must not block; a stream's backpressure is the read window the caller opens instead.

use std::ffi::c_void;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use futures::channel::oneshot;
use futures::future::{select, Either};

use crate::error::{gantry_error, gantry_result};
use crate::guard::{in_worker_callback, may_block, out_arg, panic_error, Failure};
use crate::handle::{borrow, Boxed};

/// Called exactly once when the request ends, with its result and, on failure, the error
/// (lent for the call; do not free it). Called before `gantry_request_wait` returns.
pub type gantry_done_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, result: gantry_result, err: *const gantry_error)>;

/// An asynchronous request. Made by `gantry_get_async` and the `*_start` calls; the caller
/// owns it (Box-owned; the running task shares its state, not the handle) and frees it once
/// with `gantry_request_free`, from any thread: from a callback where blocking calls are
/// refused, or from the request's own callback, free cancels and lets go without waiting.
/// Thread-safe: `gantry_request_wait`, `gantry_request_cancel`, `gantry_request_size` and
/// `gantry_request_open_window` may be called from any thread, several times, also after the
/// request ended.
#[derive(Debug)]
pub struct gantry_request {
    pub(crate) shared: Arc<Shared>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

impl Boxed for gantry_request {}

impl gantry_request {
    /// Whether the calling thread is this request's own (`gantry_get_async` runs its
    /// callbacks there): waiting for the request there would wait for itself.
    fn on_own_thread(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| t.thread().id() == std::thread::current().id())
    }
}

/// Locks `m`, also after a panic poisoned it: every value guarded here is written in one
/// step, so a panic never leaves one half-updated.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a request ended (`None` while it runs): its result and, on failure, the error.
type Outcome = Option<(gantry_result, Option<Box<gantry_error>>)>;

/// State shared by a request's handle and the code running it.
#[derive(Debug)]
pub(crate) struct Shared {
    outcome: Mutex<Outcome>,
    ended: Condvar,
    cancel: Mutex<Option<oneshot::Sender<()>>>,
    cancelled: std::sync::atomic::AtomicBool,
    /// The request's size result (see `gantry_request_size`).
    pub(crate) size: AtomicU64,
    /// Bytes a stream may still hand to its chunk callback; `u64::MAX` means no limit.
    pub(crate) window: AtomicU64,
    /// Wakes a stream waiting for the caller to open its window.
    pub(crate) window_opened: tokio::sync::Notify,
}

impl Shared {
    /// New shared state and the receiver that resolves when the request is cancelled.
    pub(crate) fn new(window: u64) -> (Arc<Shared>, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        let shared = Shared {
            outcome: Mutex::new(None),
            ended: Condvar::new(),
            cancel: Mutex::new(Some(tx)),
            cancelled: std::sync::atomic::AtomicBool::new(false),
            size: AtomicU64::new(0),
            window: AtomicU64::new(window),
            window_opened: tokio::sync::Notify::new(),
        };
        (Arc::new(shared), rx)
    }

    /// Whether a cancel was asked for: checked before each chunk, because a stream with chunks
    /// already buffered would otherwise keep winning over the cancel signal.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.window_opened.notify_one();
        if let Some(tx) = lock(&self.cancel).take() {
            let _ = tx.send(());
        }
    }

    /// Waits until the request ended; the guard holds its outcome (`Some`).
    fn wait(&self) -> MutexGuard<'_, Outcome> {
        let mut outcome = lock(&self.outcome);
        while outcome.is_none() {
            outcome = self.ended.wait(outcome).unwrap_or_else(PoisonError::into_inner);
        }
        outcome
    }

    fn has_ended(&self) -> bool {
        lock(&self.outcome).is_some()
    }
}

/// The error of a request that was cancelled.
pub(crate) fn cancelled() -> gantry_error {
    gantry_error::simple(gantry_result::GANTRY_RESULT_CANCELLED, "the request was cancelled")
}

/// The caller's `user_data`, passed back to its callbacks only.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserData(pub(crate) *mut c_void);

// SAFETY: the header makes the caller promise that user_data may be used from the threads that
// run its callbacks; gantry itself never dereferences it.
unsafe impl Send for UserData {}

impl UserData {
    /// The pointer (a method, so closures capture the whole `Send` wrapper, not its field).
    pub(crate) fn get(self) -> *mut c_void {
        self.0
    }
}

/// Ends a request exactly once: calls `done`, then publishes the outcome. Dropped unfinished
/// (a panic in the request's code, or the runtime shutting down because the client was freed
/// too early), it still ends the request, so no waiter hangs.
pub(crate) struct Completion {
    shared: Arc<Shared>,
    done: gantry_done_fn,
    user_data: UserData,
    on_worker: bool,
    finished: bool,
}

impl Completion {
    pub(crate) fn new(shared: Arc<Shared>, done: gantry_done_fn, user_data: UserData, on_worker: bool) -> Self {
        Completion { shared, done, user_data, on_worker, finished: false }
    }

    pub(crate) fn finish(mut self, result: Result<(), gantry_error>) {
        self.end(result);
    }

    fn end(&mut self, result: Result<(), gantry_error>) {
        self.finished = true;
        let (code, err) = match result {
            Ok(()) => (gantry_result::GANTRY_RESULT_OK, None),
            Err(e) => (e.result(), Some(Box::new(e))),
        };
        if let Some(done) = self.done {
            let p = err.as_deref().map_or(std::ptr::null(), |e| e as *const gantry_error);
            let user = self.user_data.get();
            // SAFETY: the caller's callback with its own user_data; err lives until after the call.
            let call = || unsafe { done(user, code, p) };
            if self.on_worker {
                // A panic cannot come from C; catch anything so the outcome is still published.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| in_worker_callback(call)));
            } else {
                call();
            }
        }
        *lock(&self.shared.outcome) = Some((code, err));
        self.shared.ended.notify_all();
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        if !self.finished {
            let err = if std::thread::panicking() {
                panic_error()
            } else {
                gantry_error::simple(
                    gantry_result::GANTRY_RESULT_CANCELLED,
                    "the request was dropped because its client was freed while it ran",
                )
            };
            self.end(Err(err));
        }
    }
}

/// Where a request's code runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// A task on the client's worker threads (the `*_start` calls).
    Worker,
    /// A thread of its own, whose callbacks may block (`gantry_get_async`).
    Thread,
}

/// Starts `op` and writes its handle to `out_request`. `op` receives the shared state (to
/// record its size) and returns the request's future plus a `released` future awaited after
/// the first ended or was dropped by a cancel, before the request counts as ended (the loan of
/// caller memory to in-flight parts, for uploads).
pub(crate) fn start<F, R>(
    client: &gantry::Client,
    runner: Runner,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    window: u64,
    op: impl FnOnce(Arc<Shared>) -> (F, R),
) -> Result<(), Failure>
where
    F: Future<Output = Result<(), gantry_error>> + Send + 'static,
    R: Future<Output = ()> + Send + 'static,
{
    let out_request = out_arg(out_request, "out_request")?;
    let (shared, cancel) = Shared::new(window);
    let (fut, released) = op(shared.clone());
    let completion = Completion::new(shared.clone(), done, UserData(user_data), runner == Runner::Worker);
    let body = async move {
        let completion = completion;
        let result = match select(std::pin::pin!(fut), cancel).await {
            Either::Left((result, _)) => result,
            Either::Right(_) => Err(cancelled()),
        };
        released.await;
        completion.finish(result);
    };
    let thread = match runner {
        Runner::Worker => {
            client.runtime_handle().spawn(body);
            None
        }
        Runner::Thread => Some(
            std::thread::Builder::new()
                .name("gantry-request".into())
                .spawn(move || futures::executor::block_on(body))
                .map_err(|e| Failure::Invalid(format!("cannot start the request thread: {e}")))?,
        ),
    };
    // SAFETY: checked non-NULL, writable per the caller's contract; the caller owns the request.
    unsafe { *out_request = gantry_request { shared, thread }.into_raw() };
    Ok(())
}

/// Blocks until the request ends; returns its result (and error, if `out_err` is not NULL).
/// The done callback has returned by then. Refused with GANTRY_RESULT_INVALID_STATE (it would
/// wait for itself or stall the workers) from any callback of a `*_start` request, from a
/// credentials callback, and from the callbacks of this request.
///
/// # Safety
/// `request` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_wait(
    request: *const gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the caller passes NULL or a live request.
        let req = unsafe { borrow(request, "request") }?;
        if req.on_own_thread() {
            return Err(Failure::State(
                "gantry_request_wait called from the request's own callback would wait for itself",
            ));
        }
        match &*req.shared.wait() {
            Some((_, Some(err))) => Err(Failure::Error(err.duplicate())),
            _ => Ok(()),
        }
    })
}

/// Asks the request to stop: in-flight parts are dropped and the request ends with
/// GANTRY_RESULT_CANCELLED (unless it already ended). Returns at once; safe from any thread,
/// including the request's callbacks, and harmless after the request ended.
/// GANTRY_RESULT_NULL_PARAMETER for NULL, GANTRY_RESULT_PANIC on a panic.
///
/// # Safety
/// `request` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_cancel(request: *const gantry_request) -> gantry_result {
    ffi_fn!(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or a live request.
        unsafe { borrow(request, "request") }?.shared.cancel();
        Ok(())
    })
}

/// The size result of a request that ended successfully: the bytes written for
/// `gantry_get_start` (the object's size, or the range's bytes up to the object's end); the
/// object's size for `gantry_get_into_start`, `gantry_get_to_file_start` and
/// `gantry_head_object_start`; the bytes written for `gantry_get_range_into_start`; the bytes sent for the put calls; the
/// bytes delivered for streams (`gantry_get_async`, `gantry_get_stream_start`); 0 otherwise.
/// GANTRY_RESULT_INVALID_STATE while the request runs.
///
/// # Safety
/// `request` is live; `out_size` is writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_size(
    request: *const gantry_request,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: the caller passes NULL or a live request.
        let req = unsafe { borrow(request, "request") }?;
        let out_size = out_arg(out_size, "out_size")?;
        if !req.shared.has_ended() {
            return Err(Failure::State("the request has not ended yet"));
        }
        // SAFETY: checked non-NULL, writable per the contract.
        unsafe { *out_size = req.shared.size.load(Ordering::Acquire) };
        Ok(())
    })
}

/// Lets a stream started by `gantry_get_stream_start` hand `bytes` more to its chunk callback
/// (the read window the caller opens, as it consumes). Safe from any thread, including the
/// chunk callback; harmless after the request ended and on a stream whose window is unlimited.
/// GANTRY_RESULT_NULL_PARAMETER for NULL, GANTRY_RESULT_PANIC on a panic.
///
/// # Safety
/// `request` is live.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_open_window(request: *const gantry_request, bytes: u64) -> gantry_result {
    ffi_fn!(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or a live request.
        let req = unsafe { borrow(request, "request") }?;
        let mut current = req.shared.window.load(Ordering::Acquire);
        while current != u64::MAX {
            let next = current.saturating_add(bytes).min(u64::MAX - 1);
            match req.shared.window.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => current = now,
            }
        }
        req.shared.window_opened.notify_one();
        Ok(())
    })
}

/// Cancels the request if it is still running, waits for it to end (its done callback has
/// returned), and frees it. NULL is allowed.
///
/// Where waiting is not allowed (any callback of a `*_start` request, a credentials callback,
/// or a callback of this very request) it does not wait, and never deadlocks: it cancels the
/// request and frees the handle at once, and the request ends on its own shortly after. Its
/// done callback still runs exactly once, possibly after this returned: keep `user_data`
/// valid until then. On a panic (a bug) it returns without waiting; the handle is never used
/// again.
///
/// # Safety
/// `request` is NULL or a request not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_request_free(request: *mut gantry_request) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a request handed out once by a request-making call, freed once.
        let Some(mut req) = (unsafe { gantry_request::from_raw(request) }) else { return Ok(()) };
        req.shared.cancel();
        if may_block().is_err() || req.on_own_thread() {
            // Detached: the task (or thread) holds its own reference to the shared state and
            // ends the request itself; its thread, if any, is not joined.
            return Ok(());
        }
        drop(req.shared.wait());
        if let Some(t) = req.thread.take() {
            let _ = t.join();
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicPtr, Ordering::SeqCst};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::blocking::gantry_create_bucket;
    use crate::client::{gantry_client, gantry_client_free, gantry_client_new};
    use crate::config::{gantry_config_free, gantry_config_new, gantry_config_set};
    use crate::start::gantry_head_object_start;

    const OK: gantry_result = gantry_result::GANTRY_RESULT_OK;
    const INVALID_STATE: gantry_result = gantry_result::GANTRY_RESULT_INVALID_STATE;

    /// What a done callback shares with its test: the request to act on (set once started)
    /// and where to report what it saw.
    struct Probe {
        request: AtomicPtr<gantry_request>,
        report: Mutex<mpsc::Sender<(gantry_result, gantry_result)>>,
    }

    impl Probe {
        /// The request, once the test stored it (a callback may run before that).
        fn request(&self) -> *mut gantry_request {
            for _ in 0..5000 {
                let r = self.request.load(SeqCst);
                if !r.is_null() {
                    return r;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            panic!("the test never stored its request");
        }
    }

    /// A done callback that waits on and frees its own request: refused and detached, where
    /// either would otherwise wait for the very callback making the call.
    unsafe extern "C" fn wait_and_free_self(user: *mut c_void, result: gantry_result, _: *const gantry_error) {
        // SAFETY: every test passes a Probe that outlives its request's callbacks.
        let probe = unsafe { &*(user as *const Probe) };
        let request = probe.request();
        // SAFETY: the request is live until this free.
        let waited = unsafe { gantry_request_wait(request, null_mut()) };
        // SAFETY: freed once, here.
        unsafe { gantry_request_free(request) };
        let _ = lock(&probe.report).send((result, waited));
    }

    fn client(endpoint: &str) -> *mut gantry_client {
        let mut config = null_mut();
        let mut client = null_mut();
        let set = |config, k: &str, v: &str| {
            let (k, v) = (CString::new(k).unwrap(), CString::new(v).unwrap());
            // SAFETY: a live configuration and NUL-terminated strings.
            assert_eq!(unsafe { gantry_config_set(config, k.as_ptr(), v.as_ptr(), null_mut()) }, OK, "{k:?}");
        };
        // SAFETY: writable out-pointers; the configuration is freed once.
        unsafe {
            assert_eq!(gantry_config_new(&mut config, null_mut()), OK);
            set(config, "endpoint_url", endpoint);
            set(config, "access_key_id", gantry_server::DEFAULT_ACCESS_KEY);
            set(config, "secret_access_key", gantry_server::DEFAULT_SECRET_KEY);
            set(config, "worker_threads", "2");
            assert_eq!(gantry_client_new(config, &mut client, null_mut()), OK);
            gantry_config_free(config);
        }
        client
    }

    #[test]
    fn wait_and_free_from_a_worker_callback_refuse_to_block_instead_of_deadlocking() {
        let dir = tempfile::tempdir().unwrap();
        let config = gantry_server::ServerConfig::new(dir.path().join("s3"), "127.0.0.1:0".parse().unwrap());
        let server = gantry_server::start_background(config, 2).unwrap();
        let client = client(&server.endpoint_url());
        let (tx, rx) = mpsc::channel();
        let probe = Box::new(Probe { request: AtomicPtr::new(null_mut()), report: Mutex::new(tx) });
        let user = &*probe as *const Probe as *mut c_void;
        let mut request = null_mut();
        // SAFETY: live client, NUL-terminated strings, the probe outlives the request.
        unsafe {
            assert_eq!(gantry_create_bucket(client, c"free-test".as_ptr(), null_mut()), OK);
            let r = gantry_head_object_start(
                client,
                c"free-test".as_ptr(),
                c"missing".as_ptr(),
                Some(wait_and_free_self),
                user,
                &mut request,
                null_mut(),
            );
            assert_eq!(r, OK);
        }
        probe.request.store(request, SeqCst);
        let seen = rx.recv_timeout(Duration::from_secs(20)).expect("the done callback deadlocked in wait or free");
        assert_eq!(seen, (gantry_result::GANTRY_RESULT_NOT_FOUND, INVALID_STATE));
        // SAFETY: the request was freed by its callback; the client is freed once.
        unsafe { gantry_client_free(client) };
    }

    #[test]
    #[allow(deprecated)]
    fn wait_and_free_from_a_request_thread_callback_refuse_to_block_on_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let config = gantry_server::ServerConfig::new(dir.path().join("s3"), "127.0.0.1:0".parse().unwrap());
        let server = gantry_server::start_background(config, 2).unwrap();
        let client = client(&server.endpoint_url());
        let (tx, rx) = mpsc::channel();
        let probe = Box::new(Probe { request: AtomicPtr::new(null_mut()), report: Mutex::new(tx) });
        let user = &*probe as *const Probe as *mut c_void;
        let mut request = null_mut();
        // SAFETY: live client, NUL-terminated strings, the probe outlives the request.
        unsafe {
            let r = crate::stream::gantry_get_async(
                client,
                c"free-test".as_ptr(),
                c"missing".as_ptr(),
                None,
                Some(wait_and_free_self),
                user,
                &mut request,
                null_mut(),
            );
            assert_eq!(r, OK);
        }
        probe.request.store(request, SeqCst);
        let seen = rx.recv_timeout(Duration::from_secs(20)).expect("the done callback deadlocked in wait or free");
        assert_eq!(seen.1, INVALID_STATE, "waiting on itself is refused");
        // SAFETY: the request was freed by its callback; the client is freed once.
        unsafe { gantry_client_free(client) };
    }
}
