//! The conformance suite over HTTPS: the embedded server and MinIO, each with a certificate
//! from a private CA that the client trusts through `ca_bundle` (as an on-prem MinIO or Ceph
//! behind a corporate CA is reached). Every case of the plain-http suites runs here too.

mod embedded_tls {
    gantry_integration::conformance_tests!(Some(gantry_integration::embedded_tls()));
}

mod minio_tls {
    gantry_integration::conformance_tests!(gantry_integration::minio_tls());
}

use gantry::ErrorKind;
use gantry_integration::{embedded_tls, pattern, with_deadline};
use std::time::Duration;

/// Without the private CA the handshake fails with a clear, typed error (no silent fallback);
/// `tls_verify = false` reaches the same server (test clusters), and the CA bundle does.
#[test]
fn trust_is_enforced_and_explicit() {
    with_deadline(Duration::from_secs(60), || {
        let b = embedded_tls();
        let trusted = b.client(|c| c);
        let bucket = b.bucket(&trusted);
        let data = pattern(1 << 20, 5);
        trusted.block_on(trusted.put(&bucket, "k", data.clone())).unwrap();

        let fetch = |c: &gantry::Client| {
            let mut buf = vec![0u8; data.len()];
            c.block_on(c.get_into(&bucket, "k", &mut buf)).map(|_| buf)
        };
        // A bundle with no certificate in it is refused when the client is built.
        let config =
            gantry::ClientConfig::builder().ignore_environment().endpoint_url(&b.endpoint).ca_bundle("/dev/null");
        let e = gantry::Client::new(config.build().unwrap()).unwrap_err();
        assert!(e.message().contains("no usable CA certificate"), "{e}");
        // The system store does not know the private CA.
        let untrusting = gantry::Client::new(
            gantry::ClientConfig::builder()
                .ignore_environment()
                .endpoint_url(&b.endpoint)
                .credentials(gantry::CredentialsSource::Static(gantry::Credentials::new(&b.keys.0, &b.keys.1)))
                .retry(gantry::RetryConfig::default().max_attempts(1))
                .build()
                .unwrap(),
        )
        .unwrap();
        let e = fetch(&untrusting).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Connect, "{e}");
        let chain = format!("{e}");
        assert!(chain.contains("UnknownIssuer") || chain.contains("certificate"), "{chain}");

        let insecure = b.client(|c| c.ca_bundle("/nonexistent").tls_verify(false));
        assert!(fetch(&insecure).unwrap() == data);
        assert!(fetch(&trusted).unwrap() == data);
    });
}
