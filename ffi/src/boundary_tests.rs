//! Every export goes through `ffi_fn!`: with a panic injected at the start of its boundary
//! (`guard::test_hook`), each one returns its documented fallback instead of unwinding into C
//! (which would abort the test process). An export that bypassed the macro would not consume
//! the injected panic, and the test names it.

use std::ffi::{c_char, c_void, CStr};
use std::fmt::Debug;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

use crate::guard::test_hook::{armed, caught_panics, panic_in_next_export};
use crate::*;

const PANIC: gantry_result = gantry_result::GANTRY_RESULT_PANIC;

/// Calls `call` with a panic injected and checks that the boundary caught it and returned
/// `fallback`.
fn caught<T: PartialEq + Debug>(name: &str, fallback: T, call: impl FnOnce() -> T) {
    let before = caught_panics();
    panic_in_next_export();
    let got = call();
    assert!(!armed(), "{name} does not go through ffi_fn! (the injected panic never ran)");
    assert_eq!(caught_panics(), before + 1, "{name}: the boundary did not catch the panic");
    assert_eq!(got, fallback, "{name}: not its documented fallback");
}

/// A returned C string as text (fallback strings are compared by content).
fn text(p: *const c_char) -> Option<String> {
    // SAFETY: NULL or a NUL-terminated string from the library.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

#[test]
#[allow(deprecated)] // gantry_get_async and gantry_client_metrics are exports too
fn every_export_turns_a_panic_into_its_fallback() {
    let none = || Some(String::new());
    // SAFETY: the injected panic fires before any argument is read: NULL and 0 everywhere.
    unsafe {
        // Accessors, free and release functions, cancel and window: the formerly unguarded ones.
        caught("gantry_version", none(), || text(gantry_version()));
        caught("gantry_error_result", PANIC, || gantry_error_result(null()));
        caught("gantry_error_message", none(), || text(gantry_error_message(null())));
        caught("gantry_error_http_status", 0, || gantry_error_http_status(null()));
        caught("gantry_error_s3_code", None, || text(gantry_error_s3_code(null())));
        caught("gantry_error_request_id", None, || text(gantry_error_request_id(null())));
        caught("gantry_error_retryable", false, || gantry_error_retryable(null()));
        caught("gantry_error_free", (), || gantry_error_free(null_mut()));
        caught("gantry_config_free", (), || gantry_config_free(null_mut()));
        caught("gantry_client_free", (), || gantry_client_free(null_mut()));
        caught("gantry_list_page_count", 0, || gantry_list_page_count(null()));
        caught("gantry_list_page_key", None, || text(gantry_list_page_key(null(), 0)));
        caught("gantry_list_page_size", 0, || gantry_list_page_size(null(), 0));
        caught("gantry_list_page_next_token", None, || text(gantry_list_page_next_token(null())));
        caught("gantry_list_page_free", (), || gantry_list_page_free(null_mut()));
        caught("gantry_delete_report_deleted", 0, || gantry_delete_report_deleted(null()));
        caught("gantry_delete_report_failed_count", 0, || gantry_delete_report_failed_count(null()));
        caught("gantry_delete_report_failed_key", None, || text(gantry_delete_report_failed_key(null(), 0)));
        caught("gantry_delete_report_failed_code", None, || text(gantry_delete_report_failed_code(null(), 0)));
        caught("gantry_delete_report_free", (), || gantry_delete_report_free(null_mut()));
        caught("gantry_request_wait", PANIC, || gantry_request_wait(null(), null_mut()));
        caught("gantry_request_cancel", PANIC, || gantry_request_cancel(null()));
        caught("gantry_request_open_window", PANIC, || gantry_request_open_window(null(), 1));
        caught("gantry_request_free", (), || gantry_request_free(null_mut()));
        caught("gantry_chunk_retain", null_mut(), || gantry_chunk_retain(null()));
        caught("gantry_chunk_release", (), || gantry_chunk_release(null_mut()));
        caught("gantry_upload_cancel", PANIC, || gantry_upload_cancel(null()));
        caught("gantry_upload_free", (), || gantry_upload_free(null_mut()));
        caught("gantry_credentials_out_fail", PANIC, || gantry_credentials_out_fail(null_mut(), null()));

        // The calls that returned a gantry_result through the guard already.
        let (c, s) = (null(), null());
        caught("gantry_config_new", PANIC, || gantry_config_new(null_mut(), null_mut()));
        caught("gantry_config_set", PANIC, || gantry_config_set(null_mut(), s, s, null_mut()));
        caught("gantry_config_set_credentials_provider", PANIC, || {
            gantry_config_set_credentials_provider(null_mut(), None, null_mut(), None, null_mut())
        });
        caught("gantry_credentials_out_set", PANIC, || gantry_credentials_out_set(null_mut(), s, s, s, 0, null_mut()));
        caught("gantry_client_new", PANIC, || gantry_client_new(null(), null_mut(), null_mut()));
        caught("gantry_client_metrics", PANIC, || gantry_client_metrics(c, null_mut(), null_mut()));
        caught("gantry_client_metrics_ex", PANIC, || gantry_client_metrics_ex(c, null_mut(), null_mut()));
        caught("gantry_client_lane_metrics", PANIC, || gantry_client_lane_metrics(c, 0, null_mut(), null_mut()));
        caught("gantry_list_objects", PANIC, || gantry_list_objects(c, s, s, s, 0, null_mut(), null_mut()));
        caught("gantry_request_size", PANIC, || gantry_request_size(null(), null_mut(), null_mut()));
        caught("gantry_get_into", PANIC, || gantry_get_into(c, s, s, null_mut(), 0, null_mut(), null_mut()));
        caught("gantry_get_range_into", PANIC, || {
            gantry_get_range_into(c, s, s, 0, 0, null_mut(), 0, null_mut(), null_mut())
        });
        caught("gantry_get_to_file", PANIC, || gantry_get_to_file(c, s, s, s, null_mut(), null_mut()));
        caught("gantry_put_buffer", PANIC, || gantry_put_buffer(c, s, s, null(), 0, null_mut()));
        caught("gantry_put_file", PANIC, || gantry_put_file(c, s, s, s, null_mut()));
        caught("gantry_head_object", PANIC, || gantry_head_object(c, s, s, null_mut(), null_mut()));
        caught("gantry_delete_object", PANIC, || gantry_delete_object(c, s, s, null_mut()));
        caught("gantry_create_bucket", PANIC, || gantry_create_bucket(c, s, null_mut()));
        caught("gantry_copy_object", PANIC, || gantry_copy_object(c, s, s, s, s, null_mut(), null_mut()));
        caught("gantry_delete_objects", PANIC, || gantry_delete_objects(c, s, null(), 0, null_mut(), null_mut()));
        let (done, user, out) = (None, null_mut(), null_mut());
        caught("gantry_get_into_start", PANIC, || {
            gantry_get_into_start(c, s, s, null_mut(), 0, done, user, out, null_mut())
        });
        caught("gantry_get_range_into_start", PANIC, || {
            gantry_get_range_into_start(c, s, s, 0, 0, null_mut(), 0, done, user, out, null_mut())
        });
        caught("gantry_get_to_file_start", PANIC, || gantry_get_to_file_start(c, s, s, s, done, user, out, null_mut()));
        caught("gantry_get_options_init", PANIC, || gantry_get_options_init(null_mut()));
        caught("gantry_get_start", PANIC, || gantry_get_start(c, s, s, null(), null(), done, user, out, null_mut()));
        caught("gantry_get", PANIC, || gantry_get(c, s, s, null(), null(), null_mut(), null_mut()));
        caught("gantry_put_buffer_start", PANIC, || {
            gantry_put_buffer_start(c, s, s, null(), 0, done, user, out, null_mut())
        });
        caught("gantry_put_file_start", PANIC, || gantry_put_file_start(c, s, s, s, done, user, out, null_mut()));
        caught("gantry_head_object_start", PANIC, || gantry_head_object_start(c, s, s, done, user, out, null_mut()));
        caught("gantry_delete_object_start", PANIC, || {
            gantry_delete_object_start(c, s, s, done, user, out, null_mut())
        });
        caught("gantry_get_stream_start", PANIC, || {
            gantry_get_stream_start(c, s, s, 0, 1, 1, None, done, user, out, null_mut())
        });
        caught("gantry_get_async", PANIC, || gantry_get_async(c, s, s, None, done, user, out, null_mut()));
        caught("gantry_upload_new", PANIC, || gantry_upload_new(c, s, s, null_mut(), null_mut()));
        caught("gantry_upload_write", PANIC, || gantry_upload_write(null_mut(), null(), 0, null_mut()));
        caught("gantry_upload_write_owned", PANIC, || {
            gantry_upload_write_owned(null_mut(), null(), 0, None, null_mut(), null_mut())
        });
        caught("gantry_upload_complete", PANIC, || gantry_upload_complete(null_mut(), null_mut()));
        caught("gantry_upload_abort", PANIC, || gantry_upload_abort(null_mut(), null_mut()));
    }
}

#[test]
fn a_caught_panic_fills_out_err() {
    let mut err = null_mut();
    panic_in_next_export();
    // SAFETY: writable out_err; the injected panic fires before the other argument is read.
    unsafe {
        assert_eq!(gantry_config_new(null_mut(), &mut err), PANIC);
        assert_eq!(gantry_error_result(err), PANIC);
        assert!(text(gantry_error_message(err)).unwrap().contains("panicked"));
        gantry_error_free(err);
    }
}

#[test]
fn an_owned_write_releases_its_memory_when_the_call_panics() {
    static RELEASED: AtomicU32 = AtomicU32::new(0);
    unsafe extern "C" fn release(_: *mut c_void, _: *const u8) {
        RELEASED.fetch_add(1, SeqCst);
    }
    let data = [1u8; 4];
    panic_in_next_export();
    // SAFETY: the injected panic fires before `upload` is read; `data` outlives the call.
    let r = unsafe { gantry_upload_write_owned(null_mut(), data.as_ptr(), 4, Some(release), null_mut(), null_mut()) };
    assert_eq!((r, RELEASED.load(SeqCst)), (PANIC, 1), "release runs exactly once, panic or not");
}
