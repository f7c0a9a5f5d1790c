//! TLS for the listener ([`crate::ServerConfig::tls`]) and throwaway certificates for it.
//!
//! The server uses rustls with the `ring` provider named explicitly (never the process-wide
//! default, which another crate in the same process may have installed differently), TLS 1.2
//! and 1.3, and offers only `http/1.1` in ALPN. [`self_signed`] writes a CA and a leaf for
//! `localhost`, `127.0.0.1` and `::1`, so a client can trust the CA (`--ca-bundle DIR/ca.pem`)
//! rather than turning verification off.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::{Error as PemError, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate chain and private key a TLS listener presents, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsConfig {
    /// PEM file with the server's certificate first, then any intermediates (a CA may follow).
    pub cert_chain_pem: PathBuf,
    /// PEM file with the private key of the first certificate (PKCS#8, PKCS#1 or SEC1).
    pub private_key_pem: PathBuf,
}

impl TlsConfig {
    /// Serve `cert_chain_pem` with the key in `private_key_pem`.
    pub fn new(cert_chain_pem: impl Into<PathBuf>, private_key_pem: impl Into<PathBuf>) -> Self {
        TlsConfig { cert_chain_pem: cert_chain_pem.into(), private_key_pem: private_key_pem.into() }
    }

    /// Reads both files and builds the rustls configuration (ring provider, ALPN `http/1.1`).
    /// Errors name the file at fault.
    pub(crate) fn load(&self) -> io::Result<Arc<rustls::ServerConfig>> {
        let certs = CertificateDer::pem_file_iter(&self.cert_chain_pem)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .and_then(|certs| if certs.is_empty() { Err(PemError::NoItemsFound) } else { Ok(certs) })
            .map_err(|e| pem_error(&self.cert_chain_pem, "CERTIFICATE", e))?;
        let key = PrivateKeyDer::from_pem_file(&self.private_key_pem)
            .map_err(|e| pem_error(&self.private_key_pem, "PRIVATE KEY", e))?;
        let invalid = |e: rustls::Error| io::Error::new(io::ErrorKind::InvalidData, format!("TLS configuration: {e}"));
        let mut config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .map_err(invalid)?
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .map_err(invalid)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn pem_error(path: &Path, what: &str, e: PemError) -> io::Error {
    let path = path.display();
    match e {
        PemError::Io(e) => io::Error::new(e.kind(), format!("{path}: {e}")),
        PemError::NoItemsFound => io::Error::new(io::ErrorKind::InvalidData, format!("{path}: no {what} in PEM file")),
        e => io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}")),
    }
}

/// The files [`self_signed`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SelfSigned {
    /// `ca.pem`: the CA certificate, for the client to trust.
    pub ca: PathBuf,
    /// `cert.pem`: the leaf certificate followed by the CA certificate.
    pub cert: PathBuf,
    /// `key.pem`: the leaf's private key (PKCS#8, ECDSA P-256), readable by the owner only.
    pub key: PathBuf,
}

impl SelfSigned {
    /// The server side: `cert.pem` with `key.pem`.
    pub fn tls_config(&self) -> TlsConfig {
        TlsConfig::new(&self.cert, &self.key)
    }
}

/// Creates `dir` if needed and writes a fresh CA (`ca.pem`) and a leaf certificate for
/// `localhost`, `127.0.0.1` and `::1` signed by it (`cert.pem`, with its key in `key.pem`),
/// replacing any files of those names. The CA's private key is not kept, so nothing else can be
/// signed with it. For tests and local use only.
pub fn self_signed(dir: &Path) -> io::Result<SelfSigned> {
    let (ca_pem, leaf_pem, key_pem) =
        generate().map_err(|e| io::Error::other(format!("certificate generation: {e}")))?;
    fs::create_dir_all(dir)?;
    let files = SelfSigned { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") };
    fs::write(&files.ca, &ca_pem)?;
    fs::write(&files.cert, format!("{leaf_pem}{ca_pem}"))?;
    write_private(&files.key, key_pem.as_bytes())?;
    Ok(files)
}

/// `(CA certificate, leaf certificate, leaf key)`, all PEM.
fn generate() -> Result<(String, String, String), rcgen::Error> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.distinguished_name.push(DnType::CommonName, "gantry test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])?;
    leaf.distinguished_name.push(DnType::CommonName, "localhost");
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    leaf.use_authority_key_identifier_extension = true;
    let leaf_key = KeyPair::generate()?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;
    Ok((ca_cert.pem(), leaf_cert.pem(), leaf_key.serialize_pem()))
}

#[cfg(unix)]
fn write_private(path: &Path, data: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    // `mode` applies only when the file is created; an older key.pem may be wider.
    f.set_permissions(fs::Permissions::from_mode(0o600))?;
    f.write_all(data)
}

#[cfg(not(unix))]
fn write_private(path: &Path, data: &[u8]) -> io::Result<()> {
    fs::write(path, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_chain_that_loads() {
        let dir = tempfile::tempdir().unwrap();
        let files = self_signed(&dir.path().join("tls")).unwrap();
        let chain: Vec<_> = CertificateDer::pem_file_iter(&files.cert).unwrap().collect::<Result<_, _>>().unwrap();
        let ca: Vec<_> = CertificateDer::pem_file_iter(&files.ca).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(chain.len(), 2);
        assert_eq!(ca.len(), 1);
        assert_eq!(chain[1], ca[0]);
        let config = files.tls_config().load().unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&files.key).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }

    #[test]
    fn load_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = TlsConfig::new(&missing, &missing).load().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(e.to_string().contains("missing.pem"), "{e}");

        let empty = dir.path().join("empty.pem");
        fs::write(&empty, "").unwrap();
        let e = TlsConfig::new(&empty, &missing).load().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("empty.pem"), "{e}");
    }
}
