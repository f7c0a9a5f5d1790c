//! The refreshing credentials cache every request signs through.
//!
//! - **Fast path:** a read lock and an `Arc` clone; the SigV4 identity is built once per
//!   refresh, not per request.
//! - **Single flight:** one fetch at a time (an async mutex); a thousand part requests that
//!   find no usable credentials wait for the same fetch.
//! - **Ahead of expiry:** temporary credentials are refreshed in the background once they
//!   enter their refresh window (5 minutes plus up to a minute of jitter before expiry, or
//!   the second half of a short lifetime), so no request waits for a refresh.
//! - **Static stability:** when the source fails, the last good credentials stay in use for
//!   up to [`STALE_GRACE`] past their expiry, with a warning, and the source is asked again
//!   at most every [`RETRY_AFTER_FAILURE`]; the server is the judge of whether they still work.
//! - **Forced refresh:** a request refused with `ExpiredToken` / `InvalidToken` /
//!   `TokenRefreshRequired` calls [`CredentialsCache::invalidate`] with the generation it
//!   signed with; only the first such call fetches.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use aws_smithy_runtime_api::client::identity::Identity;
use rand::Rng;

use super::{time::format_rfc3339, Credentials, ProvideCredentials};
use crate::error::{Error, Result};

/// How long before expiry a refresh starts (plus jitter, at most half the lifetime).
const REFRESH_AHEAD: Duration = Duration::from_secs(300);
/// Jitter added to [`REFRESH_AHEAD`], so a fleet does not refresh in lockstep.
const REFRESH_JITTER: Duration = Duration::from_secs(60);
/// Credentials are not used this close to their expiry (clock skew, request in flight).
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);
/// How long past expiry the last good credentials stay in use while the source fails.
pub(crate) const STALE_GRACE: Duration = Duration::from_secs(600);
/// How often a failing source is asked again.
pub(crate) const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// Where the time comes from: the system clock, or a test's.
pub(crate) type Clock = Arc<dyn Fn() -> SystemTime + Send + Sync>;

/// One set of credentials as the signer uses them.
#[derive(Debug)]
pub(crate) struct Cached {
    pub(crate) identity: Identity,
    /// Increases with every fetch; a request reports the generation it signed with.
    pub(crate) generation: u64,
    expiry: Option<SystemTime>,
    refresh_at: Option<SystemTime>,
    /// The end of the usable life, before the margin.
    usable_until: Option<SystemTime>,
}

enum Freshness {
    Fresh,
    RefreshSoon,
    Expired,
}

impl Cached {
    fn new(c: Credentials, generation: u64, now: SystemTime) -> Self {
        let (refresh_at, usable_until) = match c.expiry {
            None => (None, None),
            Some(expiry) => {
                let life = expiry.duration_since(now).unwrap_or_default();
                let jitter = rand::rng().random_range(Duration::ZERO..=REFRESH_JITTER);
                let ahead = (REFRESH_AHEAD + jitter).min(life / 2);
                (Some(expiry - ahead), Some(expiry - EXPIRY_MARGIN.min(life / 4)))
            }
        };
        let identity = aws_credential_types::Credentials::new(
            c.access_key_id,
            c.secret_access_key,
            c.session_token,
            None,
            "gantry",
        )
        .into();
        Cached { identity, generation, expiry: c.expiry, refresh_at, usable_until }
    }

    /// The access key id (not secret: it names the key pair in logs and cache keys).
    pub(crate) fn access_key_id(&self) -> &str {
        self.identity.data::<aws_credential_types::Credentials>().map_or("", |c| c.access_key_id())
    }

    /// Whether these are temporary credentials (with an expiry), which a refresh can renew.
    pub(crate) fn is_temporary(&self) -> bool {
        self.expiry.is_some()
    }

    fn freshness(&self, now: SystemTime) -> Freshness {
        match (self.refresh_at, self.usable_until) {
            (Some(_), Some(until)) if now >= until => Freshness::Expired,
            (Some(at), _) if now >= at => Freshness::RefreshSoon,
            _ => Freshness::Fresh,
        }
    }

    /// Whether these may still be handed out while the source fails.
    fn within_grace(&self, now: SystemTime) -> bool {
        self.expiry.is_none_or(|e| now < e + STALE_GRACE)
    }
}

#[derive(Default)]
struct State {
    current: Option<Arc<Cached>>,
    /// After a failed fetch: not before this time again (unless nothing usable is held).
    next_attempt: Option<SystemTime>,
    last_error: Option<String>,
}

/// Counters of the cache, for metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheStats {
    pub(crate) refreshes: u64,
    pub(crate) failures: u64,
    pub(crate) forced: u64,
}

/// Credentials kept fresh for one client.
pub(crate) struct CredentialsCache {
    provider: Arc<dyn ProvideCredentials>,
    source: &'static str,
    state: RwLock<State>,
    fetch: tokio::sync::Mutex<()>,
    background: AtomicBool,
    generation: AtomicU64,
    refreshes: AtomicU64,
    failures: AtomicU64,
    forced: AtomicU64,
    clock: Clock,
}

impl std::fmt::Debug for CredentialsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialsCache").field("provider", &self.provider).field("source", &self.source).finish()
    }
}

impl CredentialsCache {
    /// A cache in front of `provider`; `source` names it ("profile", "imds", ...).
    pub(crate) fn new(provider: Arc<dyn ProvideCredentials>, source: &'static str) -> Arc<Self> {
        Self::with_clock(provider, source, Arc::new(SystemTime::now))
    }

    pub(crate) fn with_clock(provider: Arc<dyn ProvideCredentials>, source: &'static str, clock: Clock) -> Arc<Self> {
        Arc::new(CredentialsCache {
            provider,
            source,
            state: RwLock::new(State::default()),
            fetch: tokio::sync::Mutex::new(()),
            background: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            refreshes: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            forced: AtomicU64::new(0),
            clock,
        })
    }

    /// Pre-fills the cache with credentials known up front (explicit keys), so that even
    /// synchronous request building has them.
    pub(crate) fn prime(&self, c: Credentials) {
        let generation = self.generation.fetch_add(1, Relaxed) + 1;
        self.state.write().expect("credentials lock").current =
            Some(Arc::new(Cached::new(c, generation, (self.clock)())));
    }

    /// Which source the credentials come from.
    pub(crate) fn source(&self) -> &'static str {
        self.source
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            refreshes: self.refreshes.load(Relaxed),
            failures: self.failures.load(Relaxed),
            forced: self.forced.load(Relaxed),
        }
    }

    /// What is held now, without fetching (synchronous request building).
    pub(crate) fn peek(&self) -> Option<Arc<Cached>> {
        self.state.read().expect("credentials lock").current.clone()
    }

    /// Credentials to sign with now. Must run on a tokio runtime (a background refresh is
    /// spawned on it).
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Arc<Cached>> {
        let now = (self.clock)();
        let (current, next_attempt) = {
            let s = self.state.read().expect("credentials lock");
            (s.current.clone(), s.next_attempt)
        };
        let waiting = next_attempt.is_some_and(|t| now < t);
        if let Some(c) = current {
            match c.freshness(now) {
                Freshness::Fresh => return Ok(c),
                Freshness::RefreshSoon => {
                    if !waiting && !self.background.swap(true, Relaxed) {
                        let (this, seen) = (self.clone(), c.generation);
                        tokio::spawn(async move {
                            let _ = this.refresh(Some(seen)).await;
                            this.background.store(false, Relaxed);
                        });
                    }
                    return Ok(c);
                }
                Freshness::Expired if waiting && c.within_grace(now) => return Ok(c),
                Freshness::Expired => return self.refresh(Some(c.generation)).await,
            }
        }
        self.refresh(None).await
    }

    /// The server refused credentials of `generation` as expired or invalid: fetch new ones,
    /// unless another request already did.
    pub(crate) async fn invalidate(self: &Arc<Self>, generation: u64) -> Result<Arc<Cached>> {
        self.forced.fetch_add(1, Relaxed);
        self.refresh(Some(generation)).await
    }

    /// Fetches, single-flight. `seen` is the generation the caller found unusable (`None`:
    /// it found nothing); if another fetch replaced it meanwhile, that result is used.
    async fn refresh(&self, seen: Option<u64>) -> Result<Arc<Cached>> {
        let _flight = self.fetch.lock().await;
        let now = (self.clock)();
        {
            let s = self.state.read().expect("credentials lock");
            if let Some(c) = &s.current {
                if Some(c.generation) != seen && !matches!(c.freshness(now), Freshness::Expired) {
                    return Ok(c.clone());
                }
                // Another caller's fetch just failed: do not ask the failing source again yet.
                if s.next_attempt.is_some_and(|t| now < t) && c.within_grace(now) {
                    return Ok(c.clone());
                }
            }
        }
        match self.provider.provide_credentials().await {
            Ok(creds) => {
                self.refreshes.fetch_add(1, Relaxed);
                let generation = self.generation.fetch_add(1, Relaxed) + 1;
                let fresh = Arc::new(Cached::new(creds, generation, (self.clock)()));
                let mut s = self.state.write().expect("credentials lock");
                if s.last_error.take().is_some() {
                    tracing::warn!(source = self.source, "credentials source recovered");
                }
                s.current = Some(fresh.clone());
                s.next_attempt = None;
                Ok(fresh)
            }
            Err(e) => self.failed(e, now),
        }
    }

    fn failed(&self, e: Error, now: SystemTime) -> Result<Arc<Cached>> {
        self.failures.fetch_add(1, Relaxed);
        let mut s = self.state.write().expect("credentials lock");
        s.next_attempt = Some(now + RETRY_AFTER_FAILURE);
        s.last_error = Some(e.to_string());
        match &s.current {
            Some(c) if c.within_grace(now) => {
                let until = c.expiry.map(format_rfc3339).unwrap_or_else(|| "no expiry".into());
                tracing::warn!(
                    source = self.source,
                    error = %e,
                    expiry = %until,
                    "cannot refresh credentials; using the last good ones (static stability)"
                );
                Ok(c.clone())
            }
            _ => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;

    use super::*;
    use crate::credentials::credentials_error;

    /// A provider that counts calls, answers after a delay, and can be made to fail.
    #[derive(Debug)]
    struct Counting {
        calls: AtomicU64,
        lifetime: Duration,
        fail: AtomicBool,
        clock: TestClock,
    }

    struct TestClock(Clock);

    impl std::fmt::Debug for TestClock {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("TestClock")
        }
    }

    impl ProvideCredentials for Counting {
        fn provide_credentials(&self) -> BoxFuture<'_, Result<Credentials>> {
            Box::pin(async move {
                let n = self.calls.fetch_add(1, Relaxed) + 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                if self.fail.load(Relaxed) {
                    return Err(credentials_error("test", "source down"));
                }
                let now = (self.clock.0)();
                Ok(Credentials::new(format!("AK{n}"), "S").with_expiry(now + self.lifetime))
            })
        }
    }

    fn setup(lifetime: Duration) -> (Arc<Counting>, Arc<CredentialsCache>, Arc<AtomicU64>) {
        let secs = Arc::new(AtomicU64::new(1_800_000_000));
        let s = secs.clone();
        let clock: Clock = Arc::new(move || SystemTime::UNIX_EPOCH + Duration::from_secs(s.load(Relaxed)));
        let p = Arc::new(Counting {
            calls: AtomicU64::new(0),
            lifetime,
            fail: AtomicBool::new(false),
            clock: TestClock(clock.clone()),
        });
        (p.clone(), CredentialsCache::with_clock(p, "test", clock), secs)
    }

    fn key(c: &Cached) -> String {
        c.identity.data::<aws_credential_types::Credentials>().unwrap().access_key_id().to_string()
    }

    #[tokio::test(start_paused = true)]
    async fn a_thousand_requests_cause_one_fetch() {
        let (p, cache, _) = setup(Duration::from_secs(3600));
        let all = futures::future::join_all((0..1000).map(|_| cache.get())).await;
        assert!(all.iter().all(|r| r.as_ref().map(|c| key(c)).unwrap() == "AK1"));
        assert_eq!(p.calls.load(Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn refreshes_in_the_background_before_expiry() {
        let (p, cache, secs) = setup(Duration::from_secs(3600));
        assert_eq!(key(&cache.get().await.unwrap()), "AK1");
        // Inside the refresh window (at most 6 minutes before expiry): the old credentials
        // are returned at once and a background fetch starts.
        secs.fetch_add(3600 - 250, Relaxed);
        assert_eq!(key(&cache.get().await.unwrap()), "AK1");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(p.calls.load(Relaxed), 2);
        assert_eq!(key(&cache.get().await.unwrap()), "AK2");
        // A short lifetime refreshes in its second half.
        let (p, cache, secs) = setup(Duration::from_secs(20));
        cache.get().await.unwrap();
        secs.fetch_add(9, Relaxed);
        cache.get().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(p.calls.load(Relaxed), 1, "fresh for the first half");
        secs.fetch_add(2, Relaxed);
        cache.get().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(p.calls.load(Relaxed), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn keeps_the_last_good_credentials_while_the_source_fails() {
        let (p, cache, secs) = setup(Duration::from_secs(60));
        cache.get().await.unwrap();
        p.fail.store(true, Relaxed);
        secs.fetch_add(59, Relaxed); // past the usable life
        assert_eq!(key(&cache.get().await.unwrap()), "AK1");
        let calls = p.calls.load(Relaxed);
        // Within RETRY_AFTER_FAILURE the failing source is not asked again.
        for _ in 0..100 {
            cache.get().await.unwrap();
        }
        assert_eq!(p.calls.load(Relaxed), calls);
        // Past the grace period the failure is reported.
        secs.fetch_add(STALE_GRACE.as_secs() + 10, Relaxed);
        let e = cache.get().await.unwrap_err();
        assert!(e.message().contains("source down"));
        assert_eq!(cache.stats().failures, 2);
        // And a recovered source is used at once.
        p.fail.store(false, Relaxed);
        secs.fetch_add(RETRY_AFTER_FAILURE.as_secs(), Relaxed);
        assert_eq!(key(&cache.get().await.unwrap()), format!("AK{}", p.calls.load(Relaxed)));
    }

    #[tokio::test(start_paused = true)]
    async fn invalidation_fetches_once_per_generation() {
        let (p, cache, _) = setup(Duration::from_secs(3600));
        let g = cache.get().await.unwrap().generation;
        let all = futures::future::join_all((0..100).map(|_| cache.invalidate(g))).await;
        assert!(all.iter().all(|r| r.as_ref().unwrap().generation == g + 1));
        assert_eq!(p.calls.load(Relaxed), 2);
        assert_eq!(cache.stats().forced, 100);
    }
}
