//! Metrics snapshots: `gantry_client_metrics` (the 0.1 struct, frozen) and the extensible
//! `gantry_client_metrics_ex` / `gantry_client_lane_metrics`, whose structs start with their
//! size so later minor versions can append counters without breaking older programs.

use std::ffi::c_char;

use crate::client::{client_arg, gantry_client};
use crate::error::{gantry_error, gantry_result};
use crate::guard::Failure;

/// A copy of a client's counters (all since the client was created).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct gantry_metrics {
    /// Body bytes received (including attempts that later failed).
    pub bytes_downloaded: u64,
    /// Body bytes sent (including attempts that later failed).
    pub bytes_uploaded: u64,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries.
    pub retries: u64,
    /// TCP connections opened.
    pub connections_opened: u64,
    /// Request attempts that failed.
    pub errors: u64,
}

/// Deprecated (a frozen struct): use `gantry_client_metrics_ex`, which has these counters and
/// every later one.
///
/// Writes the client's counters to `*out`. Cheap; safe from any thread.
///
/// # Safety
/// `client` is live; `out` is writable.
#[no_mangle]
#[deprecated(note = "use gantry_client_metrics_ex: every counter, and room for more")]
pub unsafe extern "C" fn gantry_client_metrics(
    client: *const gantry_client,
    out: *mut gantry_metrics,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let client = unsafe { client_arg(client)? };
        if out.is_null() {
            return Err(Failure::Null("out"));
        }
        let m = client.metrics();
        let value = gantry_metrics {
            bytes_downloaded: m.bytes_downloaded,
            bytes_uploaded: m.bytes_uploaded,
            requests: m.requests,
            retries: m.retries,
            connections_opened: m.connections_opened,
            errors: m.errors,
        };
        // SAFETY: checked non-NULL.
        unsafe { *out = value };
        Ok(())
    })
}

/// Every client counter (all since the client was created). Set `struct_size` to
/// `sizeof(gantry_metrics_ex)` before the call: the library fills the fields that fit in
/// that size and writes back the size it filled, so a program built against an older header
/// keeps working with a newer library (new counters are only ever appended).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct gantry_metrics_ex {
    /// In: the size of the caller's struct. Out: the bytes the library filled.
    pub struct_size: u64,
    /// Body bytes received (including attempts that later failed).
    pub bytes_downloaded: u64,
    /// Body bytes sent (including attempts that later failed).
    pub bytes_uploaded: u64,
    /// HTTP requests sent, retries included.
    pub requests: u64,
    /// Requests that were retries.
    pub retries: u64,
    /// TCP connections opened.
    pub connections_opened: u64,
    /// Request attempts that failed (retried or not).
    pub errors: u64,
    /// Attempts that failed on a timeout (first byte, idle, throughput floor, deadline).
    pub timeouts: u64,
    /// Responses that failed their checksum, and uploads the server rejected with BadDigest.
    pub checksum_failures: u64,
    /// Download responses checked against the server's checksum that matched.
    pub checksums_verified: u64,
    /// Retries after throttling (503 SlowDown, 429).
    pub retries_throttled: u64,
    /// Retries after 5xx server errors.
    pub retries_server_error: u64,
    /// Retries after connect, DNS or TLS failures.
    pub retries_connect: u64,
    /// Retries after connections reset or closed mid-request.
    pub retries_transport: u64,
    /// Retries after timeouts (ours, or S3's RequestTimeout).
    pub retries_timeout: u64,
    /// Retries after truncated bodies or protocol violations.
    pub retries_protocol: u64,
    /// Retries after checksum mismatches.
    pub retries_checksum: u64,
    /// Retries refused because the client-wide retry budget was empty.
    pub retry_budget_exhausted: u64,
    /// Duplicate (hedge) requests sent for slow parts.
    pub hedges_sent: u64,
    /// Hedges that delivered their part first.
    pub hedges_won: u64,
    /// Bytes of the memory budget reserved now.
    pub memory_in_use_bytes: u64,
    /// The most bytes of the memory budget ever reserved at once.
    pub memory_peak_bytes: u64,
    /// Lanes (NICs or source addresses; 1 for the OS default): indexes for
    /// `gantry_client_lane_metrics`.
    pub lane_count: u64,
}

/// Counters of one lane (a NIC or source address the client binds to).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gantry_lane_metrics {
    /// In: the size of the caller's struct. Out: the bytes the library filled.
    pub struct_size: u64,
    /// Interface name, source address, or "default"; NUL-terminated, cut to 63 bytes.
    pub name: [c_char; 64],
    /// Body bytes received on this lane's connections.
    pub bytes_downloaded: u64,
    /// Body bytes sent on this lane's connections.
    pub bytes_uploaded: u64,
    /// Connections opened from this lane.
    pub connections_opened: u64,
    /// Failed connect attempts from this lane.
    pub connect_errors: u64,
}

/// Copies the leading `out->struct_size` bytes of `value` to `out` and records the size
/// filled: the versioning rule of the size-prefixed structs.
///
/// # Safety
/// `out` is NULL or points to at least `(*out).struct_size` writable bytes.
unsafe fn fill_sized<T: Copy>(out: *mut T, value: T) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::Null("out"));
    }
    // SAFETY: the first field of every sized struct is a u64 struct_size the caller set.
    let wanted = unsafe { out.cast::<u64>().read_unaligned() };
    if wanted < 8 {
        return Err(Failure::Invalid("set out->struct_size to the size of the struct".into()));
    }
    let n = (wanted as usize).min(std::mem::size_of::<T>());
    // SAFETY: the caller's struct holds `wanted` >= n bytes; value is a plain-old-data struct.
    unsafe {
        std::ptr::copy_nonoverlapping((&value as *const T).cast::<u8>(), out.cast::<u8>(), n);
        out.cast::<u64>().write_unaligned(n as u64);
    }
    Ok(())
}

/// Writes every client counter to `*out` (see `gantry_metrics_ex` for `struct_size`). Cheap;
/// safe from any thread, callbacks included.
///
/// # Safety
/// `client` is live; `out` points to `out->struct_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn gantry_client_metrics_ex(
    client: *const gantry_client,
    out: *mut gantry_metrics_ex,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let client = unsafe { client_arg(client)? };
        let m = client.metrics();
        let r = &m.retries_by_class;
        let value = gantry_metrics_ex {
            struct_size: std::mem::size_of::<gantry_metrics_ex>() as u64,
            bytes_downloaded: m.bytes_downloaded,
            bytes_uploaded: m.bytes_uploaded,
            requests: m.requests,
            retries: m.retries,
            connections_opened: m.connections_opened,
            errors: m.errors,
            timeouts: m.timeouts,
            checksum_failures: m.checksum_failures,
            checksums_verified: m.checksums_verified,
            retries_throttled: r.throttled,
            retries_server_error: r.server_error,
            retries_connect: r.connect,
            retries_transport: r.transport,
            retries_timeout: r.timeout,
            retries_protocol: r.protocol,
            retries_checksum: r.checksum,
            retry_budget_exhausted: m.retry_budget_exhausted,
            hedges_sent: m.hedges_sent,
            hedges_won: m.hedges_won,
            memory_in_use_bytes: m.memory_in_use_bytes,
            memory_peak_bytes: m.memory_peak_bytes,
            lane_count: m.lanes.len() as u64,
        };
        // SAFETY: per the contract above.
        unsafe { fill_sized(out, value) }
    })
}

/// Writes the counters of lane `index` (< `lane_count`) to `*out` (set `struct_size` first).
/// GANTRY_RESULT_INVALID_ARGUMENT for an index out of range.
///
/// # Safety
/// `client` is live; `out` points to `out->struct_size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn gantry_client_lane_metrics(
    client: *const gantry_client,
    index: u64,
    out: *mut gantry_lane_metrics,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let client = unsafe { client_arg(client)? };
        let lanes = client.metrics().lanes;
        let lane = lanes.get(index as usize).ok_or_else(|| {
            Failure::Invalid(format!("lane index {index} is out of range (the client has {} lanes)", lanes.len()))
        })?;
        let mut name = [0 as c_char; 64];
        for (dst, src) in name.iter_mut().zip(lane.name.bytes().take(63)) {
            *dst = src as c_char;
        }
        let value = gantry_lane_metrics {
            struct_size: std::mem::size_of::<gantry_lane_metrics>() as u64,
            name,
            bytes_downloaded: lane.bytes_downloaded,
            bytes_uploaded: lane.bytes_uploaded,
            connections_opened: lane.connections_opened,
            connect_errors: lane.connect_errors,
        };
        // SAFETY: per the contract above.
        unsafe { fill_sized(out, value) }
    })
}
