//! Every configuration knob by name, set from text: `builder.set("part_size", "8MiB")`.
//!
//! This is what the C ABI's single setter (`gantry_config_set`) and the bindings use, so a
//! new knob adds a key here and no new exported symbol anywhere.

use std::time::Duration;

use crate::checksum::{ChecksumAlgorithm, ChecksumUpload};
use crate::config::{parse_size, Addressing, ClientConfigBuilder, PayloadSigning};
use crate::credentials::{Credentials, CredentialsSource};
use crate::error::{Error, Operation, Result};

/// The keys [`ClientConfigBuilder::set`] accepts, with what their values look like.
pub const CONFIG_KEYS: &[(&str, &str)] = &[
    ("endpoint_url", "URL, e.g. http://127.0.0.1:9000"),
    ("region", "signing region"),
    ("access_key_id", "static key id (with secret_access_key)"),
    ("secret_access_key", "static secret (with access_key_id)"),
    ("session_token", "session token for the static keys"),
    ("profile", "profile of ~/.aws/credentials"),
    ("anonymous", "true: unsigned requests"),
    ("part_size", "size, e.g. 8MiB"),
    ("multipart_threshold", "size"),
    ("max_connections", "integer"),
    ("target_gbps", "number"),
    ("memory_limit", "size"),
    ("read_window", "size"),
    ("path_style", "true/false"),
    ("payload_signing", "signed/unsigned"),
    ("connect_timeout_ms", "milliseconds"),
    ("first_byte_timeout_ms", "milliseconds"),
    ("read_idle_timeout_ms", "milliseconds"),
    ("tls_handshake_timeout_ms", "milliseconds"),
    ("min_throughput_bytes_per_sec", "integer, 0 disables the floor"),
    ("min_throughput_window_ms", "milliseconds"),
    ("operation_timeout_ms", "milliseconds, 0 = no deadline"),
    (
        "no_response_timeout_ms",
        "milliseconds waited in total on an endpoint that has never answered before failing (default 20000, 0 = off)",
    ),
    ("max_attempts", "integer"),
    ("retry_budget_tokens", "integer, 0 disables the bucket"),
    ("checksum_algorithm", "crc64nvme/crc32c"),
    ("checksum_upload", "none/header/trailer"),
    ("verify_checksums", "true/false"),
    ("hedging", "true/false"),
    ("worker_threads", "integer"),
    ("tcp_recv_buffer", "size (SO_RCVBUF; unset = kernel autotuning)"),
    ("tcp_send_buffer", "size (SO_SNDBUF; unset = kernel autotuning)"),
    ("nic", "interface name; repeat to add more"),
    ("bind", "source address; repeat to add more"),
    ("auto_config", "true/false; on EC2, target and NIC lanes from the instance (default true)"),
    ("ca_bundle", "PEM file of CA certificates replacing the system trust store"),
    ("tls_verify", "true/false; false disables certificate checks (test clusters only)"),
    ("proxy", "http://[user:password@]host:port for every connection (wins over HTTPS_PROXY)"),
    ("no_proxy", "comma-separated hosts, suffixes, IPs, CIDRs or * that bypass the proxy"),
];

fn bad(key: &str, why: String) -> Error {
    Error::invalid(Operation::Config, format!("{key}: {why}"))
}

fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| bad(key, format!("cannot parse {value:?}")))
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(bad(key, format!("expected true or false, got {value:?}"))),
    }
}

fn millis(key: &str, value: &str) -> Result<Duration> {
    Ok(Duration::from_millis(num(key, value)?))
}

fn size(key: &str, value: &str) -> Result<u64> {
    parse_size(value).map_err(|e| bad(key, e.message().to_string()))
}

impl ClientConfigBuilder {
    /// Sets the knob `key` (see [`CONFIG_KEYS`]) from text. Unknown keys and unparsable values
    /// are [`crate::ErrorKind::InvalidInput`] errors; cross-field checks wait for `build`.
    pub fn set(mut self, key: &str, value: &str) -> Result<Self> {
        Ok(match key {
            "endpoint_url" => self.endpoint_url(value),
            "region" => self.region(value),
            "access_key_id" | "secret_access_key" | "session_token" => {
                let mut c = match self.credentials_source() {
                    CredentialsSource::Static(c) => c.clone(),
                    _ => Credentials::new("", ""),
                };
                match key {
                    "access_key_id" => c.access_key_id = value.to_string(),
                    "secret_access_key" => c.secret_access_key = value.to_string(),
                    _ => c.session_token = Some(value.to_string()),
                }
                self.credentials(CredentialsSource::Static(c))
            }
            "profile" => self.credentials(CredentialsSource::Default { profile: Some(value.to_string()) }),
            "anonymous" => match boolean(key, value)? {
                true => self.credentials(CredentialsSource::Anonymous),
                false => self.credentials(CredentialsSource::Default { profile: None }),
            },
            "ca_bundle" => self.ca_bundle(value),
            "tls_verify" => self.tls_verify(boolean(key, value)?),
            "proxy" => self.proxy(value),
            "no_proxy" => self.no_proxy(value),
            "part_size" => self.part_size_bytes(size(key, value)?),
            "multipart_threshold" => self.multipart_threshold_bytes(size(key, value)?),
            "max_connections" => self.max_connections(num(key, value)?),
            "target_gbps" => self.throughput_target_gbps(num(key, value)?),
            "memory_limit" => self.memory_limit_bytes(size(key, value)?),
            "read_window" => self.read_window_bytes(size(key, value)?),
            "path_style" => match boolean(key, value)? {
                true => self.addressing(Addressing::PathStyle),
                false => self.addressing(Addressing::Auto),
            },
            "payload_signing" => self.payload_signing(match value {
                "signed" => PayloadSigning::Signed,
                "unsigned" => PayloadSigning::Unsigned,
                _ => return Err(bad(key, format!("expected signed or unsigned, got {value:?}"))),
            }),
            "connect_timeout_ms" => {
                self.timeouts_mut().connect = millis(key, value)?;
                self
            }
            "first_byte_timeout_ms" => {
                self.timeouts_mut().first_byte = millis(key, value)?;
                self
            }
            "read_idle_timeout_ms" => {
                self.timeouts_mut().read_idle = millis(key, value)?;
                self
            }
            "tls_handshake_timeout_ms" => {
                self.timeouts_mut().tls_handshake = millis(key, value)?;
                self
            }
            "min_throughput_bytes_per_sec" => {
                self.timeouts_mut().min_throughput_bytes_per_sec = num(key, value)?;
                self
            }
            "min_throughput_window_ms" => {
                self.timeouts_mut().min_throughput_window = millis(key, value)?;
                self
            }
            "operation_timeout_ms" => {
                let d = millis(key, value)?;
                self.timeouts_mut().operation = (!d.is_zero()).then_some(d);
                self
            }
            "no_response_timeout_ms" => {
                self.timeouts_mut().no_response = millis(key, value)?;
                self
            }
            "retry_budget_tokens" => {
                self.retry_mut().budget_tokens = num(key, value)?;
                self
            }
            "checksum_algorithm" => {
                self.checksums_mut().algorithm = match value.trim().to_ascii_lowercase().as_str() {
                    "crc64nvme" => ChecksumAlgorithm::Crc64Nvme,
                    "crc32c" => ChecksumAlgorithm::Crc32c,
                    _ => return Err(bad(key, format!("expected crc64nvme or crc32c, got {value:?}"))),
                };
                self
            }
            "checksum_upload" => {
                self.checksums_mut().upload = match value.trim() {
                    "none" => ChecksumUpload::None,
                    "header" => ChecksumUpload::Header,
                    "trailer" => ChecksumUpload::Trailer,
                    _ => return Err(bad(key, format!("expected none, header or trailer, got {value:?}"))),
                };
                self
            }
            "verify_checksums" => {
                self.checksums_mut().verify_downloads = boolean(key, value)?;
                self
            }
            "hedging" => {
                self.hedging_mut().enabled = boolean(key, value)?;
                self
            }
            "max_attempts" => {
                self.retry_mut().max_attempts = num(key, value)?;
                self
            }
            "worker_threads" => self.worker_threads(num(key, value)?),
            "tcp_recv_buffer" => self.tcp_recv_buffer_bytes(size(key, value)? as usize),
            "tcp_send_buffer" => self.tcp_send_buffer_bytes(size(key, value)? as usize),
            "nic" => {
                self.interfaces_mut().push(value.to_string());
                self
            }
            "bind" => {
                let ip = num(key, value)?;
                self.bind_addresses_mut().push(ip);
                self
            }
            "auto_config" => self.auto_config(boolean(key, value)?),
            _ => return Err(bad(key, "unknown configuration key".into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{ClientConfig, MIB};

    #[test]
    fn every_listed_key_is_accepted() {
        let samples = [
            ("endpoint_url", "http://127.0.0.1:9"),
            ("anonymous", "true"),
            ("part_size", "16MiB"),
            ("path_style", "true"),
            ("payload_signing", "signed"),
            ("connect_timeout_ms", "1500"),
            ("nic", "lo"),
            ("checksum_algorithm", "crc32c"),
            ("checksum_upload", "trailer"),
            ("verify_checksums", "false"),
            ("hedging", "true"),
            ("bind", "127.0.0.1"),
        ];
        for (key, _) in super::CONFIG_KEYS {
            let value = samples.iter().find(|s| s.0 == *key).map_or("1", |s| s.1);
            let value = if key.ends_with("size")
                || *key == "memory_limit"
                || *key == "read_window"
                || *key == "multipart_threshold"
            {
                "16MiB"
            } else {
                value
            };
            assert!(ClientConfig::builder().set(key, value).is_ok(), "{key}={value}");
        }
    }

    #[test]
    fn keys_reach_the_config() {
        let c = ClientConfig::builder()
            .ignore_environment()
            .set("part_size", "16MiB")
            .and_then(|b| b.set("access_key_id", "AK"))
            .and_then(|b| b.set("secret_access_key", "SK"))
            .and_then(|b| b.set("connect_timeout_ms", "1500"))
            .and_then(|b| b.set("max_connections", "7"))
            .and_then(|b| b.set("tcp_recv_buffer", "256KiB"))
            .and_then(|b| b.set("no_response_timeout_ms", "4500"))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(c.part_size_bytes(), 16 * MIB);
        assert_eq!(c.max_connections(), 7);
        assert_eq!(c.tcp_recv_buffer_bytes, Some(256 << 10));
        assert_eq!(c.timeouts.connect, std::time::Duration::from_millis(1500));
        assert_eq!(c.timeouts.no_response, std::time::Duration::from_millis(4500));
        let defaults = ClientConfig::builder().ignore_environment().build().unwrap();
        assert_eq!(defaults.timeouts.no_response, std::time::Duration::from_secs(20));
        assert!(
            matches!(&c.credentials, crate::CredentialsSource::Static(k) if k.access_key_id == "AK" && k.secret_access_key == "SK")
        );
        let e = ClientConfig::builder().set("nope", "1").unwrap_err();
        assert!(e.message().contains("unknown configuration key"));
        assert!(ClientConfig::builder().set("part_size", "lots").is_err());
    }
}
