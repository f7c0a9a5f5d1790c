//! One GET, whatever its destination: `gantry_get_start` (and its blocking twin `gantry_get`)
//! take the engine's `GetOptions` as a size-prefixed `gantry_get_options` and the destination
//! as a `gantry_get_destination`. The older get calls (`gantry_get_into_start`,
//! `gantry_get_range_into_start`, `gantry_get_to_file_start`) are thin wrappers over the same
//! internal path ([`start_get`]).
//!
//! Versioning of `gantry_get_options`: the caller sets `struct_size` to the `sizeof` it was
//! compiled with, and the library reads only the fields that lie wholly inside it; the others
//! take their defaults. Every field's default is all-zero bytes (so `memset` to 0 plus
//! `struct_size` is the default too, and a field added later must keep that rule). A
//! `struct_size` larger than this library knows (a caller built against a newer header) is
//! accepted when the bytes this library does not know are all zero, i.e. the newer fields
//! are at their defaults; otherwise the call fails with GANTRY_RESULT_INVALID_ARGUMENT rather
//! than silently ignore an option.

use std::ffi::{c_char, c_void};
use std::mem::{offset_of, size_of};
use std::ptr::null_mut;

use crate::blocking::wait_for;
use crate::client::gantry_client;
use crate::error::{gantry_error, gantry_result};
use crate::guard::{str_arg, Failure};
use crate::handle::borrow_mut;
use crate::request::{gantry_done_fn, gantry_request};
use crate::start::{object_args, start_op, ObjectArgs, Region};

/// Whether a download checks its bytes against the object's stored checksum (the engine's
/// `DownloadChecksum`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum gantry_download_checksum {
    /// As the client is configured (`verify_downloads`, on by default). The default.
    GANTRY_DOWNLOAD_CHECKSUM_FROM_CONFIG = 0,
    /// Verify, whatever the client's setting.
    GANTRY_DOWNLOAD_CHECKSUM_VERIFY = 1,
    /// Neither ask for the checksum nor check it.
    GANTRY_DOWNLOAD_CHECKSUM_SKIP = 2,
}

/// Settings of one download (the engine's `GetOptions`): a plain value the caller owns,
/// read during the `gantry_get_start` / `gantry_get` call only (its strings are copied), so it
/// may live on the stack and be reused or freed as soon as the call returned.
///
/// Size-prefixed: set `struct_size = sizeof(gantry_get_options)` (gantry_get_options_init
/// does, and fills the defaults). Fields lying beyond `struct_size` are not read and take
/// their defaults, so a caller built against an older, smaller struct keeps working when
/// fields are added at the end. Every default is zero (0, false, NULL), so a zeroed struct
/// with `struct_size` set is the defaults too. A larger `struct_size` than the library knows
/// is accepted when the unknown bytes are all zero, and is GANTRY_RESULT_INVALID_ARGUMENT
/// otherwise (an option this library cannot apply is never ignored silently).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gantry_get_options {
    /// sizeof(gantry_get_options) as the caller was compiled: the first field, always read.
    pub struct_size: usize,
    /// Whether to read bytes [range_start, range_end) instead of the whole object.
    pub has_range: bool,
    /// First byte of the range (has_range only).
    pub range_start: u64,
    /// One past the last byte of the range (exclusive, has_range only; must be greater than
    /// range_start). A range reaching past the end of the object is cut there (UINT64_MAX:
    /// to the end; not with a buffer destination, which must hold range_end - range_start
    /// bytes); one starting at or past the end fails with HTTP 416 ("InvalidRange"). A
    /// ranged read is not checksum-verified (S3 sends no checksum for it).
    pub range_end: u64,
    /// Read only if the object's ETag is this one (If-Match, with its quotes as S3 returns
    /// it); otherwise GANTRY_RESULT_PRECONDITION_FAILED (HTTP 412) before any byte. NULL: no
    /// condition. Copied during the call.
    pub if_match: *const c_char,
    /// Read only if the object's ETag is not this one (If-None-Match); a match fails with
    /// GANTRY_RESULT_NOT_MODIFIED (HTTP 304): the caller's copy is current. NULL: no
    /// condition. Copied during the call.
    pub if_none_match: *const c_char,
    /// A version of a versioned object (versionId); NULL reads the current version. Copied
    /// during the call.
    pub version_id: *const c_char,
    /// Whether the bytes are verified against the stored checksum.
    pub checksum: gantry_download_checksum,
    /// Size of the ranged part requests; 0 uses the client's part_size.
    pub part_size_bytes: u64,
}

/// Fills `*options` with the defaults (the whole current object, the client's settings) and
/// sets its `struct_size`. Returns GANTRY_RESULT_NULL_PARAMETER for NULL.
///
/// # Safety
/// `options` is NULL or points to a writable `gantry_get_options`.
#[no_mangle]
pub unsafe extern "C" fn gantry_get_options_init(options: *mut gantry_get_options) -> gantry_result {
    ffi_fn!(std::ptr::null_mut(), || {
        // SAFETY: the caller passes NULL or a writable struct.
        let options = unsafe { borrow_mut(options, "options") }?;
        *options = gantry_get_options {
            struct_size: size_of::<gantry_get_options>(),
            has_range: false,
            range_start: 0,
            range_end: 0,
            if_match: std::ptr::null(),
            if_none_match: std::ptr::null(),
            version_id: std::ptr::null(),
            checksum: gantry_download_checksum::GANTRY_DOWNLOAD_CHECKSUM_FROM_CONFIG,
            part_size_bytes: 0,
        };
        Ok(())
    })
}

/// Reads one field of a caller's options struct of `size` bytes: `None` when the field does
/// not lie wholly inside it (a smaller, older struct). Read as a plain integer or pointer, so
/// no byte pattern the caller wrote can make an invalid Rust value.
///
/// # Safety
/// `base` points to `size` readable bytes.
unsafe fn field<T: Copy>(base: *const u8, size: usize, offset: usize) -> Option<T> {
    // SAFETY: inside the caller's struct (checked), which may be unaligned for T.
    (offset + size_of::<T>() <= size).then(|| unsafe { base.add(offset).cast::<T>().read_unaligned() })
}

/// A copied optional string option.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn opt_string(p: Option<*const c_char>, what: &'static str) -> Result<Option<String>, Failure> {
    match p {
        Some(p) if !p.is_null() => {
            // SAFETY: non-NULL and NUL-terminated per the caller's contract.
            Ok(Some(unsafe { str_arg(p, what) }?.to_string()))
        }
        _ => Ok(None),
    }
}

/// The engine's options from a caller's `gantry_get_options` (NULL: the defaults), read as the
/// module documentation describes.
///
/// # Safety
/// `p` is NULL or points to `p->struct_size` readable bytes whose string fields are NULL or
/// NUL-terminated.
pub(crate) unsafe fn read_options(p: *const gantry_get_options) -> Result<gantry::GetOptions, Failure> {
    let mut options = gantry::GetOptions::new();
    if p.is_null() {
        return Ok(options);
    }
    // SAFETY: a non-NULL options pointer starts with its size_t struct_size.
    let size = unsafe { p.cast::<usize>().read_unaligned() };
    if size < size_of::<usize>() {
        return Err(Failure::Invalid(format!(
            "options->struct_size is {size}: set it to sizeof(gantry_get_options) (gantry_get_options_init does)"
        )));
    }
    let base = p.cast::<u8>();
    let known = size_of::<gantry_get_options>();
    if size > known {
        // SAFETY: the caller states struct_size bytes are readable.
        let unknown = unsafe { std::slice::from_raw_parts(base.add(known), size - known) };
        if unknown.iter().any(|&b| b != 0) {
            return Err(Failure::Invalid(format!(
                "options set fields this library does not know (struct_size {size}, this library knows {known}): \
                 it is older than the header the caller was built with"
            )));
        }
    }
    macro_rules! read {
        ($t:ty, $name:ident) => {
            // SAFETY: base points to size readable bytes (the caller's struct_size).
            unsafe { field::<$t>(base, size, offset_of!(gantry_get_options, $name)) }
        };
    }
    if read!(u8, has_range).unwrap_or(0) != 0 {
        let start = read!(u64, range_start).unwrap_or(0);
        let end = read!(u64, range_end).unwrap_or(0);
        if end <= start {
            return Err(Failure::Invalid(format!("options range [{start}, {end}) is empty: range_end is exclusive")));
        }
        options = options.range(start..end);
    }
    let (if_match, if_none_match, version_id) =
        (read!(*const c_char, if_match), read!(*const c_char, if_none_match), read!(*const c_char, version_id));
    // SAFETY: the string fields are NULL or NUL-terminated (contract above).
    unsafe {
        options.if_match = opt_string(if_match, "options->if_match")?;
        options.if_none_match = opt_string(if_none_match, "options->if_none_match")?;
        options.version_id = opt_string(version_id, "options->version_id")?;
    }
    options.checksum = match read!(u32, checksum).unwrap_or(0) {
        0 => gantry::DownloadChecksum::FromConfig,
        1 => gantry::DownloadChecksum::Verify,
        2 => gantry::DownloadChecksum::Skip,
        other => return Err(Failure::Invalid(format!("options->checksum {other} is not a gantry_download_checksum"))),
    };
    options.part_size_bytes = read!(u64, part_size_bytes).filter(|&n| n != 0);
    Ok(options)
}

/// Where a download's bytes go.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum gantry_get_destination_kind {
    /// Caller memory: `buf`, `buf_len` (the bytes land at its start, straight from the
    /// network buffers).
    GANTRY_GET_DESTINATION_BUFFER = 0,
    /// The file at `path`.
    GANTRY_GET_DESTINATION_FILE = 1,
}

/// The destination of `gantry_get_start` / `gantry_get`: `kind` says which of the other
/// fields are read (the others are ignored). A plain value the caller owns, read during the
/// call only (`path` is copied). A kind added later may add fields at the end, read only for
/// that kind, so a caller's struct never needs to grow for the kinds it uses. In-order
/// streams with callbacks stay with `gantry_get_stream_start`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gantry_get_destination {
    /// Which destination (a gantry_get_destination_kind).
    pub kind: gantry_get_destination_kind,
    /// BUFFER: where the bytes go, starting at the object's first byte (or range_start). Must
    /// stay valid and untouched by the caller until the request ended (done was called, or
    /// wait returned; for gantry_get, until it returned). May be NULL when buf_len is 0.
    pub buf: *mut c_void,
    /// BUFFER: the bytes writable at buf: at least the object's size, or range_end -
    /// range_start with a range; a smaller buffer fails with GANTRY_RESULT_INVALID_ARGUMENT
    /// before any byte is written.
    pub buf_len: usize,
    /// FILE: the path, NUL-terminated (copied during the call). The bytes go to a temporary
    /// file in the same directory renamed over `path` only on success (a range is written at
    /// the start of the file); an existing device or FIFO such as /dev/null is written in
    /// order instead.
    pub path: *const c_char,
}

/// The destination of one GET, checked and copied.
pub(crate) enum Destination {
    Buffer(Region),
    File(String),
}

/// Checks and copies a caller's destination.
///
/// # Safety
/// `p` is NULL or points to a readable `gantry_get_destination` whose fields for its kind
/// satisfy their documentation.
unsafe fn read_destination(p: *const gantry_get_destination) -> Result<Destination, Failure> {
    if p.is_null() {
        return Err(Failure::Null("destination"));
    }
    // SAFETY: non-NULL and readable; the kind is read as an integer (any value is safe).
    let kind = unsafe { p.cast::<u8>().add(offset_of!(gantry_get_destination, kind)).cast::<u32>().read_unaligned() };
    // SAFETY: as above; pointers and sizes have no invalid values.
    let (buf, buf_len, path) = unsafe { ((*p).buf, (*p).buf_len, (*p).path) };
    match kind {
        0 => Ok(Destination::Buffer(Region::new(buf.cast(), buf_len, "destination->buf")?)),
        // SAFETY: NULL or NUL-terminated per the contract.
        1 => Ok(Destination::File(unsafe { str_arg(path, "destination->path") }?.to_string())),
        other => Err(Failure::Invalid(format!("destination->kind {other} is not a gantry_get_destination_kind"))),
    }
}

/// Starts one GET of `options` into `destination` on the workers: the one path of every get
/// call into memory or a file. The request's size is the bytes written: the object's size, or
/// with a range `min(range.end, size) - range.start`.
pub(crate) fn start_get(
    args: ObjectArgs<'_>,
    options: gantry::GetOptions,
    destination: Destination,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
) -> Result<(), Failure> {
    let ObjectArgs { client, owned: c, bucket, key } = args;
    start_op(client, done, user_data, out_request, async move {
        let info = match destination {
            Destination::Buffer(region) => {
                // SAFETY: the caller lends the region until the request ended.
                let buf = unsafe { region.slice_mut() };
                c.get_into_with(&bucket, &key, &options, buf).await?
            }
            Destination::File(path) => c.download_to_file_with(&bucket, &key, &options, &path).await?,
        };
        Ok(match &options.range {
            Some(r) => r.end.min(info.size) - r.start,
            None => info.size,
        })
    })
}

/// Starts downloading what `options` select of bucket/key (NULL options: the whole current
/// object with the client's settings) into `destination`, with parallel ranged GETs on the
/// client's workers. The request's size is the bytes written: the object's size, or with a
/// range min(range_end, size) - range_start. `done` (may be NULL) runs once on a worker
/// thread. `options` and `destination` are read during the call only (strings copied); a
/// buffer destination's memory is lent until the request ended.
///
/// Results (from the call, or the request's wait/done): GANTRY_RESULT_PRECONDITION_FAILED
/// when if_match does not match (HTTP 412), GANTRY_RESULT_NOT_MODIFIED when if_none_match
/// does (HTTP 304), GANTRY_RESULT_INVALID_ARGUMENT for a bad options struct or destination
/// (struct_size too small, an empty range, an unknown kind or checksum mode) or a buffer too
/// small, GANTRY_RESULT_NULL_PARAMETER for a NULL client, bucket, key, destination,
/// out_request, or destination->path of a FILE.
///
/// # Safety
/// `client` is live and outlives the request; strings are NUL-terminated; `options` is NULL
/// or points to `options->struct_size` readable bytes; `destination` points to a readable
/// `gantry_get_destination` valid for its kind; `user_data` as for `gantry_get_stream_start`.
#[no_mangle]
pub unsafe extern "C" fn gantry_get_start(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    options: *const gantry_get_options,
    destination: *const gantry_get_destination,
    done: gantry_done_fn,
    user_data: *mut c_void,
    out_request: *mut *mut gantry_request,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: per the contract above.
        let (args, options, destination) =
            unsafe { (object_args(client, bucket, key)?, read_options(options)?, read_destination(destination)?) };
        start_get(args, options, destination, done, user_data, out_request)
    })
}

/// Downloads what `options` select of bucket/key (NULL: the defaults) into `destination`:
/// `gantry_get_start` plus a wait. Writes the bytes written to `*out_size` (may be NULL). A
/// buffer destination is borrowed for the call. Fails with GANTRY_RESULT_INVALID_STATE in a
/// callback of a `*_start` request.
///
/// # Safety
/// As for `gantry_get_start`.
#[no_mangle]
pub unsafe extern "C" fn gantry_get(
    client: *const gantry_client,
    bucket: *const c_char,
    key: *const c_char,
    options: *const gantry_get_options,
    destination: *const gantry_get_destination,
    out_size: *mut u64,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(blocking(out_err), || {
        // SAFETY: the arguments are forwarded under the same contract; the call waits.
        let size = unsafe {
            wait_for(|req, err| gantry_get_start(client, bucket, key, options, destination, None, null_mut(), req, err))
        }?;
        if !out_size.is_null() {
            // SAFETY: the caller passes NULL or a writable pointer.
            unsafe { *out_size = size };
        }
        Ok(())
    })
}
