//! Zero configuration on EC2: the client sizes itself for the instance it runs on.
//!
//! When the builder reads the environment, IMDS is enabled and `auto_config` is not off,
//! [`crate::ClientConfigBuilder::build`] asks the instance metadata service, once, for what
//! the caller left unset:
//!
//! - **Throughput target.** `instance-type` is looked up in a table of instance types and
//!   their sustained network bandwidth ([`instance_bandwidth`], generated from EC2's
//!   DescribeInstanceTypes data by `scripts/gen-instance-table.py`; its header names the
//!   source and date). The target then sizes the connection count as an explicit
//!   `throughput_target_gbps` would, but never below the default target (10 Gbit/s): small
//!   instances keep today's connection count. A type missing from the table keeps the
//!   default target, with one log line.
//! - **NIC lanes.** `network/interfaces/macs/` lists the instance's interfaces; each MAC has a
//!   `network-card-index` and a `device-number`. Each network card gets one lane: the
//!   interface of that card with the lowest device number among those present on this host,
//!   found by matching the MAC against `/sys/class/net/*/address` (interfaces that are down
//!   are skipped). The lanes are then exactly what `network_interfaces` (`--nic`) would set
//!   up. With fewer than two such cards nothing is bound: the OS routes every connection.
//!
//! Explicit settings always win: a throughput target or a connection cap turns the first
//! part off, interfaces or source addresses the second, and with both set nothing is asked.
//!
//! Off EC2 this costs a few small file reads and no traffic: IMDS is only asked when
//! `AWS_EC2_METADATA_SERVICE_ENDPOINT` names it or the machine identifies itself as EC2
//! (DMI vendor `Amazon EC2`, an `i-` board asset tag, a Xen UUID starting with `ec2`). On an
//! EC2 instance whose IMDS does not answer, detection gives up after IMDS's short deadlines
//! (about two seconds) and the defaults stay.

#[rustfmt::skip]
mod instance_bandwidth;

use std::collections::BTreeMap;
use std::path::Path;

use futures::future::LocalBoxFuture;

use crate::credentials::{fetch::Fetcher, Env, ImdsClient};
use crate::error::Result;

/// What `auto_config` detected on this EC2 instance and what of it was applied; see
/// [`crate::ClientConfig::auto_config`]. Present only when IMDS answered.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AutoConfig {
    /// The instance type IMDS reported (`p5.48xlarge`), if it reported one.
    pub instance_type: Option<String>,
    /// The instance type's sustained network bandwidth in Gbit/s from gantry's table; `None`
    /// when the type is not in the table.
    pub instance_bandwidth_gbps: Option<f64>,
    /// The throughput target that was applied (Gbit/s); `None` when an explicit throughput
    /// target or connection cap won, or the instance type is unknown.
    pub throughput_target_gbps: Option<f64>,
    /// One entry per network card IMDS listed, by card index, with the interface chosen for
    /// it. Empty when lanes were set explicitly (the cards are then not asked for).
    pub network_cards: Vec<NetworkCard>,
    /// The interfaces that became lanes, one per card; empty when fewer than two cards have
    /// an interface on this host, or lanes were set explicitly.
    pub network_interfaces: Vec<String>,
}

// The figures come from a table of finite numbers, never NaN, so equality is total.
impl Eq for AutoConfig {}

/// One network card of the instance as `auto_config` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetworkCard {
    /// IMDS's `network-card-index`.
    pub index: u32,
    /// `device-number` of the chosen interface (the lowest present on this host).
    pub device_number: u32,
    /// Its MAC address, lower case.
    pub mac: String,
    /// The local interface with that MAC (`/sys/class/net/*/address`); `None` when no
    /// interface of this card is present on this host (another network namespace, a
    /// container, an interface that is down).
    pub interface: Option<String>,
}

/// What the builder still needs; explicit settings are never overridden.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wanted {
    /// No throughput target and no connection cap were set.
    pub(crate) throughput: bool,
    /// No interfaces and no source addresses were set.
    pub(crate) lanes: bool,
}

/// The table's sustained bandwidth of `instance_type` in Gbit/s.
pub(crate) fn instance_bandwidth_gbps(instance_type: &str) -> Option<f64> {
    let table = instance_bandwidth::INSTANCE_BANDWIDTH_GBPS;
    table.binary_search_by(|(name, _)| name.cmp(&instance_type)).ok().map(|i| table[i].1)
}

/// Detects what `wanted` asks for from the process environment, `/sys` and IMDS. Blocks the
/// calling thread for at most IMDS's short deadlines and works from any context (the lookups
/// run on a thread and runtime of their own). `None` off EC2 or when IMDS does not answer.
pub(crate) fn detect(wanted: Wanted) -> Option<AutoConfig> {
    let env = Env::process();
    let sys = Path::new("/sys");
    if !looks_like_ec2(&env, sys) {
        tracing::debug!("auto_config: not an EC2 instance (no AWS_EC2_METADATA_SERVICE_ENDPOINT, no EC2 DMI data)");
        return None;
    }
    let t = crate::config::Timeouts::default();
    let connector = crate::http::Connector::new(t.connect, t.tls_handshake, None, None);
    let imds = ImdsClient::from_env(&env, Fetcher::new(connector))?;
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        match rt.block_on(detect_with(&imds, sys, wanted)) {
            Ok(found) => Some(found),
            Err(e) => {
                tracing::debug!(error = %e, "auto_config: IMDS did not answer; keeping the defaults");
                None
            }
        }
    })
    .join()
    .ok()
    .flatten()
}

/// Whether IMDS is worth asking: named explicitly, or the firmware says this is EC2 (Nitro:
/// DMI vendor and asset tag; Xen: the hypervisor UUID and BIOS version). `sys` is `/sys`.
fn looks_like_ec2(env: &Env, sys: &Path) -> bool {
    if env.get("AWS_EC2_METADATA_SERVICE_ENDPOINT").is_some() {
        return true;
    }
    let read = |p: &str| std::fs::read_to_string(sys.join(p)).map(|s| s.trim().to_string()).unwrap_or_default();
    read("devices/virtual/dmi/id/sys_vendor") == "Amazon EC2"
        || read("devices/virtual/dmi/id/board_asset_tag").starts_with("i-")
        || read("hypervisor/uuid").get(..3).is_some_and(|p| p.eq_ignore_ascii_case("ec2"))
        || read("devices/virtual/dmi/id/bios_version").to_ascii_lowercase().contains("amazon")
}

/// Where metadata comes from: IMDS, or fixed answers in tests.
trait Metadata {
    /// The text at `path` (`/latest/meta-data/...`); `Ok(None)` when it does not exist.
    fn get<'a>(&'a self, path: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>>;
}

impl Metadata for ImdsClient {
    fn get<'a>(&'a self, path: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
        Box::pin(ImdsClient::get(self, path))
    }
}

/// One interface as IMDS lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ImdsInterface {
    mac: String,
    card: u32,
    device: u32,
}

const META: &str = "/latest/meta-data";

/// The detection itself, over any metadata source and sysfs root. An error means IMDS did not
/// answer the first question (the instance type): nothing else is asked then.
async fn detect_with(imds: &dyn Metadata, sys: &Path, wanted: Wanted) -> Result<AutoConfig> {
    let instance_type = imds.get(&format!("{META}/instance-type")).await?.map(|t| t.trim().to_string());
    let instance_bandwidth_gbps = instance_type.as_deref().and_then(instance_bandwidth_gbps);
    if let (true, Some(t), None) = (wanted.throughput, &instance_type, instance_bandwidth_gbps) {
        tracing::info!(
            instance_type = %t,
            "auto_config: instance type {t} is not in gantry's bandwidth table; keeping the default throughput target"
        );
    }
    // Only ever raise the target: a small instance's sustained baseline (0.75 Gbit/s for an
    // m5.large) would leave two connections, while its bursts and S3's per-connection
    // latency still reward the default's.
    let throughput_target_gbps = instance_bandwidth_gbps
        .filter(|_| wanted.throughput)
        .map(|g| g.max(crate::config::DEFAULT_THROUGHPUT_TARGET_GBPS));
    let (network_cards, network_interfaces) = if wanted.lanes {
        let listed = imds_interfaces(imds).await?;
        let cards = choose_cards(&listed, &local_interfaces(sys));
        let lanes: Vec<String> = cards.iter().filter_map(|c| c.interface.clone()).collect();
        let lanes = if lanes.len() >= 2 { lanes } else { Vec::new() };
        (cards, lanes)
    } else {
        (Vec::new(), Vec::new())
    };
    let found = AutoConfig {
        instance_type,
        instance_bandwidth_gbps,
        throughput_target_gbps,
        network_cards,
        network_interfaces,
    };
    if found.throughput_target_gbps.is_some() || !found.network_interfaces.is_empty() {
        tracing::info!(
            instance_type = found.instance_type.as_deref().unwrap_or("unknown"),
            target_gbps = ?found.throughput_target_gbps,
            lanes = ?found.network_interfaces,
            "auto_config: configured for this EC2 instance"
        );
    }
    Ok(found)
}

/// Every interface under `network/interfaces/macs/`, with its card and device number (a
/// missing `network-card-index` is card 0: single-card instances may not list it; a missing
/// `device-number` counts as 0).
async fn imds_interfaces(imds: &dyn Metadata) -> Result<Vec<ImdsInterface>> {
    let base = format!("{META}/network/interfaces/macs/");
    let listing = imds.get(&base).await?.unwrap_or_default();
    let macs: Vec<String> = listing
        .lines()
        .map(|l| l.trim().trim_end_matches('/').to_ascii_lowercase())
        .filter(|m| !m.is_empty() && !m.contains('/'))
        .collect();
    let number = |mac: &str, key: &str| {
        let path = format!("{base}{mac}/{key}");
        async move { Ok::<_, crate::Error>(imds.get(&path).await?.and_then(|v| v.trim().parse::<u32>().ok())) }
    };
    let answers = futures::future::join_all(macs.iter().map(|mac| async move {
        let (card, device) = futures::join!(number(mac, "network-card-index"), number(mac, "device-number"));
        Ok::<_, crate::Error>(ImdsInterface {
            mac: mac.clone(),
            card: card?.unwrap_or(0),
            device: device?.unwrap_or(0),
        })
    }))
    .await;
    answers.into_iter().collect()
}

/// MAC address (lower case) to interface name, from `<sys>/class/net/*/address`. Skipped:
/// interfaces that are down, all-zero MACs (loopback). When interfaces share a MAC (a VLAN
/// or bond on top of a NIC), the one backed by a device wins, then the first by name.
fn local_interfaces(sys: &Path) -> BTreeMap<String, String> {
    let mut found: BTreeMap<String, (bool, String)> = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(sys.join("class/net")) else { return BTreeMap::new() };
    let mut names: Vec<String> = dir.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    names.sort();
    for name in names {
        let path = sys.join("class/net").join(&name);
        let Ok(mac) = std::fs::read_to_string(path.join("address")) else { continue };
        let mac = mac.trim().to_ascii_lowercase();
        if mac.is_empty() || mac.chars().all(|c| c == '0' || c == ':') {
            continue;
        }
        if std::fs::read_to_string(path.join("operstate")).is_ok_and(|s| s.trim() == "down") {
            continue;
        }
        let physical = path.join("device").exists();
        match found.get(&mac) {
            Some((true, _)) => {}
            Some((false, _)) if !physical => {}
            _ => {
                found.insert(mac, (physical, name));
            }
        }
    }
    found.into_iter().map(|(mac, (_, name))| (mac, name)).collect()
}

/// One [`NetworkCard`] per card index: its lowest-numbered device present locally, else its
/// lowest-numbered device with no interface.
fn choose_cards(listed: &[ImdsInterface], local: &BTreeMap<String, String>) -> Vec<NetworkCard> {
    let mut by_card: BTreeMap<u32, Vec<&ImdsInterface>> = BTreeMap::new();
    for nic in listed {
        by_card.entry(nic.card).or_default().push(nic);
    }
    by_card
        .into_iter()
        .map(|(index, mut nics)| {
            nics.sort_by_key(|n| (n.device, n.mac.clone()));
            let chosen = nics.iter().find(|n| local.contains_key(&n.mac)).unwrap_or(&nics[0]);
            NetworkCard {
                index,
                device_number: chosen.device,
                mac: chosen.mac.clone(),
                interface: local.get(&chosen.mac).cloned(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Fixed IMDS answers; a path missing from the map is a 404, `fail` makes every read fail.
    struct Answers {
        map: HashMap<String, String>,
        fail: bool,
    }

    impl Metadata for Answers {
        fn get<'a>(&'a self, path: &'a str) -> LocalBoxFuture<'a, Result<Option<String>>> {
            Box::pin(async move {
                if self.fail {
                    return Err(crate::Error::invalid(crate::Operation::Config, "IMDS unreachable"));
                }
                Ok(self.map.get(path).cloned())
            })
        }
    }

    /// IMDS of an instance of `instance_type` with `(mac, card, device)` interfaces.
    fn imds(instance_type: &str, nics: &[(&str, u32, u32)]) -> Answers {
        let mut map = HashMap::new();
        map.insert(format!("{META}/instance-type"), instance_type.to_string());
        let base = format!("{META}/network/interfaces/macs/");
        map.insert(base.clone(), nics.iter().map(|n| format!("{}/", n.0)).collect::<Vec<_>>().join("\n"));
        for (mac, card, device) in nics {
            map.insert(format!("{base}{mac}/network-card-index"), card.to_string());
            map.insert(format!("{base}{mac}/device-number"), device.to_string());
        }
        Answers { map, fail: false }
    }

    /// A sysfs tree with `(name, mac, operstate, backed by a device)` interfaces.
    fn sysfs(ifaces: &[(&str, &str, &str, bool)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (name, mac, state, physical) in ifaces {
            let dir = root.path().join("class/net").join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("address"), format!("{mac}\n")).unwrap();
            std::fs::write(dir.join("operstate"), format!("{state}\n")).unwrap();
            if *physical {
                std::fs::create_dir(dir.join("device")).unwrap();
            }
        }
        root
    }

    fn run(imds: &Answers, sys: &Path, wanted: Wanted) -> Result<AutoConfig> {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(detect_with(imds, sys, wanted))
    }

    const ALL: Wanted = Wanted { throughput: true, lanes: true };

    #[test]
    fn the_table_is_sorted_and_knows_the_ml_instances() {
        let t = instance_bandwidth::INSTANCE_BANDWIDTH_GBPS;
        assert!(t.windows(2).all(|w| w[0].0 < w[1].0), "the table must be sorted for binary search");
        assert!(t.iter().all(|(_, g)| g.is_finite() && *g > 0.0));
        assert_eq!(instance_bandwidth_gbps("p5.48xlarge"), Some(3200.0));
        assert_eq!(instance_bandwidth_gbps("p4d.24xlarge"), Some(400.0));
        assert_eq!(instance_bandwidth_gbps("trn1n.32xlarge"), Some(1600.0));
        // "Up to 10 Gigabit": the sustained baseline, not the burst figure.
        assert_eq!(instance_bandwidth_gbps("m5.large"), Some(0.75));
        assert_eq!(instance_bandwidth_gbps("x9.nonesuch"), None);
    }

    #[test]
    fn macs_map_to_interfaces_through_sysfs() {
        let sys = sysfs(&[
            ("lo", "00:00:00:00:00:00", "unknown", false),
            ("ens5", "0E:00:00:00:00:01", "up", true),
            ("ens6", "0e:00:00:00:00:02", "up", true),
            // A VLAN on ens5 shares its MAC; the device-backed interface wins.
            ("ens5.100", "0e:00:00:00:00:01", "up", false),
            ("docker0", "0e:00:00:00:00:03", "down", false),
            ("veth1", "0e:00:00:00:00:04", "unknown", false),
        ]);
        let local = local_interfaces(sys.path());
        let want: BTreeMap<String, String> =
            [("0e:00:00:00:00:01", "ens5"), ("0e:00:00:00:00:02", "ens6"), ("0e:00:00:00:00:04", "veth1")]
                .iter()
                .map(|(m, n)| (m.to_string(), n.to_string()))
                .collect();
        assert_eq!(local, want);
        assert!(local_interfaces(Path::new("/nonexistent-sysfs")).is_empty());
    }

    #[test]
    fn one_lane_per_card_from_its_lowest_present_device() {
        let nic = |mac: &str, card, device| ImdsInterface { mac: mac.into(), card, device };
        let listed = [
            nic("0e:00:00:00:01:01", 1, 1),
            nic("0e:00:00:00:00:00", 0, 0),
            nic("0e:00:00:00:00:01", 0, 1),
            // Card 1's device 0 is in another namespace: its device 1 carries the lane.
            nic("0e:00:00:00:01:00", 1, 0),
            // Card 2 has no interface here.
            nic("0e:00:00:00:02:00", 2, 0),
        ];
        let local: BTreeMap<String, String> =
            [("0e:00:00:00:00:00", "eth0"), ("0e:00:00:00:00:01", "eth1"), ("0e:00:00:00:01:01", "eth3")]
                .iter()
                .map(|(m, n)| (m.to_string(), n.to_string()))
                .collect();
        let cards = choose_cards(&listed, &local);
        let summary: Vec<(u32, u32, Option<&str>)> =
            cards.iter().map(|c| (c.index, c.device_number, c.interface.as_deref())).collect();
        assert_eq!(summary, vec![(0, 0, Some("eth0")), (1, 1, Some("eth3")), (2, 0, None)]);
        assert_eq!(cards[2].mac, "0e:00:00:00:02:00");
    }

    #[test]
    fn a_multi_card_instance_gets_its_target_and_lanes() {
        let sys = sysfs(&[
            ("ens32", "0e:00:00:00:00:00", "up", true),
            ("ens33", "0e:00:00:00:01:00", "up", true),
            ("ens34", "0e:00:00:00:02:00", "up", true),
            ("ens35", "0e:00:00:00:03:00", "up", true),
        ]);
        let nics = [
            ("0e:00:00:00:03:00", 3, 0),
            ("0e:00:00:00:00:00", 0, 0),
            ("0e:00:00:00:01:00", 1, 0),
            ("0e:00:00:00:02:00", 2, 0),
            ("0e:00:00:00:00:09", 0, 1),
        ];
        let found = run(&imds("p4d.24xlarge", &nics), sys.path(), ALL).unwrap();
        assert_eq!(found.instance_type.as_deref(), Some("p4d.24xlarge"));
        assert_eq!(found.instance_bandwidth_gbps, Some(400.0));
        assert_eq!(found.throughput_target_gbps, Some(400.0));
        assert_eq!(found.network_interfaces, vec!["ens32", "ens33", "ens34", "ens35"]);
        assert_eq!(found.network_cards.len(), 4);

        // Explicit settings win: nothing of what was set is replaced, and the cards are not
        // even asked for when lanes were given.
        let found = run(&imds("p4d.24xlarge", &nics), sys.path(), Wanted { throughput: false, lanes: true }).unwrap();
        assert_eq!((found.throughput_target_gbps, found.instance_bandwidth_gbps), (None, Some(400.0)));
        assert_eq!(found.network_interfaces.len(), 4);
        let found = run(&imds("p4d.24xlarge", &nics), sys.path(), Wanted { throughput: true, lanes: false }).unwrap();
        assert_eq!(found.throughput_target_gbps, Some(400.0));
        assert!(found.network_cards.is_empty() && found.network_interfaces.is_empty());
    }

    #[test]
    fn one_card_or_unknown_type_keeps_the_defaults() {
        let sys = sysfs(&[("ens5", "0e:00:00:00:00:01", "up", true), ("ens6", "0e:00:00:00:00:02", "up", true)]);
        // Two interfaces, one card: default routing, no lanes.
        let nics = [("0e:00:00:00:00:01", 0, 0), ("0e:00:00:00:00:02", 0, 1)];
        let found = run(&imds("m5.large", &nics), sys.path(), ALL).unwrap();
        // The table says 0.75 Gbit/s; the target never goes below the default.
        assert_eq!(found.instance_bandwidth_gbps, Some(0.75));
        assert_eq!(found.throughput_target_gbps, Some(10.0));
        assert_eq!(found.network_cards.len(), 1);
        assert!(found.network_interfaces.is_empty());
        // Two cards but only one interface on this host: no lanes either.
        let nics = [("0e:00:00:00:00:01", 0, 0), ("0e:00:00:00:00:77", 1, 0)];
        let found = run(&imds("x9.nonesuch", &nics), sys.path(), ALL).unwrap();
        assert_eq!((found.throughput_target_gbps, found.instance_bandwidth_gbps), (None, None));
        assert_eq!(found.instance_type.as_deref(), Some("x9.nonesuch"));
        assert_eq!(found.network_cards.len(), 2);
        assert!(found.network_interfaces.is_empty());
        // No answer at all: an error, and the caller keeps the defaults.
        let dead = Answers { map: HashMap::new(), fail: true };
        assert!(run(&dead, sys.path(), ALL).is_err());
    }

    #[test]
    fn imds_is_only_asked_on_ec2() {
        let none = tempfile::tempdir().unwrap();
        let off = Env::from_pairs([]);
        assert!(!looks_like_ec2(&off, none.path()));
        let named = Env::from_pairs([("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1")]);
        assert!(looks_like_ec2(&named, none.path()));
        for (file, value) in [
            ("devices/virtual/dmi/id/sys_vendor", "Amazon EC2\n"),
            ("devices/virtual/dmi/id/board_asset_tag", "i-0123456789abcdef0\n"),
            ("hypervisor/uuid", "ec2e1916-9099-7caf-fd21-012345abcdef\n"),
            ("devices/virtual/dmi/id/bios_version", "4.11.amazon\n"),
        ] {
            let sys = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(sys.path().join(file).parent().unwrap()).unwrap();
            std::fs::write(sys.path().join(file), value).unwrap();
            assert!(looks_like_ec2(&off, sys.path()), "{file}");
        }
        let sys = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(sys.path().join("devices/virtual/dmi/id")).unwrap();
        std::fs::write(sys.path().join("devices/virtual/dmi/id/sys_vendor"), "QEMU\n").unwrap();
        assert!(!looks_like_ec2(&off, sys.path()));
    }
}
