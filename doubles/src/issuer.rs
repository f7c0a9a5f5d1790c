//! Who decides which credentials the doubles hand out.
//!
//! Every double calls [`Issuer::issue`] once per successful credential response (real
//! services cache and rotate; the doubles leave that to the issuer), so a test can count,
//! vary and register what it hands out, e.g. with the S3 double so expired keys really fail.

use std::time::{Duration, SystemTime};

use crate::util::random_alnum;

/// Source of the credentials a double returns; shared by the test and the double.
pub trait Issuer: Send + Sync {
    /// Credentials for one response. `source` names who asked: `"imds"`, `"container"`,
    /// `"sts:AssumeRole:<role arn>"`, `"sts:AssumeRoleWithWebIdentity:<role arn>"` or
    /// `"sso:<account id>:<role name>"`.
    fn issue(&self, source: &str) -> Issued;
}

/// One set of temporary credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issued {
    /// Access key id (`ASIA…` for temporary credentials).
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token, sent by clients as `x-amz-security-token`.
    pub session_token: String,
    /// When the credentials expire; doubles send it with seconds precision.
    pub expiration: SystemTime,
}

impl Issued {
    /// Fresh random credentials shaped like real ones (`ASIA` + 16 characters, 40-character
    /// secret), valid for `lifetime` from now.
    pub fn random(lifetime: Duration) -> Issued {
        Issued {
            access_key_id: format!("ASIA{}", random_alnum(16).to_ascii_uppercase()),
            secret_access_key: random_alnum(40),
            session_token: format!("IQoJb3JpZ2luX2VjE{}", random_alnum(96)),
            expiration: SystemTime::now() + lifetime,
        }
    }
}

/// The same keys every time, expiring `lifetime` after each issue.
#[derive(Clone, Debug)]
pub struct StaticIssuer {
    keys: Issued,
    lifetime: Duration,
}

impl StaticIssuer {
    /// Keys to hand out and how long each issue stays valid.
    pub fn new(access_key_id: &str, secret_access_key: &str, session_token: &str, lifetime: Duration) -> StaticIssuer {
        let keys = Issued {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: session_token.into(),
            expiration: SystemTime::now(),
        };
        StaticIssuer { keys, lifetime }
    }
}

impl Issuer for StaticIssuer {
    fn issue(&self, _source: &str) -> Issued {
        Issued { expiration: SystemTime::now() + self.lifetime, ..self.keys.clone() }
    }
}

/// A closure as issuer: `Arc::new(FnIssuer(|source: &str| Issued::random(..)))`.
pub struct FnIssuer<F>(pub F);

impl<F: Fn(&str) -> Issued + Send + Sync> Issuer for FnIssuer<F> {
    fn issue(&self, source: &str) -> Issued {
        (self.0)(source)
    }
}

impl<F> std::fmt::Debug for FnIssuer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FnIssuer(..)")
    }
}
