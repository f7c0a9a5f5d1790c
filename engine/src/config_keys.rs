//! Every configuration knob by name, set from text: `builder.set("part_size", "8MiB")`.
//!
//! This is what the C ABI's single setter (`gantry_config_set`) and the bindings use, so a
//! new knob adds a key here and no new exported symbol anywhere.

use std::time::Duration;

use crate::checksum::{ChecksumAlgorithm, ChecksumUpload};
use crate::config::{parse_size, Addressing, ClientConfigBuilder, ExpressSessionMode, PayloadSigning};
use crate::credentials::{Credentials, CredentialsSource};
use crate::error::{Error, Operation, Result};

/// Declares every key once: its name, what its value looks like, and how it is applied. From
/// this one list come [`CONFIG_KEYS`] (names and docs, public) and the setter's table (names
/// and appliers), so a key cannot be listed without being settable or the other way round.
/// The C header's `gantry_config_set` doc is checked against [`CONFIG_KEYS`] by a test in
/// `ffi/tests/config_keys_doc.rs`.
macro_rules! config_keys {
    ($($name:literal: $doc:expr => $apply:expr;)*) => {
        /// The keys [`ClientConfigBuilder::set`] accepts, with what their values look like.
        pub const CONFIG_KEYS: &[(&str, &str)] = &[$(($name, $doc)),*];

        /// Each key's name and how it applies a value to the builder.
        const APPLY: &[(&str, Apply)] = &[$(($name, $apply)),*];
    };
}

/// Applies one value: `(builder, key, value)`. The key is passed so errors can name it.
type Apply = fn(ClientConfigBuilder, &str, &str) -> Result<ClientConfigBuilder>;

config_keys! {
    "endpoint_url": "URL, e.g. http://127.0.0.1:9000" => |b, _, v| Ok(b.endpoint_url(v));
    "region": "signing region" => |b, _, v| Ok(b.region(v));
    "access_key_id": "static key id (with secret_access_key)" => |b, _, v| {
        Ok(with_static_keys(b, |c| c.access_key_id = v.to_string()))
    };
    "secret_access_key": "static secret (with access_key_id)" => |b, _, v| {
        Ok(with_static_keys(b, |c| c.secret_access_key = v.to_string()))
    };
    "session_token": "session token for the static keys" => |b, _, v| {
        Ok(with_static_keys(b, |c| c.session_token = Some(v.to_string())))
    };
    "profile": "profile of ~/.aws/credentials" => |b, _, v| {
        Ok(b.credentials(CredentialsSource::Default { profile: Some(v.to_string()) }))
    };
    "anonymous": "true: unsigned requests" => |b, k, v| {
        Ok(match boolean(k, v)? {
            true => b.credentials(CredentialsSource::Anonymous),
            false => b.credentials(CredentialsSource::Default { profile: None }),
        })
    };
    "part_size": "size, e.g. 8MiB" => |b, k, v| Ok(b.part_size_bytes(size(k, v)?));
    "multipart_threshold": "size" => |b, k, v| Ok(b.multipart_threshold_bytes(size(k, v)?));
    "copy_threshold": "size; larger server-side copies use UploadPartCopy (default 1GiB)" => |b, k, v| {
        Ok(b.copy_threshold_bytes(size(k, v)?))
    };
    "copy_part_size": "size of UploadPartCopy parts (default 128MiB)" => |b, k, v| {
        Ok(b.copy_part_size_bytes(size(k, v)?))
    };
    "max_connections": "integer" => |b, k, v| Ok(b.max_connections(num(k, v)?));
    "target_gbps": "number" => |b, k, v| Ok(b.throughput_target_gbps(num(k, v)?));
    "memory_limit": "size" => |b, k, v| Ok(b.memory_limit_bytes(size(k, v)?));
    "read_window": "size" => |b, k, v| Ok(b.read_window_bytes(size(k, v)?));
    "path_style": "true/false" => |b, k, v| {
        Ok(match boolean(k, v)? {
            true => b.addressing(Addressing::PathStyle),
            false => b.addressing(Addressing::Auto),
        })
    };
    "payload_signing": "signed/unsigned" => |b, k, v| {
        Ok(b.payload_signing(match v {
            "signed" => PayloadSigning::Signed,
            "unsigned" => PayloadSigning::Unsigned,
            _ => return Err(bad(k, format!("expected signed or unsigned, got {v:?}"))),
        }))
    };
    "connect_timeout_ms": "milliseconds" => |mut b, k, v| {
        b.timeouts_mut().connect = millis(k, v)?;
        Ok(b)
    };
    "first_byte_timeout_ms": "milliseconds" => |mut b, k, v| {
        b.timeouts_mut().first_byte = millis(k, v)?;
        Ok(b)
    };
    "read_idle_timeout_ms": "milliseconds" => |mut b, k, v| {
        b.timeouts_mut().read_idle = millis(k, v)?;
        Ok(b)
    };
    "tls_handshake_timeout_ms": "milliseconds" => |mut b, k, v| {
        b.timeouts_mut().tls_handshake = millis(k, v)?;
        Ok(b)
    };
    "min_throughput_bytes_per_sec": "integer, 0 disables the floor" => |mut b, k, v| {
        b.timeouts_mut().min_throughput_bytes_per_sec = num(k, v)?;
        Ok(b)
    };
    "min_throughput_window_ms": "milliseconds" => |mut b, k, v| {
        b.timeouts_mut().min_throughput_window = millis(k, v)?;
        Ok(b)
    };
    "operation_timeout_ms": "milliseconds, 0 = no deadline" => |mut b, k, v| {
        let d = millis(k, v)?;
        b.timeouts_mut().operation = (!d.is_zero()).then_some(d);
        Ok(b)
    };
    "no_response_timeout_ms":
        "milliseconds waited in total on an endpoint that has never answered before failing (default 20000, 0 = off)"
        => |mut b, k, v| {
            b.timeouts_mut().no_response = millis(k, v)?;
            Ok(b)
        };
    "max_attempts": "integer" => |mut b, k, v| {
        b.retry_mut().max_attempts = num(k, v)?;
        Ok(b)
    };
    "retry_budget_tokens": "integer, 0 disables the bucket" => |mut b, k, v| {
        b.retry_mut().budget_tokens = num(k, v)?;
        Ok(b)
    };
    "checksum_algorithm": "crc64nvme/crc32c" => |mut b, k, v| {
        b.checksums_mut().algorithm = match v.trim().to_ascii_lowercase().as_str() {
            "crc64nvme" => ChecksumAlgorithm::Crc64Nvme,
            "crc32c" => ChecksumAlgorithm::Crc32c,
            _ => return Err(bad(k, format!("expected crc64nvme or crc32c, got {v:?}"))),
        };
        Ok(b)
    };
    "checksum_upload": "none/header/trailer" => |mut b, k, v| {
        b.checksums_mut().upload = match v.trim() {
            "none" => ChecksumUpload::None,
            "header" => ChecksumUpload::Header,
            "trailer" => ChecksumUpload::Trailer,
            _ => return Err(bad(k, format!("expected none, header or trailer, got {v:?}"))),
        };
        Ok(b)
    };
    "verify_checksums": "true/false" => |mut b, k, v| {
        b.checksums_mut().verify_downloads = boolean(k, v)?;
        Ok(b)
    };
    "hedging": "true/false" => |mut b, k, v| {
        b.hedging_mut().enabled = boolean(k, v)?;
        Ok(b)
    };
    "worker_threads": "integer" => |b, k, v| Ok(b.worker_threads(num(k, v)?));
    "tcp_recv_buffer": "size (SO_RCVBUF; unset = kernel autotuning)" => |b, k, v| {
        Ok(b.tcp_recv_buffer_bytes(size(k, v)? as usize))
    };
    "tcp_send_buffer": "size (SO_SNDBUF; unset = kernel autotuning)" => |b, k, v| {
        Ok(b.tcp_send_buffer_bytes(size(k, v)? as usize))
    };
    "nic": "interface name; repeat to add more" => |mut b, _, v| {
        b.interfaces_mut().push(v.to_string());
        Ok(b)
    };
    "bind": "source address; repeat to add more" => |mut b, k, v| {
        let ip = num(k, v)?;
        b.bind_addresses_mut().push(ip);
        Ok(b)
    };
    "auto_config": "true/false; on EC2, target and NIC lanes from the instance (default true)" => |b, k, v| {
        Ok(b.auto_config(boolean(k, v)?))
    };
    "ca_bundle": "PEM file of CA certificates replacing the system trust store" => |b, _, v| Ok(b.ca_bundle(v));
    "tls_verify": "true/false; false disables certificate checks (test clusters only)" => |b, k, v| {
        Ok(b.tls_verify(boolean(k, v)?))
    };
    "disable_s3_express_session_auth": "true/false; true signs directory buckets with the client's keys (default false)" => |b, k, v| {
        Ok(b.disable_s3_express_session_auth(boolean(k, v)?))
    };
    "s3_express_session_mode": "read-write/read-only" => |b, k, v| {
        Ok(b.s3_express_session_mode(match v.trim() {
            "read-write" => ExpressSessionMode::ReadWrite,
            "read-only" => ExpressSessionMode::ReadOnly,
            _ => return Err(bad(k, format!("expected read-write or read-only, got {v:?}"))),
        }))
    };
    "proxy": "http://[user:password@]host:port for every connection (wins over HTTPS_PROXY)" => |b, _, v| {
        Ok(b.proxy(v))
    };
    "no_proxy": "comma-separated hosts, suffixes, IPs, CIDRs or * that bypass the proxy" => |b, _, v| {
        Ok(b.no_proxy(v))
    };
}

/// Changes one field of the static keys, starting from empty ones when another credential
/// source was set: the three static-key settings can come in any order.
fn with_static_keys(b: ClientConfigBuilder, change: impl FnOnce(&mut Credentials)) -> ClientConfigBuilder {
    let mut c = match b.credentials_source() {
        CredentialsSource::Static(c) => c.clone(),
        _ => Credentials::new("", ""),
    };
    change(&mut c);
    b.credentials(CredentialsSource::Static(c))
}

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
    pub fn set(self, key: &str, value: &str) -> Result<Self> {
        match APPLY.iter().find(|(name, _)| *name == key) {
            Some((_, apply)) => apply(self, key, value),
            None => Err(bad(key, "unknown configuration key".into())),
        }
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
            ("disable_s3_express_session_auth", "true"),
            ("s3_express_session_mode", "read-only"),
        ];
        for (key, _) in super::CONFIG_KEYS {
            let value = samples.iter().find(|s| s.0 == *key).map_or("1", |s| s.1);
            let value = if key.ends_with("size")
                || *key == "memory_limit"
                || *key == "read_window"
                || *key == "multipart_threshold"
                || *key == "copy_threshold"
            {
                "16MiB"
            } else {
                value
            };
            assert!(ClientConfig::builder().set(key, value).is_ok(), "{key}={value}");
        }
    }

    #[test]
    fn every_key_is_declared_once() {
        let mut names: Vec<_> = super::CONFIG_KEYS.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a key is declared twice");
        assert_eq!(super::APPLY.len(), before);
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
            .and_then(|b| b.set("disable_s3_express_session_auth", "true"))
            .and_then(|b| b.set("s3_express_session_mode", "read-only"))
            .unwrap()
            .build()
            .unwrap();
        assert!(!c.express_session_auth);
        assert_eq!(c.express_session_mode, crate::ExpressSessionMode::ReadOnly);
        assert_eq!(c.part_size_bytes(), 16 * MIB);
        assert_eq!(c.max_connections(), 7);
        assert_eq!(c.tcp_recv_buffer_bytes, Some(256 << 10));
        assert_eq!(c.timeouts.connect, std::time::Duration::from_millis(1500));
        assert_eq!(c.timeouts.no_response, std::time::Duration::from_millis(4500));
        let defaults = ClientConfig::builder().ignore_environment().build().unwrap();
        assert_eq!(defaults.timeouts.no_response, std::time::Duration::from_secs(20));
        assert!(defaults.express_session_auth, "S3 Express sessions are on by default");
        assert!(
            matches!(&c.credentials, crate::CredentialsSource::Static(k) if k.access_key_id == "AK" && k.secret_access_key == "SK")
        );
        let e = ClientConfig::builder().set("nope", "1").unwrap_err();
        assert!(e.message().contains("unknown configuration key"));
        assert!(ClientConfig::builder().set("part_size", "lots").is_err());
    }
}
