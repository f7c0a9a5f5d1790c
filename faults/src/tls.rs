//! HTTPS for the fault server, so benchmarks can measure clients' TLS cost against the same
//! in-memory S3 and its shaping.
//!
//! The server side is rustls with the `ring` provider named explicitly (never a process-wide
//! default), TLS 1.2 and 1.3, ALPN `http/1.1` only. Certificates come from PEM files; for local
//! runs, `gantry-fault-server --tls-self-signed DIR` writes a throwaway CA and a leaf for
//! `localhost`, `127.0.0.1` and `::1` with `gantry_server::tls::self_signed`, and clients trust
//! `DIR/ca.pem` rather than turning verification off.
//!
//! Fault semantics are unchanged over TLS: the `FIN`/`RST` endings act on the TCP socket under
//! the TLS stream once the TLS records holding the already produced bytes have been written
//! (a FIN therefore arrives without a TLS `close_notify`, which clients see as a truncation).

use std::io;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The rustls server configuration for the chain in `cert_chain_pem` (leaf first) and the
/// leaf's key in `private_key_pem` (PKCS#8, PKCS#1 or SEC1). Errors name the file at fault.
pub fn tls_server_config(cert_chain_pem: &Path, private_key_pem: &Path) -> io::Result<Arc<rustls::ServerConfig>> {
    let bad =
        |path: &Path, why: String| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_chain_pem)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| bad(cert_chain_pem, format!("not a PEM file of certificates ({e})")))?;
    if certs.is_empty() {
        return Err(bad(cert_chain_pem, "no CERTIFICATE in it".into()));
    }
    let key = PrivateKeyDer::from_pem_file(private_key_pem)
        .map_err(|e| bad(private_key_pem, format!("no usable PRIVATE KEY ({e})")))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| io::Error::other(format!("TLS configuration: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("TLS configuration: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_a_self_signed_pair_and_names_bad_files() {
        let dir = std::env::temp_dir().join(format!("gantry-faults-tls-{}", std::process::id()));
        let files = gantry_server::tls::self_signed(&dir).unwrap();
        let config = tls_server_config(&files.cert, &files.key).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);

        let e = tls_server_config(&dir.join("missing.pem"), &files.key).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
        let e = tls_server_config(&files.key, &files.key).unwrap_err();
        assert!(e.to_string().contains("no CERTIFICATE"), "{e}");
        let e = tls_server_config(&files.cert, &files.ca).unwrap_err();
        assert!(e.to_string().contains("ca.pem"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
