//! Forward proxies: `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` (lower case
//! first, as curl reads them) or the `proxy` setting, which wins over all of them.
//!
//! - An https target goes through a `CONNECT host:port` tunnel; TLS then runs end to end
//!   inside it, so the proxy sees neither the keys nor the bytes.
//! - A plain http target is sent to the proxy in absolute form (`GET http://host/key`).
//! - `user:password@` in the proxy URL becomes `Proxy-Authorization: Basic`.
//! - `NO_PROXY`: `*`, host names (`example.com` also matches `a.example.com`; a leading `.`
//!   is the same), IP addresses, CIDR blocks (`10.0.0.0/8`), each optionally with `:port`.
//! - The instance metadata and container credential addresses (169.254.169.254,
//!   169.254.170.2, 169.254.170.23, fd00:ec2::254, fd00:ec2::23) are never proxied: they only
//!   exist on the local link.
//!
//! The connection to the proxy is a connection like any other: it is made from the lane's
//! interface or source address, so NIC binding still applies.

use std::net::IpAddr;

use base64::Engine;

use super::Authority;
use crate::error::{Error, Operation, Result};

/// A proxy to send connections through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Proxy {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// The `Proxy-Authorization` value, when the URL carried credentials (never logged).
    pub(crate) authorization: Option<String>,
}

/// Which proxy, if any, each target uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProxyRules {
    http: Option<Proxy>,
    https: Option<Proxy>,
    no_proxy: Vec<NoProxyEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum NoProxyEntry {
    All,
    Suffix { host: String, port: Option<u16> },
    Ip { ip: IpAddr, port: Option<u16> },
    Cidr { net: IpAddr, bits: u8 },
}

impl ProxyRules {
    /// The rules from an explicit `proxy` URL (for every scheme) and the variables `get`
    /// returns (`HTTPS_PROXY`, ..., in either case).
    pub(crate) fn new(
        explicit: Option<&str>,
        explicit_no_proxy: Option<&str>,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let var =
            |upper: &str| get(&upper.to_ascii_lowercase()).or_else(|| get(upper)).filter(|v| !v.trim().is_empty());
        let all = var("ALL_PROXY");
        let (http, https) = match explicit {
            Some(p) => (Some(p.to_string()), Some(p.to_string())),
            None => (var("HTTP_PROXY").or(all.clone()), var("HTTPS_PROXY").or(all)),
        };
        let no_proxy = explicit_no_proxy.map(str::to_string).or_else(|| var("NO_PROXY")).unwrap_or_default();
        Ok(ProxyRules {
            http: http.as_deref().map(parse_proxy).transpose()?,
            https: https.as_deref().map(parse_proxy).transpose()?,
            no_proxy: no_proxy.split(',').map(str::trim).filter(|s| !s.is_empty()).map(parse_no_proxy).collect(),
        })
    }

    /// The proxy a connection to `target` goes through, if any.
    pub(crate) fn for_target(&self, target: &Authority) -> Option<&Proxy> {
        let proxy = if target.tls { self.https.as_ref() } else { self.http.as_ref() }?;
        if is_link_local_service(&target.host) || self.no_proxy.iter().any(|e| e.matches(&target.host, target.port)) {
            return None;
        }
        Some(proxy)
    }
}

fn bad(what: &str, why: &str) -> Error {
    Error::invalid(Operation::Config, format!("proxy {what:?}: {why}"))
}

fn parse_proxy(url: &str) -> Result<Proxy> {
    let text = url.trim();
    let with_scheme = if text.contains("://") { text.to_string() } else { format!("http://{text}") };
    let (scheme, rest) = with_scheme.split_once("://").expect("has a scheme");
    match scheme.to_ascii_lowercase().as_str() {
        "http" => {}
        "https" => return Err(bad(url, "TLS to the proxy itself (https://) is not supported; use http://")),
        other => return Err(bad(url, &format!("scheme {other} is not supported; use http://"))),
    }
    let authority = rest.split('/').next().unwrap_or_default();
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let uri: http::uri::Authority = hostport.parse().map_err(|_| bad(url, "not a host:port"))?;
    let host = uri.host().trim_start_matches('[').trim_end_matches(']').to_string();
    if host.is_empty() {
        return Err(bad(url, "no host"));
    }
    let authorization = userinfo.map(|u| {
        let decoded = percent_encoding::percent_decode_str(u).decode_utf8_lossy().into_owned();
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(decoded))
    });
    Ok(Proxy { host, port: uri.port_u16().unwrap_or(80), authorization })
}

fn parse_no_proxy(entry: &str) -> NoProxyEntry {
    if entry == "*" {
        return NoProxyEntry::All;
    }
    if let Some((net, bits)) = entry.split_once('/') {
        if let (Ok(net), Ok(bits)) = (net.trim_matches(['[', ']']).parse::<IpAddr>(), bits.parse::<u8>()) {
            return NoProxyEntry::Cidr { net, bits };
        }
    }
    let bare = entry.trim_matches(['[', ']']);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return NoProxyEntry::Ip { ip, port: None };
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() && !h.contains(':') || h.ends_with(']') => {
            (h.trim_matches(['[', ']']), p.parse().ok())
        }
        _ => (entry, None),
    };
    if let Ok(ip) = host.parse::<IpAddr>() {
        return NoProxyEntry::Ip { ip, port };
    }
    NoProxyEntry::Suffix { host: host.trim_start_matches("*.").trim_start_matches('.').to_ascii_lowercase(), port }
}

impl NoProxyEntry {
    fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = |p: &Option<u16>| p.is_none_or(|p| p == port);
        match self {
            NoProxyEntry::All => true,
            NoProxyEntry::Ip { ip, port: p } => host.parse::<IpAddr>().is_ok_and(|h| h == *ip) && port_ok(p),
            NoProxyEntry::Cidr { net, bits } => host.parse::<IpAddr>().is_ok_and(|h| in_cidr(h, *net, *bits)),
            NoProxyEntry::Suffix { host: suffix, port: p } => {
                let host = host.to_ascii_lowercase();
                (host == *suffix || host.ends_with(&format!(".{suffix}"))) && port_ok(p)
            }
        }
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 { 0 } else { u32::MAX << (32 - bits) };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 { 0 } else { u128::MAX << (128 - bits) };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// IMDS and the container credential endpoints: link-local, never behind a proxy.
fn is_link_local_service(host: &str) -> bool {
    matches!(host, "169.254.169.254" | "169.254.170.2" | "169.254.170.23" | "fd00:ec2::254" | "fd00:ec2::23")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16, tls: bool) -> Authority {
        Authority { tls, host: host.into(), port }
    }

    fn rules(vars: &[(&str, &str)]) -> ProxyRules {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        ProxyRules::new(None, None, |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).unwrap()
    }

    #[test]
    fn scheme_and_case() {
        let r = rules(&[("HTTPS_PROXY", "http://user:p%40ss@proxy.corp:3128"), ("http_proxy", "plain:8080")]);
        let p = r.for_target(&target("s3.amazonaws.com", 443, true)).unwrap();
        assert_eq!((p.host.as_str(), p.port), ("proxy.corp", 3128));
        assert_eq!(p.authorization.as_deref(), Some("Basic dXNlcjpwQHNz")); // user:p@ss
        assert_eq!(r.for_target(&target("minio", 9000, false)).unwrap().host, "plain");
        assert!(rules(&[]).for_target(&target("x", 443, true)).is_none());
        // The explicit setting wins over the variables, for both schemes.
        let vars = |k: &str| (k == "HTTPS_PROXY").then(|| "http://env:1".to_string());
        let r = ProxyRules::new(Some("http://explicit:2"), None, vars).unwrap();
        assert_eq!(r.for_target(&target("x", 443, true)).unwrap().host, "explicit");
        assert!(ProxyRules::new(Some("https://p:1"), None, |_| None).is_err());
        assert!(ProxyRules::new(Some("socks5://p:1"), None, |_| None).is_err());
    }

    #[test]
    fn no_proxy_forms_and_link_local() {
        let r = rules(&[
            ("HTTPS_PROXY", "http://p:1"),
            ("NO_PROXY", "internal.corp, .svc.local,10.0.0.0/8, 192.168.1.5,minio:9000,[::1],fd00::/8"),
        ]);
        let proxied = |h: &str, port: u16| r.for_target(&target(h, port, true)).is_some();
        assert!(!proxied("internal.corp", 443));
        assert!(!proxied("s3.internal.corp", 443));
        assert!(proxied("notinternal.corp", 443));
        assert!(!proxied("minio.ns.svc.local", 443));
        assert!(!proxied("10.20.30.40", 443));
        assert!(proxied("11.0.0.1", 443));
        assert!(!proxied("192.168.1.5", 443));
        assert!(!proxied("minio", 9000));
        assert!(proxied("minio", 9001));
        assert!(!proxied("::1", 443));
        assert!(!proxied("fd00::5", 443));
        assert!(proxied("s3.us-east-1.amazonaws.com", 443));
        for ll in ["169.254.169.254", "169.254.170.2", "169.254.170.23", "fd00:ec2::254", "fd00:ec2::23"] {
            assert!(rules(&[("HTTPS_PROXY", "http://p:1"), ("HTTP_PROXY", "http://p:1")])
                .for_target(&target(ll, 80, false))
                .is_none());
        }
        assert!(rules(&[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "*")])
            .for_target(&target("x", 443, true))
            .is_none());
    }
}
