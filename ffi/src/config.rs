//! `gantry_config`: one string setter for every knob (the engine's `ClientConfigBuilder::set`),
//! so new knobs add no symbols.

use std::ffi::c_char;

use gantry::{ClientConfig, ClientConfigBuilder};

use crate::error::{gantry_error, gantry_result};
use crate::guard::{out_arg, str_arg, Failure};
use crate::handle::{borrow_mut, Boxed};

/// Client settings under construction. Create with `gantry_config_new`, set with
/// `gantry_config_set` (and `gantry_config_set_credentials_provider`), pass to
/// `gantry_client_new` (which copies it). The caller owns it (Box-owned) and frees it once
/// with `gantry_config_free`. Not thread-safe: serialize calls.
#[derive(Debug)]
pub struct gantry_config {
    pub(crate) builder: ClientConfigBuilder,
}

impl Boxed for gantry_config {}

impl gantry_config {
    pub(crate) fn build(&self) -> Result<ClientConfig, Failure> {
        Ok(self.builder.clone().build()?)
    }
}

/// Creates a configuration with every default (see the README's defaults table). The AWS
/// environment variables (AWS_REGION, AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...) apply to
/// whatever is not set explicitly.
///
/// # Safety
/// `out_config` is NULL or writable; `out_err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn gantry_config_new(
    out_config: *mut *mut gantry_config,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        let out_config = out_arg(out_config, "out_config")?;
        // SAFETY: checked non-NULL, writable per the contract; the caller owns the new object.
        unsafe { *out_config = gantry_config { builder: ClientConfig::builder() }.into_raw() };
        Ok(())
    })
}

/// Sets one knob from text. Keys: endpoint_url, region, access_key_id, secret_access_key,
/// session_token, profile, anonymous (true/false), part_size ("8MiB"), multipart_threshold,
/// copy_threshold (1GiB: larger server-side copies use UploadPartCopy), copy_part_size (128MiB),
/// max_connections, target_gbps, memory_limit, read_window, path_style, payload_signing
/// (signed/unsigned), connect_timeout_ms, tls_handshake_timeout_ms, first_byte_timeout_ms,
/// read_idle_timeout_ms, min_throughput_bytes_per_sec (0 disables), min_throughput_window_ms,
/// operation_timeout_ms (0 = none), no_response_timeout_ms (total wait on an endpoint that has
/// never answered before a request fails; default 20000, 0 disables), max_attempts, retry_budget_tokens (0 disables),
/// checksum_algorithm (crc64nvme/crc32c), checksum_upload (none/header/trailer),
/// verify_checksums (true/false), hedging (true/false), worker_threads, tcp_recv_buffer and
/// tcp_send_buffer (sizes; unset = kernel autotuning), nic (repeat to add
/// interfaces), bind (repeat to add source addresses), ca_bundle (PEM file of CA
/// certificates replacing the system trust store), tls_verify (true/false; false turns
/// certificate checks off for test clusters and logs a warning), proxy
/// (http://[user:password@]host:port, wins over HTTPS_PROXY / HTTP_PROXY), no_proxy
/// (NO_PROXY syntax), auto_config (true/false: size connections and NIC lanes from the EC2
/// instance), disable_s3_express_session_auth (true/false: true signs directory buckets
/// with the client's keys instead of S3 Express sessions; default false), s3_express_session_mode (read-write/read-only). Without credential keys the client uses the AWS default chain (environment, web
/// identity, profile, container endpoint, EC2 instance metadata), refreshed ahead of expiry.
/// The credential keys (access_key_id,
/// secret_access_key, session_token, profile, anonymous) replace a provider set with
/// `gantry_config_set_credentials_provider`. An unknown key or a bad value returns
/// GANTRY_RESULT_INVALID_ARGUMENT and leaves the configuration unchanged; cross-field checks
/// happen in gantry_client_new.
///
/// # Safety
/// `config` is a live configuration; `key` and `value` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn gantry_config_set(
    config: *mut gantry_config,
    key: *const c_char,
    value: *const c_char,
    out_err: *mut *mut gantry_error,
) -> gantry_result {
    ffi_fn!(out_err, || {
        // SAFETY: the caller passes NULL or a live configuration it does not use concurrently.
        let config = unsafe { borrow_mut(config, "config") }?;
        // SAFETY: per the contract above.
        let (key, value) = unsafe { (str_arg(key, "key")?, str_arg(value, "value")?) };
        // Set on a copy: a rejected value leaves the configuration as it was.
        config.builder = config.builder.clone().set(key, value)?;
        Ok(())
    })
}

/// Frees a configuration. NULL is allowed. A credentials provider's `release` runs here when
/// no client built from the configuration still holds the provider. On a panic (a bug) the
/// configuration is leaked.
///
/// # Safety
/// `config` is NULL or a configuration not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_config_free(config: *mut gantry_config) {
    ffi_fn!(fallback(()), || {
        // SAFETY: NULL or a configuration handed out once by gantry_config_new, freed once.
        drop(unsafe { gantry_config::from_raw(config) });
        Ok(())
    })
}
