//! `gantry_append` / `gantry_append_start` through the C ABI against the fault server's
//! directory-bucket double (S3 Express sessions and appends, see `gantry_faults::express`):
//! the bytes land, the request's size is the next offset, and a stale offset is
//! GANTRY_RESULT_WRONG_WRITE_OFFSET with S3's code.

use std::ffi::{c_char, CStr, CString};
use std::ptr::null_mut;
use std::time::Duration;

use gantry_faults::{ExpressSettings, FaultServer};

use crate::*;

const DIR: &str = "logs--use1-az4--x-s3";

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

fn client(server: &FaultServer) -> *mut gantry_client {
    let mut config = null_mut();
    // SAFETY: valid out-pointers and NUL-terminated strings throughout.
    unsafe {
        assert_eq!(gantry_config_new(&mut config, null_mut()), gantry_result::GANTRY_RESULT_OK);
        for (k, v) in [
            ("endpoint_url", server.endpoint()),
            ("access_key_id", "AKIDBASE".to_string()),
            ("secret_access_key", "base-secret".to_string()),
            ("auto_config", "false".to_string()),
        ] {
            let (k, v) = (c(k), c(&v));
            assert_eq!(gantry_config_set(config, k.as_ptr(), v.as_ptr(), null_mut()), gantry_result::GANTRY_RESULT_OK);
        }
        let mut client = null_mut();
        assert_eq!(gantry_client_new(config, &mut client, null_mut()), gantry_result::GANTRY_RESULT_OK);
        gantry_config_free(config);
        client
    }
}

fn code(err: *const gantry_error) -> Option<String> {
    // SAFETY: a live error; the code is NULL or a NUL-terminated string it owns.
    let p: *const c_char = unsafe { gantry_error_s3_code(err) };
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, NUL-terminated, alive as long as the error.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

#[test]
fn appends_through_the_c_abi() {
    let server = FaultServer::start();
    server.enable_express(ExpressSettings {
        base_access_key: "AKIDBASE".into(),
        base_secret_key: "base-secret".into(),
        session_lifetime: Duration::from_secs(300),
    });
    server.create_bucket(DIR);
    let client = client(&server);
    let (bucket, key) = (c(DIR), c("log"));
    let mut size = 0u64;
    // SAFETY: a live client, NUL-terminated strings, data valid for each call.
    unsafe {
        let first = b"first\n";
        let r =
            gantry_append(client, bucket.as_ptr(), key.as_ptr(), 0, first.as_ptr(), first.len(), &mut size, null_mut());
        assert_eq!((r, size), (gantry_result::GANTRY_RESULT_OK, 6));
        // The async twin: its size is the next offset.
        let second = b"second\n".to_vec();
        let mut req = null_mut();
        let r = gantry_append_start(
            client,
            bucket.as_ptr(),
            key.as_ptr(),
            size,
            second.as_ptr(),
            second.len(),
            None,
            null_mut(),
            &mut req,
            null_mut(),
        );
        assert_eq!(r, gantry_result::GANTRY_RESULT_OK);
        assert_eq!(gantry_request_wait(req, null_mut()), gantry_result::GANTRY_RESULT_OK);
        assert_eq!(gantry_request_size(req, &mut size, null_mut()), gantry_result::GANTRY_RESULT_OK);
        assert_eq!(size, 13);
        gantry_request_free(req);
        // A stale offset: its own result code, S3's code, nothing appended.
        let mut err = null_mut();
        let r = gantry_append(client, bucket.as_ptr(), key.as_ptr(), 6, b"x".as_ptr(), 1, null_mut(), &mut err);
        assert_eq!(r, gantry_result::GANTRY_RESULT_WRONG_WRITE_OFFSET);
        assert_eq!(gantry_error_result(err), gantry_result::GANTRY_RESULT_WRONG_WRITE_OFFSET);
        assert_eq!(gantry_error_http_status(err), 400);
        assert_eq!(code(err).as_deref(), Some("InvalidWriteOffset"));
        gantry_error_free(err);
        gantry_client_free(client);
    }
    assert_eq!(server.object(DIR, "log").unwrap().as_ref(), b"first\nsecond\n");
    assert_eq!(server.express_stats().refused, 0);
}
