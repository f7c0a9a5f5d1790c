//! A credentials provider written in C: `gantry_config_set_credentials_provider` plugs a
//! callback into the engine's `ProvideCredentials` seam, so a program with its own credential
//! machinery (a vault, its language's AWS SDK, a sidecar) gets the engine's cache, background
//! refresh ahead of expiry, single flight and static stability.
//!
//! Contract, as the header states it:
//! - **Thread.** The callback runs on a thread of the client's blocking pool (`spawn_blocking`),
//!   never on a worker and never on the thread that made a gantry call: it may block (a vault
//!   call, a subprocess) without stalling transfers.
//! - **No concurrency.** One mutex per provider: the callback never runs concurrently with
//!   itself, even for several clients built from one configuration, so `user_data` needs no
//!   lock of its own. (The engine's single flight is per client; and a fetch whose waiter was
//!   cancelled keeps running on its thread while a new one may start.)
//! - **Reentrancy.** Blocking gantry calls from the callback fail with
//!   GANTRY_RESULT_INVALID_STATE: on the client it serves they would wait for the credentials
//!   being fetched.
//! - **Ownership.** Strings given to `gantry_credentials_out_set` are copied. `user_data` is
//!   handed back to `release` exactly once, when the last holder (the configuration, a client,
//!   a running callback) lets go: never while the callback runs, never before it.
//! - **Panics.** None crosses the boundary: exports go through `ffi_fn!`, the callback call
//!   is wrapped in `catch_unwind` (a C callback cannot unwind; the guard is for our side).

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use gantry::{Credentials, CredentialsSource, ErrorKind, Operation, ProvideCredentials};

use crate::config::gantry_config;
use crate::error::{gantry_error, gantry_result};
use crate::guard::{in_credentials_callback, str_arg, Failure};
use crate::handle::borrow_mut;
use crate::request::UserData;

/// Fetches credentials for the engine (see `gantry_config_set_credentials_provider` for the
/// thread, reentrancy and ownership rules). Fill `out` with `gantry_credentials_out_set` and
/// return 0; or return non-zero to fail this fetch, optionally after
/// `gantry_credentials_out_fail(out, "why")`. `out` is lent for the duration of the call only.
/// An int rather than a `gantry_result`: a C enum may carry any int, which Rust must not read
/// as an enum.
pub type gantry_credentials_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, out: *mut gantry_credentials_out) -> i32>;

/// Gives `user_data` back to its owner once gantry holds no more reference to it.
pub type gantry_user_data_free_fn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// Where a credentials callback puts its answer. Lent to the callback for the duration of the
/// call (never keep the pointer); filled through `gantry_credentials_out_set` or
/// `gantry_credentials_out_fail` from the callback's thread. Not thread-safe.
#[derive(Debug, Default)]
pub struct gantry_credentials_out {
    credentials: Option<Credentials>,
    /// Why the last `gantry_credentials_out_set` refused its arguments.
    refused: Option<String>,
    /// The message of `gantry_credentials_out_fail`.
    failure: Option<String>,
}

/// How every message of a failed fetch starts, so it names where the failure came from.
const WHO: &str = "credentials callback";

fn callback_error(message: impl std::fmt::Display) -> gantry::Error {
    gantry::Error::new(ErrorKind::Credentials, Operation::FetchCredentials, format!("{WHO}: {message}"))
}

impl gantry_credentials_out {
    /// What a fetch whose callback returned `code` yields.
    fn finish(self, code: i32) -> gantry::Result<Credentials> {
        if code != 0 {
            let why = self.failure.or(self.refused).unwrap_or_else(|| format!("returned {code} (no message set)"));
            return Err(callback_error(why));
        }
        match (self.credentials, self.refused) {
            (Some(c), _) => Ok(c),
            (None, Some(refused)) => Err(callback_error(format!(
                "returned 0, but gantry_credentials_out_set refused its credentials: {refused}"
            ))),
            (None, None) => Err(callback_error("returned 0 without calling gantry_credentials_out_set")),
        }
    }
}

/// Stores the credentials a callback fetched; the library copies the strings (the caller keeps
/// its buffers). `access_key_id` and `secret_access_key` must not be empty. `session_token` is
/// NULL (or "") for long-term keys. `expiry_unix_seconds` is when temporary credentials stop
/// working, in seconds since 1970-01-01 UTC, or 0 for keys that do not expire: with an expiry
/// the engine asks again ahead of it (5 to 6 minutes before, or after half of a shorter
/// lifetime), so no request waits for a refresh; an expiry already past makes the engine ask
/// again whenever a request needs credentials. Calling it again replaces what an earlier call
/// stored. Refused arguments (NULL or empty keys, strings not UTF-8, a negative expiry) return
/// GANTRY_RESULT_NULL_PARAMETER or GANTRY_RESULT_INVALID_ARGUMENT and clear what was stored,
/// so a callback that returns 0 anyway fails its fetch with the reason.
///
/// # Safety
/// `out` is the object lent to the running callback; strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_credentials_out_set(
    out: *mut gantry_credentials_out,
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    session_token: *const c_char,
    expiry_unix_seconds: i64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: the caller passes NULL or the object lent to its running callback.
        let out = unsafe { borrow_mut(out, "out") }?;
        // SAFETY: NULL or NUL-terminated strings that outlive the call (contract above).
        let parsed = unsafe { credentials_arg(access_key_id, secret_access_key, session_token, expiry_unix_seconds) };
        out.credentials = None;
        match parsed {
            Ok(c) => {
                out.credentials = Some(c);
                out.refused = None;
                Ok(())
            }
            Err(f) => {
                let e = f.into_error();
                out.refused = Some(e.message().into_owned());
                Err(Failure::Error(e))
            }
        }
    })
}

/// Checks and copies the arguments of `gantry_credentials_out_set`.
///
/// # Safety
/// Strings are NULL or NUL-terminated and outlive the call.
unsafe fn credentials_arg(
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    session_token: *const c_char,
    expiry_unix_seconds: i64,
) -> Result<Credentials, Failure> {
    // SAFETY: forwarded contract.
    let (id, secret) =
        unsafe { (str_arg(access_key_id, "access_key_id")?, str_arg(secret_access_key, "secret_access_key")?) };
    if id.is_empty() || secret.is_empty() {
        return Err(Failure::Invalid("access_key_id and secret_access_key must not be empty".into()));
    }
    let mut c = Credentials::new(id, secret);
    if !session_token.is_null() {
        // SAFETY: forwarded contract.
        let token = unsafe { str_arg(session_token, "session_token")? };
        if !token.is_empty() {
            c = c.with_session_token(token);
        }
    }
    match u64::try_from(expiry_unix_seconds) {
        Ok(0) => {}
        Ok(secs) => c = c.with_expiry(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
        Err(_) => return Err(Failure::Invalid(format!("expiry_unix_seconds {expiry_unix_seconds} is negative"))),
    }
    Ok(c)
}

/// Gives the reason a callback fails its fetch (call it, then return non-zero). The message is
/// copied (bytes that are not UTF-8 are replaced) and becomes part of the
/// GANTRY_RESULT_CREDENTIALS error of the requests that needed the credentials, after
/// "credentials callback: ". Never put secrets in it. GANTRY_RESULT_NULL_PARAMETER when `out`
/// or `message` is NULL, GANTRY_RESULT_PANIC on a panic.
///
/// # Safety
/// `out` is the object lent to the running callback; `message` is NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn gantry_credentials_out_fail(
    out: *mut gantry_credentials_out,
    message: *const c_char,
) -> gantry_result {
    ffi_fn!(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or the object lent to its running callback.
        let out = unsafe { borrow_mut(out, "out") }?;
        if message.is_null() {
            return Err(Failure::Null("message"));
        }
        // SAFETY: non-NULL and NUL-terminated per the contract.
        out.failure = Some(unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned());
        Ok(())
    })
}

/// Makes clients built from `config` get their credentials from `fetch(user_data, out)`,
/// replacing any other credentials setting (explicit keys, profile, anonymous, an earlier
/// provider; a later `gantry_config_set` of one of those keys replaces this provider in turn).
/// Each client keeps the credentials in its cache and calls `fetch` again only when it needs to:
/// on first use, ahead of the expiry the callback gave, or once when the server refuses them
/// as expired. A failed fetch fails the requests waiting for it with GANTRY_RESULT_CREDENTIALS
/// (unless the last good credentials are still within 10 minutes past their expiry: those stay
/// in use, and the callback is asked again every 10 s).
///
/// Thread: `fetch` runs on a thread of the client's blocking pool (named "gantry-worker"),
/// never on a worker thread and never on the thread that made a gantry call. It never runs
/// concurrently with itself, also when several clients were built from this configuration.
/// It may block (call a vault, run a process): requests that need credentials wait for it
/// meanwhile, so bound your own waits. Reentrancy: blocking gantry calls made from `fetch`
/// fail with GANTRY_RESULT_INVALID_STATE (on the client it serves they would deadlock); do not
/// free the client or this configuration from it. It must not unwind (no C++ exception or
/// longjmp may leave it).
///
/// Ownership: `user_data` is consumed. `release(user_data)` (may be NULL) is called exactly
/// once, when gantry holds no more reference: once this configuration was freed or its
/// provider replaced, and every client built from it was freed. A client frees its engine
/// threads asynchronously, so `release` may run shortly after `gantry_client_free` returned,
/// on an engine thread; it never runs while `fetch` runs, and `fetch` is never called after
/// it. Keep `user_data` valid until `release`. On failure (NULL `config` or `fetch`),
/// `release(user_data)` has been called before this returns.
///
/// # Safety
/// `config` is NULL or a live configuration not used concurrently; `fetch` and `release` may
/// be called from any thread with `user_data`, as described above.
#[no_mangle]
pub unsafe extern "C" fn gantry_config_set_credentials_provider(
    config: *mut gantry_config,
    fetch: gantry_credentials_fn,
    user_data: *mut c_void,
    release: gantry_user_data_free_fn,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // Owned from here: dropped (releasing user_data) on every early return below.
        let owned = Callback { fetch, user_data: UserData(user_data), release, serial: Mutex::new(()) };
        // SAFETY: the caller passes NULL or a live configuration it does not use concurrently.
        let config = unsafe { borrow_mut(config, "config") }?;
        if owned.fetch.is_none() {
            return Err(Failure::Null("fetch"));
        }
        let provider = CallbackProvider(Arc::new(owned));
        config.builder = config.builder.clone().credentials(CredentialsSource::Provider(Arc::new(provider)));
        Ok(())
    })
}

/// The caller's callback and what it owns.
struct Callback {
    fetch: gantry_credentials_fn,
    user_data: UserData,
    release: gantry_user_data_free_fn,
    /// Held while `fetch` runs: it never runs concurrently with itself.
    serial: Mutex<()>,
}

// SAFETY: the header makes the caller promise that `fetch` and `release` may be called with
// user_data from any thread; gantry never dereferences user_data, and `serial` keeps calls of
// `fetch` one at a time.
unsafe impl Sync for Callback {}

impl Callback {
    /// Runs the callback once (blocking) and turns its answer into credentials.
    fn call(&self) -> gantry::Result<Credentials> {
        let Some(fetch) = self.fetch else {
            return Err(callback_error("no callback"));
        };
        let _serial = self.serial.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = gantry_credentials_out::default();
        let p: *mut gantry_credentials_out = &mut out;
        let user = self.user_data.get();
        // SAFETY: the caller's callback with its own user_data; `out` lives through the call.
        let code = catch_unwind(AssertUnwindSafe(|| in_credentials_callback(|| unsafe { fetch(user, p) })));
        match code {
            Ok(code) => out.finish(code),
            Err(_) => Err(callback_error("panicked")),
        }
    }
}

impl Drop for Callback {
    fn drop(&mut self) {
        if let Some(release) = self.release {
            // SAFETY: the caller's release function, called exactly once (Drop runs once), after
            // the last call of `fetch` returned (every call holds a reference).
            unsafe { release(self.user_data.get()) };
        }
    }
}

/// The engine's view of a C callback. Clones of the inner `Arc` live in the configuration's
/// builder, in every client's credentials cache and in each running fetch.
struct CallbackProvider(Arc<Callback>);

impl std::fmt::Debug for CallbackProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackProvider")
            .field("fetch", &self.0.fetch.map(|f| f as *const c_void))
            .field("user_data", &self.0.user_data.get())
            .finish()
    }
}

impl ProvideCredentials for CallbackProvider {
    fn provide_credentials(&self) -> BoxFuture<'_, gantry::Result<Credentials>> {
        let callback = self.0.clone();
        Box::pin(async move {
            // On the blocking pool: a slow callback never stalls a worker. The closure owns a
            // reference, so user_data outlives a callback still running when its client is freed.
            match tokio::runtime::Handle::try_current() {
                Ok(rt) => match rt.spawn_blocking(move || callback.call()).await {
                    Ok(result) => result,
                    Err(e) if e.is_panic() => Err(callback_error("panicked")),
                    Err(_) => Err(callback_error("not run: the client is shutting down")),
                },
                Err(_) => callback.call(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;
    use std::ptr::null_mut;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering::SeqCst};

    use super::*;
    use crate::blocking::{gantry_create_bucket, gantry_head_object, gantry_put_buffer};
    use crate::client::{gantry_client, gantry_client_free, gantry_client_new};
    use crate::config::{gantry_config_free, gantry_config_new, gantry_config_set};
    use crate::error::gantry_error_free;

    const OK: gantry_result = gantry_result::GANTRY_RESULT_OK;
    const SECRET: &str = "gantry-secret-key";

    /// What the test callbacks share with a test (their user_data).
    #[derive(Default)]
    struct Probe {
        calls: AtomicU32,
        releases: AtomicU32,
        running: AtomicBool,
        overlapped: AtomicBool,
        /// Rotate keys: each call inserts a new key expiring after `lifetime_secs` here.
        ring: Option<gantry_server::KeyRing>,
        lifetime_secs: i64,
        /// When set, the callback tries a blocking call on it (must be refused).
        client: AtomicPtr<gantry_client>,
        reentrant: Mutex<Option<gantry_result>>,
        threads: Mutex<Vec<(std::thread::ThreadId, String)>>,
        /// How the callback answers: 0 keys, 1 fail with a message, 2 return 0 without keys,
        /// 3 a refused set then 0, 4 return 7 without a message.
        mode: u32,
        /// How long the callback takes beyond its usual 20 ms.
        delay: Duration,
        released_while_running: AtomicBool,
    }

    impl Probe {
        fn user(&self) -> *mut c_void {
            self as *const Probe as *mut c_void
        }
    }

    fn now_secs() -> i64 {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() as i64
    }

    unsafe extern "C" fn fetch(user: *mut c_void, out: *mut gantry_credentials_out) -> i32 {
        // SAFETY: every test passes a Probe that outlives the provider's release.
        let p = unsafe { &*(user as *const Probe) };
        if p.running.swap(true, SeqCst) {
            p.overlapped.store(true, SeqCst);
        }
        let n = p.calls.fetch_add(1, SeqCst) + 1;
        let me = std::thread::current();
        p.threads.lock().unwrap().push((me.id(), me.name().unwrap_or("").to_string()));
        let client = p.client.load(SeqCst);
        if !client.is_null() {
            // SAFETY: a live client; the call must be refused before it touches anything.
            let r = unsafe { gantry_head_object(client, c"b".as_ptr(), c"k".as_ptr(), null_mut(), null_mut()) };
            *p.reentrant.lock().unwrap() = Some(r);
        }
        std::thread::sleep(Duration::from_millis(20) + p.delay); // a window for overlapping calls
        let (id, expiry) = match &p.ring {
            Some(ring) => {
                let (id, expiry) = (format!("key-{n}"), now_secs() + p.lifetime_secs);
                ring.insert(&id, SECRET, Some(SystemTime::UNIX_EPOCH + Duration::from_secs(expiry as u64)));
                (id, expiry)
            }
            None => ("gantry".to_string(), now_secs() + 3600),
        };
        let (id, secret) = (CString::new(id).unwrap(), CString::new(SECRET).unwrap());
        // SAFETY: `out` is lent for this call; the strings outlive it.
        let code = unsafe {
            match p.mode {
                0 => {
                    (gantry_credentials_out_set(out, id.as_ptr(), secret.as_ptr(), c"tok".as_ptr(), expiry, null_mut())
                        != OK) as i32
                }
                1 => {
                    gantry_credentials_out_fail(out, c"vault is sealed".as_ptr());
                    1
                }
                2 => 0,
                3 => {
                    gantry_credentials_out_set(out, c"".as_ptr(), secret.as_ptr(), null_mut(), 0, null_mut());
                    0
                }
                _ => 7,
            }
        };
        p.running.store(false, SeqCst);
        code
    }

    unsafe extern "C" fn release(user: *mut c_void) {
        // SAFETY: as in `fetch`.
        let p = unsafe { &*(user as *const Probe) };
        if p.running.load(SeqCst) {
            p.released_while_running.store(true, SeqCst);
        }
        p.releases.fetch_add(1, SeqCst);
    }

    fn wait_until(what: &str, f: impl Fn() -> bool) {
        for _ in 0..500 {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("timed out waiting until {what}");
    }

    fn set(config: *mut gantry_config, key: &str, value: &str) {
        let (k, v) = (CString::new(key).unwrap(), CString::new(value).unwrap());
        // SAFETY: a live configuration and NUL-terminated strings.
        assert_eq!(unsafe { gantry_config_set(config, k.as_ptr(), v.as_ptr(), null_mut()) }, OK, "{key}");
    }

    /// A configuration for `endpoint` whose credentials come from `fetch` with `probe`.
    fn config_with(endpoint: &str, probe: &Probe) -> *mut gantry_config {
        let mut config = null_mut();
        // SAFETY: writable out-pointer; the probe outlives its release (every test waits for it).
        unsafe {
            assert_eq!(gantry_config_new(&mut config, null_mut()), OK);
            set(config, "endpoint_url", endpoint);
            set(config, "worker_threads", "2");
            let r =
                gantry_config_set_credentials_provider(config, Some(fetch), probe.user(), Some(release), null_mut());
            assert_eq!(r, OK);
        }
        config
    }

    fn client_of(config: *const gantry_config) -> *mut gantry_client {
        let mut client = null_mut();
        // SAFETY: a live configuration; writable out-pointer.
        assert_eq!(unsafe { gantry_client_new(config, &mut client, null_mut()) }, OK);
        client
    }

    /// The result and message of a HeadObject.
    fn head(client: *const gantry_client, key: &str) -> (gantry_result, String) {
        let key = CString::new(key).unwrap();
        let mut err = null_mut();
        // SAFETY: a live client; NUL-terminated strings; err is ours to free.
        unsafe {
            let r = gantry_head_object(client, c"creds".as_ptr(), key.as_ptr(), null_mut(), &mut err);
            let message = err.as_ref().map(|e| e.message().into_owned()).unwrap_or_default();
            gantry_error_free(err);
            (r, message)
        }
    }

    fn server(ring: gantry_server::KeyRing) -> (gantry_server::BackgroundServer, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let config = gantry_server::ServerConfig::new(dir.path().join("s3"), "127.0.0.1:0".parse().unwrap());
        (gantry_server::start_background(config.with_keyring(ring), 2).unwrap(), dir)
    }

    #[test]
    fn one_fetch_on_the_blocking_pool_for_many_requests_and_one_release() {
        let (srv, _dir) = server(gantry_server::KeyRing::single("gantry", SECRET));
        let probe = Box::new(Probe::default());
        let config = config_with(&srv.endpoint_url(), &probe);
        let client = client_of(config);
        probe.client.store(client, SeqCst);
        // SAFETY: a live client and NUL-terminated strings.
        unsafe {
            assert_eq!(gantry_create_bucket(client, c"creds".as_ptr(), null_mut()), OK);
            for _ in 0..10 {
                assert_eq!(
                    gantry_put_buffer(client, c"creds".as_ptr(), c"k".as_ptr(), [7u8].as_ptr(), 1, null_mut()),
                    OK
                );
            }
        }
        for _ in 0..10 {
            assert_eq!(head(client, "k").0, OK);
        }
        assert_eq!(probe.calls.load(SeqCst), 1, "one fetch serves every request until the expiry nears");
        assert_eq!(*probe.reentrant.lock().unwrap(), Some(gantry_result::GANTRY_RESULT_INVALID_STATE));
        let (thread, name) = probe.threads.lock().unwrap()[0].clone();
        assert_ne!(thread, std::thread::current().id());
        assert_eq!(name, "gantry-worker", "the client's blocking pool");
        probe.client.store(null_mut(), SeqCst);

        // Two more clients from the same configuration, in parallel: a fetch each, one at a time.
        let (a, b) = (client_of(config) as usize, client_of(config) as usize);
        let both: Vec<_> = [a, b]
            .into_iter()
            .map(|c| std::thread::spawn(move || (0..5).all(|_| head(c as *const gantry_client, "k").0 == OK)))
            .collect();
        assert!(both.into_iter().all(|t| t.join().unwrap()));
        assert_eq!(probe.calls.load(SeqCst), 3);
        assert!(!probe.overlapped.load(SeqCst), "the callback never runs concurrently with itself");

        // SAFETY: live handles, freed once.
        unsafe {
            gantry_client_free(client);
            gantry_client_free(a as *mut gantry_client);
            gantry_config_free(config);
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(probe.releases.load(SeqCst), 0, "a client still holds the provider");
        // SAFETY: the last client, freed once.
        unsafe { gantry_client_free(b as *mut gantry_client) };
        wait_until("the provider is released", || probe.releases.load(SeqCst) == 1);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(probe.releases.load(SeqCst), 1, "released exactly once");
    }

    #[test]
    fn temporary_keys_are_refreshed_ahead_of_their_expiry() {
        let ring = gantry_server::KeyRing::new();
        ring.insert("setup", SECRET, None);
        let (srv, _dir) = server(ring.clone());
        let probe = Box::new(Probe { ring: Some(ring.clone()), lifetime_secs: 3, ..Probe::default() });
        let config = config_with(&srv.endpoint_url(), &probe);
        let client = client_of(config);
        // SAFETY: a live client and NUL-terminated strings.
        unsafe {
            assert_eq!(gantry_create_bucket(client, c"creds".as_ptr(), null_mut()), OK);
            assert_eq!(gantry_put_buffer(client, c"creds".as_ptr(), c"k".as_ptr(), [7u8].as_ptr(), 1, null_mut()), OK);
        }
        ring.remove("setup");
        // Seven seconds on keys that live two to three: every request works.
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(7) {
            let (r, message) = head(client, "k");
            assert_eq!(r, OK, "{message}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let calls = probe.calls.load(SeqCst);
        assert!((3..20).contains(&calls), "{calls} fetches");
        // SAFETY: live handles, freed once.
        unsafe {
            gantry_client_free(client);
            gantry_config_free(config);
        }
        wait_until("the provider is released", || probe.releases.load(SeqCst) == 1);
    }

    #[test]
    fn a_client_freed_during_a_fetch_releases_after_the_callback_returned() {
        let probe = Box::new(Probe { delay: Duration::from_secs(1), ..Probe::default() });
        let config = config_with("http://127.0.0.1:9", &probe);
        let client = client_of(config);
        let mut request = null_mut();
        // SAFETY: live handles; the request is freed (cancelled) before its client.
        unsafe {
            let r = crate::start::gantry_head_object_start(
                client,
                c"b".as_ptr(),
                c"k".as_ptr(),
                None,
                null_mut(),
                &mut request,
                null_mut(),
            );
            assert_eq!(r, OK);
            wait_until("the callback runs", || probe.running.load(SeqCst));
            crate::request::gantry_request_free(request);
            gantry_client_free(client);
            gantry_config_free(config);
        }
        assert!(probe.running.load(SeqCst), "the callback outlives its client");
        assert_eq!(probe.releases.load(SeqCst), 0, "not released while the callback runs");
        wait_until("the provider is released", || probe.releases.load(SeqCst) == 1);
        assert!(!probe.released_while_running.load(SeqCst));
        assert_eq!(probe.calls.load(SeqCst), 1);
    }

    #[test]
    fn a_failed_fetch_fails_the_request_and_names_the_callback() {
        let cases: [(u32, &str); 4] = [
            (1, "credentials callback: vault is sealed"),
            (2, "credentials callback: returned 0 without calling gantry_credentials_out_set"),
            (3, "refused its credentials: access_key_id and secret_access_key must not be empty"),
            (4, "credentials callback: returned 7 (no message set)"),
        ];
        for (mode, want) in cases {
            let probe = Box::new(Probe { mode, ..Probe::default() });
            // Nothing listens there: the request fails before it connects.
            let config = config_with("http://127.0.0.1:9", &probe);
            let client = client_of(config);
            let (r, message) = head(client, "k");
            assert_eq!(r, gantry_result::GANTRY_RESULT_CREDENTIALS, "mode {mode}: {message}");
            assert!(message.contains(want), "mode {mode}: {message}");
            // SAFETY: live handles, freed once.
            unsafe {
                gantry_client_free(client);
                gantry_config_free(config);
            }
            wait_until("the provider is released", || probe.releases.load(SeqCst) == 1);
        }
    }

    #[test]
    fn release_runs_once_when_replaced_refused_or_never_used() {
        let probe = Probe::default();
        let released = || probe.releases.load(SeqCst);
        let mut config = null_mut();
        // SAFETY: writable out-pointers, live configuration, probe outlives every release.
        unsafe {
            let r = gantry_config_set_credentials_provider(
                null_mut(),
                Some(fetch),
                probe.user(),
                Some(release),
                null_mut(),
            );
            assert_eq!((r, released()), (gantry_result::GANTRY_RESULT_NULL_PARAMETER, 1), "consumed on failure");
            assert_eq!(gantry_config_new(&mut config, null_mut()), OK);
            let r = gantry_config_set_credentials_provider(config, None, probe.user(), Some(release), null_mut());
            assert_eq!((r, released()), (gantry_result::GANTRY_RESULT_NULL_PARAMETER, 2));
            let r = gantry_config_set_credentials_provider(config, Some(fetch), null_mut(), None, null_mut());
            assert_eq!(r, OK, "release may be NULL");
            let r =
                gantry_config_set_credentials_provider(config, Some(fetch), probe.user(), Some(release), null_mut());
            assert_eq!((r, released()), (OK, 2));
            let r =
                gantry_config_set_credentials_provider(config, Some(fetch), probe.user(), Some(release), null_mut());
            assert_eq!((r, released()), (OK, 3), "replaced by another provider");
        }
        set(config, "access_key_id", "AK");
        assert_eq!(released(), 4, "replaced by explicit keys");
        // SAFETY: as above.
        unsafe {
            let r =
                gantry_config_set_credentials_provider(config, Some(fetch), probe.user(), Some(release), null_mut());
            assert_eq!((r, released()), (OK, 4));
            gantry_config_free(config);
        }
        assert_eq!(released(), 5, "freed with its configuration, no client built");
        assert_eq!(probe.calls.load(SeqCst), 0);
    }

    #[test]
    fn out_set_checks_its_arguments() {
        let mut out = gantry_credentials_out::default();
        let p: *mut gantry_credentials_out = &mut out;
        let null = gantry_result::GANTRY_RESULT_NULL_PARAMETER;
        let invalid = gantry_result::GANTRY_RESULT_INVALID_ARGUMENT;
        // SAFETY: `out` is live; strings are NULL or NUL-terminated.
        unsafe {
            assert_eq!(gantry_credentials_out_set(p, c"AK".as_ptr(), c"S".as_ptr(), c"".as_ptr(), 0, null_mut()), OK);
            assert_eq!((*p).credentials, Some(Credentials::new("AK", "S")), "an empty token is no token");
            let r =
                gantry_credentials_out_set(p, c"AK".as_ptr(), c"S".as_ptr(), c"T".as_ptr(), 1_900_000_000, null_mut());
            assert_eq!(r, OK);
            let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000);
            assert_eq!((*p).credentials, Some(Credentials::new("AK", "S").with_session_token("T").with_expiry(when)));
            assert_eq!(gantry_credentials_out_set(p, null_mut(), c"S".as_ptr(), null_mut(), 0, null_mut()), null);
            assert_eq!((*p).credentials, None, "a refused set clears what was stored");
            assert_eq!(gantry_credentials_out_set(p, c"AK".as_ptr(), c"".as_ptr(), null_mut(), 0, null_mut()), invalid);
            let mut err = null_mut();
            assert_eq!(gantry_credentials_out_set(p, c"AK".as_ptr(), c"S".as_ptr(), null_mut(), -1, &mut err), invalid);
            assert!((*err).message().contains("negative"));
            gantry_error_free(err);
            assert_eq!(
                gantry_credentials_out_set(null_mut(), c"AK".as_ptr(), c"S".as_ptr(), null_mut(), 0, null_mut()),
                null
            );
            assert_eq!(gantry_credentials_out_fail(p, null_mut()), null);
            assert_eq!(gantry_credentials_out_fail(null_mut(), c"x".as_ptr()), null);
            assert_eq!(gantry_credentials_out_fail(p, c"why \xff".as_ptr()), OK);
        }
        assert_eq!(out.failure.as_deref(), Some("why \u{fffd}"));
    }
}
