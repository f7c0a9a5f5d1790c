//! `gantry-doubles`: local doubles of the AWS credential services, for integration tests of
//! gantry's credential providers.
//!
//! Each double speaks the wire format of the real service, closely enough that a provider
//! written against AWS's documentation and SDK behaviour works against it unchanged:
//!
//! - [`ImdsServer`]: EC2 Instance Metadata Service, IMDSv2 only (session tokens, role
//!   discovery, the credential document, region, instance type and network interfaces).
//! - [`ContainerServer`]: the ECS / EKS Pod Identity container credentials endpoint.
//! - [`StsServer`]: STS `AssumeRole` (SigV4-signed) and `AssumeRoleWithWebIdentity`.
//! - [`SsoServer`]: the IAM Identity Center portal's `GetRoleCredentials`.
//! - [`ProxyServer`]: an HTTP forward proxy (`CONNECT` tunnels and absolute-form requests).
//!
//! Every credential a double hands out comes from an [`Issuer`] the test supplies, so the test
//! can register the keys with its S3 double and make expired keys really fail.
//!
//! ```no_run
//! use std::{sync::Arc, time::Duration};
//! use gantry_doubles::{ImdsServer, StaticIssuer};
//! let issuer = Arc::new(StaticIssuer::new("ASIAEXAMPLE", "secret", "token", Duration::from_secs(3600)));
//! let imds = ImdsServer::start(issuer);
//! // Point the provider at it, e.g. AWS_EC2_METADATA_SERVICE_ENDPOINT=<url>.
//! println!("{}", imds.url());
//! ```
//!
//! ## Threading
//!
//! Like `gantry-faults`, each double runs on its own thread with a single-threaded tokio
//! runtime, so it works from sync tests and from tests that have a runtime of their own. The
//! handles are `Send + Sync`; their control methods may be called from any thread while
//! requests are in flight. Dropping a handle stops accepting, closes every connection and
//! joins the thread before `drop` returns. Servers listen on `127.0.0.1` with a free port.

#![warn(missing_docs)]

pub mod container;
pub mod imds;
pub mod issuer;
pub mod proxy;
mod server;
pub mod sso;
pub mod sts;
mod util;

pub use container::ContainerServer;
pub use imds::{ImdsServer, NetworkInterface};
pub use issuer::{FnIssuer, Issued, Issuer, StaticIssuer};
pub use proxy::ProxyServer;
pub use sso::{SsoCall, SsoServer};
pub use sts::{StsCall, StsFault, StsServer};

/// How a credential double answers, set at run time with each double's `set_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Behave like the real service.
    #[default]
    Normal,
    /// Accept the connection, read the request and never answer (for client timeouts).
    Hang,
    /// Answer the credential request `200 OK` with a body that is not the expected JSON (or,
    /// for STS, XML) document. Other requests are answered normally.
    NotJson,
    /// Answer every request `500 Internal Server Error`.
    Error500,
}
