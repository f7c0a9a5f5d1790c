//! Lanes: the local ends connections leave from (a network interface or a source address),
//! how new connections are spread across them and across the server's addresses, and which
//! ones are quarantined after repeated failures.
//!
//! A P5-class host has many NICs and one TCP flow path cannot fill them; S3 also answers DNS
//! with many addresses. So every connection is opened on a (lane, server address) pair:
//!
//! - the lane is the one with the fewest connections in use right now (ties go round-robin),
//!   which keeps every NIC busy in proportion, whatever the request mix;
//! - the server address is the next one, round-robin, of the host's resolved addresses
//!   (re-resolved every [`DNS_TTL`]), so load spreads across S3's front ends.
//!
//! A lane or an address whose connects fail [`QUARANTINE_AFTER`] times in a row is skipped for
//! [`QUARANTINE_FOR`], then tried again; when everything is quarantined, everything is tried
//! (failing loudly beats refusing to try).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Consecutive connect failures that quarantine a lane or an address.
pub(crate) const QUARANTINE_AFTER: u32 = 3;
/// How long a quarantine lasts.
pub(crate) const QUARANTINE_FOR: Duration = Duration::from_secs(30);
/// How long resolved addresses are reused before resolving again.
pub(crate) const DNS_TTL: Duration = Duration::from_secs(30);

/// Where a lane's sockets are bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LocalBind {
    /// The OS chooses (no binding).
    Default,
    /// `SO_BINDTODEVICE` to this interface.
    Device(String),
    /// Bind to this source address (port 0).
    Address(IpAddr),
}

impl std::fmt::Display for LocalBind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocalBind::Default => f.write_str("the default interface"),
            LocalBind::Device(d) => write!(f, "interface {d}"),
            LocalBind::Address(a) => write!(f, "source address {a}"),
        }
    }
}

/// Failure streak and quarantine of one lane or address.
#[derive(Debug, Default)]
struct Health {
    failures: u32,
    until: Option<Instant>,
}

impl Health {
    fn usable(&self, now: Instant) -> bool {
        self.until.is_none_or(|t| now >= t)
    }
    fn record(&mut self, ok: bool, now: Instant) {
        if ok {
            *self = Health::default();
        } else {
            self.failures += 1;
            if self.failures >= QUARANTINE_AFTER {
                self.until = Some(now + QUARANTINE_FOR);
                self.failures = 0;
            }
        }
    }
}

/// One local end and its counters.
#[derive(Debug)]
pub(crate) struct Lane {
    pub(crate) bind: LocalBind,
    pub(crate) name: String,
    in_use: AtomicUsize,
    pub(crate) bytes_downloaded: AtomicU64,
    pub(crate) bytes_uploaded: AtomicU64,
    pub(crate) connections_opened: AtomicU64,
    pub(crate) errors: AtomicU64,
    health: Mutex<Health>,
}

impl Lane {
    fn new(bind: LocalBind) -> Self {
        let name = match &bind {
            LocalBind::Default => "default".to_string(),
            LocalBind::Device(d) => d.clone(),
            LocalBind::Address(a) => a.to_string(),
        };
        Lane {
            bind,
            name,
            in_use: AtomicUsize::new(0),
            bytes_downloaded: AtomicU64::new(0),
            bytes_uploaded: AtomicU64::new(0),
            connections_opened: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            health: Mutex::new(Health::default()),
        }
    }

    /// Marks one more connection of this lane in use.
    fn acquire(&self) {
        self.in_use.fetch_add(1, Relaxed);
    }

    /// Marks one connection of this lane no longer in use.
    pub(crate) fn release(&self) {
        self.in_use.fetch_sub(1, Relaxed);
    }

    pub(crate) fn in_use(&self) -> usize {
        self.in_use.load(Relaxed)
    }
}

#[derive(Debug)]
struct Resolved {
    addrs: Vec<SocketAddr>,
    at: Instant,
    next: usize,
}

/// All lanes of a client, the resolved addresses of each host, and their health.
#[derive(Debug)]
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
    next_lane: AtomicUsize,
    choosing: Mutex<()>,
    dns: Mutex<HashMap<(String, u16), Resolved>>,
    addr_health: Mutex<HashMap<SocketAddr, Health>>,
}

impl Lanes {
    /// Lanes for these interfaces and source addresses; none given means one default lane.
    pub(crate) fn new(interfaces: &[String], addresses: &[IpAddr]) -> Self {
        let mut lanes: Vec<Lane> = interfaces.iter().map(|d| Lane::new(LocalBind::Device(d.clone()))).collect();
        lanes.extend(addresses.iter().map(|a| Lane::new(LocalBind::Address(*a))));
        if lanes.is_empty() {
            lanes.push(Lane::new(LocalBind::Default));
        }
        Lanes {
            lanes,
            next_lane: AtomicUsize::new(0),
            choosing: Mutex::new(()),
            dns: Mutex::new(HashMap::new()),
            addr_health: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn get(&self, id: usize) -> &Lane {
        &self.lanes[id]
    }

    pub(crate) fn all(&self) -> &[Lane] {
        &self.lanes
    }

    /// Picks the lane for the next request and counts it as in use at once (so requests
    /// that are still connecting count too, and a burst of requests spreads instead of all
    /// seeing the same counts): the usable lane with the fewest connections in use, ties
    /// round-robin, quarantined lanes only when nothing else is left. `tried` lanes are
    /// skipped; `None` when every lane was tried. Undo with [`Lane::release`].
    pub(crate) fn choose(&self, tried: &[usize]) -> Option<usize> {
        let _guard = self.choosing.lock().expect("lane choice");
        let n = self.lanes.len();
        let start = self.next_lane.fetch_add(1, Relaxed) % n;
        let now = Instant::now();
        let best = (0..n).map(|i| (start + i) % n).filter(|i| !tried.contains(i)).min_by_key(|&i| {
            (!self.lanes[i].health.lock().expect("lane health").usable(now), self.lanes[i].in_use())
        })?;
        self.lanes[best].acquire();
        Some(best)
    }

    /// Records a connect attempt's outcome for a lane and a server address.
    pub(crate) fn record_connect(&self, lane: usize, addr: SocketAddr, ok: bool) {
        let now = Instant::now();
        self.lanes[lane].health.lock().expect("lane health").record(ok, now);
        self.addr_health.lock().expect("addr health").entry(addr).or_default().record(ok, now);
        if !ok {
            self.lanes[lane].errors.fetch_add(1, Relaxed);
        }
    }

    /// The host's addresses to try for one new connection: round-robin start, quarantined
    /// addresses last. Resolves when the cached answer is missing or older than [`DNS_TTL`].
    pub(crate) async fn addresses(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let key = (host.to_string(), port);
        let cached = {
            let mut dns = self.dns.lock().expect("dns cache");
            match dns.get_mut(&key) {
                Some(r) if r.at.elapsed() < DNS_TTL && !r.addrs.is_empty() => {
                    r.next = r.next.wrapping_add(1);
                    Some(rotate(&r.addrs, r.next))
                }
                _ => None,
            }
        };
        let addrs = match cached {
            Some(a) => a,
            None => {
                let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port)).await?.collect();
                let mut dns = self.dns.lock().expect("dns cache");
                let entry = dns.entry(key).or_insert(Resolved { addrs: Vec::new(), at: Instant::now(), next: 0 });
                entry.addrs = addrs;
                entry.at = Instant::now();
                entry.next = entry.next.wrapping_add(1);
                rotate(&entry.addrs, entry.next)
            }
        };
        let now = Instant::now();
        let health = self.addr_health.lock().expect("addr health");
        let mut addrs = addrs;
        addrs.sort_by_key(|a| !health.get(a).is_none_or(|h| h.usable(now)));
        Ok(addrs)
    }
}

fn rotate(addrs: &[SocketAddr], by: usize) -> Vec<SocketAddr> {
    let n = addrs.len().max(1);
    let k = by % n;
    addrs[k..].iter().chain(&addrs[..k]).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_requests_spreads_evenly() {
        let lanes = Lanes::new(&["a".into(), "b".into(), "c".into(), "d".into()], &[]);
        // 16 requests choose before any of them has connected.
        let picks: Vec<usize> = (0..16).map(|_| lanes.choose(&[]).unwrap()).collect();
        for id in 0..4 {
            assert_eq!(lanes.get(id).in_use(), 4, "{picks:?}");
        }
        // The least-used lane is chosen next.
        lanes.get(2).release();
        lanes.get(2).release();
        assert_eq!(lanes.choose(&[]), Some(2));
        // Tried lanes are skipped; when all were tried there is no choice.
        assert_ne!(lanes.choose(&[2]), Some(2));
        assert_eq!(lanes.choose(&[0, 1, 2, 3]), None);
    }

    #[test]
    fn repeated_failures_quarantine_a_lane() {
        let lanes = Lanes::new(&["a".into(), "b".into()], &[]);
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for _ in 0..QUARANTINE_AFTER {
            lanes.record_connect(0, addr, false);
        }
        for _ in 0..5 {
            let id = lanes.choose(&[]).unwrap();
            assert_eq!(id, 1, "a quarantined lane is avoided even when busier lanes remain");
        }
        assert_eq!(lanes.choose(&[1]), Some(0), "but used when nothing else is left");
        lanes.record_connect(0, addr, true);
        assert!(lanes.get(0).health.lock().unwrap().usable(Instant::now()));
        assert_eq!(lanes.get(0).errors.load(Relaxed), QUARANTINE_AFTER as u64);
    }

    #[test]
    fn no_lanes_means_one_default() {
        let lanes = Lanes::new(&[], &[]);
        assert_eq!(lanes.all().len(), 1);
        assert_eq!(lanes.get(0).bind, LocalBind::Default);
        let lanes = Lanes::new(&["eth1".into()], &["10.0.0.1".parse().unwrap()]);
        assert_eq!(lanes.all().iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), vec!["eth1", "10.0.0.1"]);
    }

    #[test]
    fn rotation_covers_every_address() {
        let a: Vec<SocketAddr> = (1..=3).map(|i| format!("10.0.0.{i}:80").parse().unwrap()).collect();
        assert_eq!(rotate(&a, 1)[0], a[1]);
        assert_eq!(rotate(&a, 4)[0], a[1]);
        assert_eq!(rotate(&a, 3), a);
    }
}
