//! Which servers a TLS connection trusts.
//!
//! - Default: the operating system's trust store (rustls-native-certs: `/etc/ssl/certs` and
//!   friends, `SSL_CERT_FILE` / `SSL_CERT_DIR`), so a corporate CA installed on the machine
//!   works as it does for curl and the AWS CLI; the compiled-in webpki roots when the system
//!   has none (a scratch container).
//! - `ca_bundle` (a PEM file): exactly those roots, replacing the others, as `AWS_CA_BUNDLE`
//!   does for the SDKs.
//! - `tls_verify = false`: no verification at all, for test clusters only; the client logs a
//!   warning every time one is built that way.
//!
//! The system store is read once per process (it is tens of milliseconds of parsing).

use std::path::Path;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::error::{Error, Operation, Result};

/// How a client decides whether to trust a server certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TlsTrust {
    /// A PEM file of CA certificates that replaces the system roots.
    pub ca_bundle: Option<std::path::PathBuf>,
    /// Skip certificate verification entirely (test clusters only; logged as a warning).
    pub insecure_skip_verify: bool,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for `trust` (ALPN http/1.1).
pub(crate) fn client_config(trust: &TlsTrust) -> Result<Arc<rustls::ClientConfig>> {
    static SYSTEM: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if trust.insecure_skip_verify {
        tracing::warn!(
            "TLS certificate verification is OFF (tls_verify=false): any server can impersonate the endpoint"
        );
        let mut c = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
            .with_no_client_auth();
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        return Ok(Arc::new(c));
    }
    match &trust.ca_bundle {
        Some(path) => Ok(with_roots(bundle_roots(path)?)),
        None => Ok(SYSTEM.get_or_init(|| with_roots(system_roots())).clone()),
    }
}

fn with_roots(roots: RootCertStore) -> Arc<rustls::ClientConfig> {
    let mut c = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

/// The system store, or the webpki roots when it has nothing usable.
fn system_roots() -> RootCertStore {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::info!(errors = found.errors.len(), "no system CA certificates found; using the built-in webpki roots");
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    roots
}

fn bundle_roots(path: &Path) -> Result<RootCertStore> {
    let bad = |why: String| Error::invalid(Operation::Config, format!("ca_bundle {}: {why}", path.display()));
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&pem)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(format!("not a PEM file of certificates ({e:?})")))?;
    let mut roots = RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(bad(format!("no usable CA certificate in it ({ignored} unparsable)")));
    }
    Ok(roots)
}

/// Accepts any certificate (but still checks handshake signatures, so the session is at
/// least bound to the key the server presented).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TlsTrust { ca_bundle: Some(dir.path().join("nope.pem")), ..Default::default() };
        assert!(client_config(&missing).unwrap_err().message().contains("nope.pem"));
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "hello").unwrap();
        let e = client_config(&TlsTrust { ca_bundle: Some(junk), ..Default::default() }).unwrap_err();
        assert!(e.message().contains("no usable CA certificate"), "{e}");
        assert!(client_config(&TlsTrust::default()).is_ok());
    }
}
