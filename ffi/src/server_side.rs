//! Calls that move no object bytes through the client: server-side copies and batch deletes.

use std::ffi::{c_char, CString};

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::{out_arg, str_arg, Failure};
use crate::handle::{borrow, Boxed};

/// Copies `src_bucket/src_key` to `bucket/key` on the server: CopyObject up to the
/// `copy_threshold` key (1 GiB by default), parallel UploadPartCopy parts of `copy_part_size`
/// (128 MiB) above it (aborted on failure, so no parts are left behind). The source's ETag pins its version: a source replaced mid-copy fails with
/// `GANTRY_RESULT_OBJECT_CHANGED`. The content type is kept. Blocks until done.
/// `out_parts` (NULL allowed) receives 1 for a single CopyObject, else the number of parts.
///
/// # Safety
/// `client` is live; the four strings are NUL-terminated; `out_parts` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_copy_object(
    client: *const gantry_client,
    src_bucket: *const c_char,
    src_key: *const c_char,
    bucket: *const c_char,
    key: *const c_char,
    out_parts: *mut u32,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: per the contract above.
        let (client, src_bucket, src_key, bucket, key) = unsafe {
            (
                client_arg(client)?,
                str_arg(src_bucket, "src_bucket")?,
                str_arg(src_key, "src_key")?,
                str_arg(bucket, "bucket")?,
                str_arg(key, "key")?,
            )
        };
        let out = client.block_on(client.copy_object(src_bucket, src_key, bucket, key))?;
        if !out_parts.is_null() {
            // SAFETY: non-NULL and writable per the contract.
            unsafe { *out_parts = out.parts };
        }
        Ok(())
    })
}

/// What a batch delete did: how many keys went, and each key the server refused with its S3
/// error code. The caller owns it (Box-owned) and frees it once with
/// `gantry_delete_report_free`, from any thread. Strings returned by its accessors live as
/// long as the report. Read-only: safe to read from several threads.
#[derive(Debug)]
pub struct gantry_delete_report {
    deleted: u64,
    failed: Vec<(CString, Option<CString>)>,
}

impl Boxed for gantry_delete_report {}

/// Deletes the `n_keys` keys of `keys` from `bucket` with DeleteObjects, 1,000 keys a
/// request, the requests in flight together. A key that does not exist counts as deleted (as
/// S3 says). Keys the server refuses do not fail the call: they are listed in the report, and
/// the others are deleted. A batch whose request fails as a whole (after retries) lists each
/// of its keys in the report with that failure's code, while the other batches run; only when
/// every batch fails (nothing was deleted) does the call fail, and no report is made. Blocks
/// until done. `keys` is only read during the call.
///
/// # Safety
/// `client` is live; `bucket` is NUL-terminated; `keys` points to `n_keys` NUL-terminated
/// strings (NULL when `n_keys` is 0); `out_report` is writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_objects(
    client: *const gantry_client,
    bucket: *const c_char,
    keys: *const *const c_char,
    n_keys: usize,
    out_report: *mut *mut gantry_delete_report,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: per the contract above.
        let (client, bucket) = unsafe { (client_arg(client)?, str_arg(bucket, "bucket")?) };
        let out_report = out_arg(out_report, "out_report")?;
        if keys.is_null() && n_keys > 0 {
            return Err(Failure::Null("keys"));
        }
        let mut owned = Vec::with_capacity(n_keys);
        for i in 0..n_keys {
            // SAFETY: keys points to n_keys readable pointers per the contract.
            let k = unsafe { *keys.add(i) };
            // SAFETY: each is NUL-terminated per the contract.
            owned.push(unsafe { str_arg(k, "keys[i]") }?.to_string());
        }
        let out = client.block_on(client.delete_objects(bucket, owned))?;
        let cstr = |s: &str| CString::new(s).map_err(|_| Failure::Invalid("a key contains NUL".into()));
        let failed = out
            .errors
            .iter()
            .map(|e| Ok((cstr(&e.key)?, e.code.as_deref().map(cstr).transpose()?)))
            .collect::<Result<_, Failure>>()?;
        let report = gantry_delete_report { deleted: out.deleted, failed };
        // SAFETY: checked non-NULL, writable per the contract; the caller owns the report.
        unsafe { *out_report = report.into_raw() };
        Ok(())
    })
}

/// Keys deleted (0 for NULL or on a panic).
///
/// # Safety
/// `report` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_report_deleted(report: *const gantry_delete_report) -> u64 {
    ffi_fn!(fallback(0), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(report, "report") }?.deleted)
    })
}

/// Number of keys the server refused (0 for NULL or on a panic).
///
/// # Safety
/// `report` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_report_failed_count(report: *const gantry_delete_report) -> usize {
    ffi_fn!(fallback(0), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(report, "report") }?.failed.len())
    })
}

/// Key of refused entry `i`, or NULL when `i` is out of range (also for NULL or on a panic).
///
/// # Safety
/// `report` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_report_failed_key(
    report: *const gantry_delete_report,
    i: usize,
) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: NULL or live per the contract.
        Ok(unsafe { borrow(report, "report") }?.failed.get(i).map_or(std::ptr::null(), |f| f.0.as_ptr()))
    })
}

/// S3 error code of refused entry `i` (`AccessDenied`, ...), or NULL when the server gave
/// none or `i` is out of range (also for NULL or on a panic).
///
/// # Safety
/// `report` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_report_failed_code(
    report: *const gantry_delete_report,
    i: usize,
) -> *const c_char {
    ffi_fn!(fallback(std::ptr::null()), || {
        // SAFETY: NULL or live per the contract.
        let report = unsafe { borrow(report, "report") }?;
        Ok(report.failed.get(i).and_then(|f| f.1.as_ref()).map_or(std::ptr::null(), |c| c.as_ptr()))
    })
}

/// Frees a report. NULL is allowed. On a panic (a bug) the report is leaked.
///
/// # Safety
/// `report` is NULL or a report not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_delete_report_free(report: *mut gantry_delete_report) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a report handed out once by gantry_delete_objects, freed once.
        drop(unsafe { gantry_delete_report::from_raw(report) });
        Ok(())
    })
}
