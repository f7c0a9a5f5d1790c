//! The conformance suite against MinIO, an independent S3 implementation run as a process
//! (installed by `tests/scripts/minio.sh install`, which the test script runs).

use std::time::Duration;

use gantry_integration::{minio, suite, with_deadline};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            let Some(backend) = minio() else { return };
            with_deadline(Duration::from_secs(120), move || suite::$name(&backend));
        }
    )*};
}

cases!(
    put_bytes_then_all_deliveries,
    put_file_and_writer,
    concurrent_transfers,
    etag_change_mid_download,
    missing_key_is_not_found,
    buffer_too_small,
    list_pages_and_delete,
    wrong_credentials_fail_fast,
    cancelled_upload_leaves_nothing,
    signed_payloads,
    stream_backpressure,
);
