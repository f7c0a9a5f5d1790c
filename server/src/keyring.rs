//! Access keys the server accepts, changeable while it runs, with optional expiry.
//!
//! A [`KeyRing`] answers s3s's [`S3Auth`] question "what is the secret of this access key?";
//! s3s then verifies the request's SigV4 (or V2) signature with that secret, so a wrong secret
//! still ends in `SignatureDoesNotMatch`. What the ring decides itself is whether the key is
//! known and not expired, and it refuses the others the way S3 does:
//!
//! | case | code | HTTP |
//! | --- | --- | --- |
//! | unknown access key | `InvalidAccessKeyId` | 403 |
//! | key past its expiry | `ExpiredToken` ("The provided token has expired.") | 400 |
//!
//! Clones share one ring, so a test can keep a clone, hand another to the server, and rotate
//! keys (insert the new one, remove the old one, or let it expire) mid-transfer. The session
//! token that temporary credentials carry (`x-amz-security-token`) is not checked: s3s does not
//! pass it to [`S3Auth`], and the access key id already names the session here.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use s3s::auth::{S3Auth, SecretKey};
use s3s::{s3_error, S3Result};

/// The access keys a server accepts; clones share the same keys and counters.
#[derive(Clone, Default)]
pub struct KeyRing {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    keys: HashMap<String, Key>,
    refusals: Refusals,
}

struct Key {
    secret: SecretKey,
    expires: Option<SystemTime>,
}

/// How many requests the ring refused, by reason (a snapshot from [`KeyRing::refusals`]).
///
/// Only the ring's own decisions are counted: a request whose signature does not match is
/// refused later by s3s and does not appear here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refusals {
    /// Requests signed with an access key the ring does not hold (`InvalidAccessKeyId`, 403).
    pub unknown_key: u64,
    /// Requests signed with a key whose expiry had passed (`ExpiredToken`, 400).
    pub expired: u64,
}

impl Refusals {
    /// All refusals, whatever the reason.
    pub fn total(&self) -> u64 {
        self.unknown_key + self.expired
    }
}

impl KeyRing {
    /// An empty ring: every signed request is refused until a key is inserted.
    pub fn new() -> Self {
        Self::default()
    }

    /// A ring holding one key that never expires (what `gantry serve` uses).
    pub fn single(access_key_id: impl Into<String>, secret: impl Into<String>) -> Self {
        let ring = Self::new();
        ring.insert(access_key_id, secret, None);
        ring
    }

    /// Adds a key, or replaces the secret and expiry of one already held. With `expires`, requests
    /// signed with the key at or after that instant are refused with `ExpiredToken`; the key
    /// stays in the ring (and keeps being refused that way) until [`remove`](Self::remove)d.
    pub fn insert(&self, access_key_id: impl Into<String>, secret: impl Into<String>, expires: Option<SystemTime>) {
        let key = Key { secret: SecretKey::from(secret.into()), expires };
        self.lock().keys.insert(access_key_id.into(), key);
    }

    /// Drops a key; later requests signed with it get `InvalidAccessKeyId`. Returns whether the
    /// ring held it.
    pub fn remove(&self, access_key_id: &str) -> bool {
        self.lock().keys.remove(access_key_id).is_some()
    }

    /// Number of keys held, expired ones included.
    pub fn len(&self) -> usize {
        self.lock().keys.len()
    }

    /// Whether the ring holds no key.
    pub fn is_empty(&self) -> bool {
        self.lock().keys.is_empty()
    }

    /// Requests refused so far, by reason.
    pub fn refusals(&self) -> Refusals {
        self.lock().refusals
    }

    /// The secret for `access_key_id` if it is held and not expired at `now`; counts a refusal
    /// otherwise.
    fn lookup(&self, access_key_id: &str, now: SystemTime) -> S3Result<SecretKey> {
        let mut inner = self.lock();
        let (secret, expired) = match inner.keys.get(access_key_id) {
            None => (None, false),
            Some(key) if key.expires.is_some_and(|at| now >= at) => (None, true),
            Some(key) => (Some(key.secret.clone()), false),
        };
        if let Some(secret) = secret {
            return Ok(secret);
        }
        if expired {
            inner.refusals.expired += 1;
            Err(s3_error!(ExpiredToken, "The provided token has expired."))
        } else {
            inner.refusals.unknown_key += 1;
            Err(s3_error!(InvalidAccessKeyId, "The AWS Access Key Id you provided does not exist in our records."))
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The map stays consistent whatever panicked while holding the lock.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for KeyRing {
    /// Lists the access key ids and counters, never the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.lock();
        let mut ids: Vec<&str> = inner.keys.keys().map(String::as_str).collect();
        ids.sort_unstable();
        f.debug_struct("KeyRing").field("access_key_ids", &ids).field("refusals", &inner.refusals).finish()
    }
}

#[async_trait::async_trait]
impl S3Auth for KeyRing {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        self.lookup(access_key, SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use s3s::S3ErrorCode;

    use super::*;

    #[tokio::test]
    async fn known_unknown_expired() {
        let ring = KeyRing::single("AK", "secret");
        let past = SystemTime::now() - Duration::from_secs(1);
        ring.insert("OLD", "old-secret", Some(past));
        ring.insert("NEW", "new-secret", Some(SystemTime::now() + Duration::from_secs(3600)));
        assert_eq!(ring.len(), 3);

        assert_eq!(ring.get_secret_key("AK").await.unwrap().expose(), "secret");
        assert_eq!(ring.get_secret_key("NEW").await.unwrap().expose(), "new-secret");

        let e = ring.get_secret_key("NOPE").await.unwrap_err();
        assert_eq!(*e.code(), S3ErrorCode::InvalidAccessKeyId);
        assert_eq!(e.status_code().map(|s| s.as_u16()), Some(403));

        let e = ring.get_secret_key("OLD").await.unwrap_err();
        assert_eq!(*e.code(), S3ErrorCode::ExpiredToken);
        assert_eq!(e.status_code().map(|s| s.as_u16()), Some(400));
        assert_eq!(e.message(), Some("The provided token has expired."));

        assert_eq!(ring.refusals(), Refusals { unknown_key: 1, expired: 1 });
        assert_eq!(ring.refusals().total(), 2);
    }

    #[test]
    fn expiry_is_inclusive_and_rotation_is_shared() {
        let ring = KeyRing::new();
        let server_side = ring.clone();
        let at = SystemTime::now() + Duration::from_secs(60);
        ring.insert("AK", "s1", Some(at));
        assert!(server_side.lookup("AK", at - Duration::from_millis(1)).is_ok());
        assert!(server_side.lookup("AK", at).is_err());

        // Rotate: a new secret, no expiry; then remove it.
        ring.insert("AK", "s2", None);
        assert_eq!(server_side.lookup("AK", at + Duration::from_secs(1)).unwrap().expose(), "s2");
        assert!(ring.remove("AK"));
        assert!(!ring.remove("AK"));
        assert!(server_side.is_empty());
        assert_eq!(server_side.refusals(), Refusals { unknown_key: 0, expired: 1 });
    }

    #[test]
    fn debug_hides_secrets() {
        let ring = KeyRing::single("AK", "hunter2");
        let shown = format!("{ring:?}");
        assert!(shown.contains("AK"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
