//! The conformance suite against the embedded s3s-fs server (in-process, SigV4 verified).

use std::time::Duration;

use gantry_integration::{s3s_fs, suite, with_deadline};

macro_rules! cases {
    ($($name:ident),* $(,)?) => {$(
        #[test]
        fn $name() {
            with_deadline(Duration::from_secs(120), || suite::$name(&s3s_fs()));
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
