//! `gantry_config`: one string setter for every knob, so new knobs add no symbols.

use std::ffi::c_char;
use std::time::Duration;

use gantry::{
    parse_size, Addressing, ClientConfig, Credentials, CredentialsSource, PayloadSigning, RetryConfig, Timeouts,
};

use crate::error::{gantry_error, gantry_result};
use crate::guard::{run, str_arg, Failure};

/// Client settings under construction. Create with `gantry_config_new`, set with
/// `gantry_config_set`, pass to `gantry_client_new` (which copies it), free with
/// `gantry_config_free`. Not thread-safe.
#[derive(Debug, Default)]
pub struct gantry_config {
    endpoint_url: Option<String>,
    region: Option<String>,
    access_key_id: Option<String>,
    secret_access_key: Option<String>,
    session_token: Option<String>,
    profile: Option<String>,
    anonymous: bool,
    part_size: Option<u64>,
    multipart_threshold: Option<u64>,
    max_connections: Option<usize>,
    target_gbps: Option<f64>,
    memory_limit: Option<u64>,
    read_window: Option<u64>,
    path_style: bool,
    signed_payload: bool,
    timeouts: Timeouts,
    retry: RetryConfig,
    worker_threads: Option<usize>,
    nics: Vec<String>,
    binds: Vec<std::net::IpAddr>,
}

fn parse<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, Failure> {
    value.trim().parse().map_err(|_| Failure::Invalid(format!("{key}: cannot parse {value:?}")))
}

fn boolean(key: &str, value: &str) -> Result<bool, Failure> {
    match value.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Failure::Invalid(format!("{key}: expected true or false, got {value:?}"))),
    }
}

fn size(key: &str, value: &str) -> Result<u64, Failure> {
    parse_size(value).map_err(|e| Failure::Invalid(format!("{key}: {e}")))
}

fn millis(key: &str, value: &str) -> Result<Duration, Failure> {
    Ok(Duration::from_millis(parse(key, value)?))
}

impl gantry_config {
    fn set(&mut self, key: &str, value: &str) -> Result<(), Failure> {
        match key {
            "endpoint_url" => self.endpoint_url = Some(value.to_string()),
            "region" => self.region = Some(value.to_string()),
            "access_key_id" => self.access_key_id = Some(value.to_string()),
            "secret_access_key" => self.secret_access_key = Some(value.to_string()),
            "session_token" => self.session_token = Some(value.to_string()),
            "profile" => self.profile = Some(value.to_string()),
            "anonymous" => self.anonymous = boolean(key, value)?,
            "part_size" => self.part_size = Some(size(key, value)?),
            "multipart_threshold" => self.multipart_threshold = Some(size(key, value)?),
            "max_connections" => self.max_connections = Some(parse(key, value)?),
            "target_gbps" => self.target_gbps = Some(parse(key, value)?),
            "memory_limit" => self.memory_limit = Some(size(key, value)?),
            "read_window" => self.read_window = Some(size(key, value)?),
            "path_style" => self.path_style = boolean(key, value)?,
            "payload_signing" => {
                self.signed_payload = match value {
                    "signed" => true,
                    "unsigned" => false,
                    _ => {
                        return Err(Failure::Invalid(format!(
                            "payload_signing: expected signed or unsigned, got {value:?}"
                        )))
                    }
                }
            }
            "connect_timeout_ms" => self.timeouts.connect = millis(key, value)?,
            "first_byte_timeout_ms" => self.timeouts.first_byte = millis(key, value)?,
            "read_idle_timeout_ms" => self.timeouts.read_idle = millis(key, value)?,
            "max_attempts" => self.retry.max_attempts = parse(key, value)?,
            "worker_threads" => self.worker_threads = Some(parse(key, value)?),
            "nic" => self.nics.push(value.to_string()),
            "bind" => self.binds.push(parse(key, value)?),
            _ => return Err(Failure::Invalid(format!("unknown configuration key {key:?}"))),
        }
        Ok(())
    }

    pub(crate) fn build(&self) -> Result<ClientConfig, Failure> {
        let mut b = ClientConfig::builder().timeouts(self.timeouts.clone()).retry(self.retry.clone());
        if let Some(v) = &self.endpoint_url {
            b = b.endpoint_url(v);
        }
        if let Some(v) = &self.region {
            b = b.region(v);
        }
        b = match (&self.access_key_id, &self.secret_access_key) {
            _ if self.anonymous => b.credentials(CredentialsSource::Anonymous),
            (Some(id), Some(secret)) => b.credentials(CredentialsSource::Static(Credentials {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
                session_token: self.session_token.clone(),
            })),
            (None, None) => b.credentials(CredentialsSource::Default { profile: self.profile.clone() }),
            _ => return Err(Failure::Invalid("access_key_id and secret_access_key must be set together".into())),
        };
        if let Some(v) = self.part_size {
            b = b.part_size_bytes(v);
        }
        if let Some(v) = self.multipart_threshold {
            b = b.multipart_threshold_bytes(v);
        }
        if let Some(v) = self.max_connections {
            b = b.max_connections(v);
        }
        if let Some(v) = self.target_gbps {
            b = b.throughput_target_gbps(v);
        }
        if let Some(v) = self.memory_limit {
            b = b.memory_limit_bytes(v);
        }
        if let Some(v) = self.read_window {
            b = b.read_window_bytes(v);
        }
        if self.path_style {
            b = b.addressing(Addressing::PathStyle);
        }
        if self.signed_payload {
            b = b.payload_signing(PayloadSigning::Signed);
        }
        if let Some(v) = self.worker_threads {
            b = b.worker_threads(v);
        }
        if !self.nics.is_empty() {
            b = b.network_interfaces(self.nics.clone());
        }
        if !self.binds.is_empty() {
            b = b.bind_addresses(self.binds.clone());
        }
        Ok(b.build()?)
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
    run(out_err, || {
        if out_config.is_null() {
            return Err(Failure::Null("out_config"));
        }
        // SAFETY: checked non-NULL; the caller owns the new object.
        unsafe { *out_config = Box::into_raw(Box::<gantry_config>::default()) };
        Ok(())
    })
}

/// Sets one knob from text. Keys: endpoint_url, region, access_key_id, secret_access_key,
/// session_token, profile, anonymous (true/false), part_size ("8MiB"), multipart_threshold,
/// max_connections, target_gbps, memory_limit, read_window, path_style, payload_signing
/// (signed/unsigned), connect_timeout_ms, first_byte_timeout_ms, read_idle_timeout_ms,
/// max_attempts, worker_threads, nic (repeat to add interfaces), bind (repeat to add source
/// addresses). An unknown key or a bad value returns GANTRY_RESULT_INVALID_ARGUMENT.
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
    run(out_err, || {
        // SAFETY: the caller passes NULL or a live configuration it does not use concurrently.
        let config = unsafe { config.as_mut() }.ok_or(Failure::Null("config"))?;
        // SAFETY: per the contract above.
        let (key, value) = unsafe { (str_arg(key, "key")?, str_arg(value, "value")?) };
        config.set(key, value)
    })
}

/// Frees a configuration. NULL is allowed.
///
/// # Safety
/// `config` is NULL or a configuration not yet freed.
#[no_mangle]
pub unsafe extern "C" fn gantry_config_free(config: *mut gantry_config) {
    if !config.is_null() {
        // SAFETY: came from Box::into_raw in gantry_config_new; freed once.
        drop(unsafe { Box::from_raw(config) });
    }
}
