//! Zero configuration on EC2 through `gantry cp --json`, with the IMDS double standing in for
//! the instance: the throughput target from the instance type, the network cards as IMDS
//! lists them, explicit settings winning, and every way of turning it off (which must not ask
//! IMDS at all). Needs no privileges; the multi-NIC test covers the lanes end to end.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gantry_doubles::{ImdsServer, Mode, NetworkInterface, StaticIssuer};

const BIN: &str = env!("CARGO_BIN_EXE_gantry");

struct World {
    server: Child,
    url: String,
    dir: tempfile::TempDir,
    imds: ImdsServer,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Command::new(BIN)
        .args(["serve", "--dir"])
        .arg(dir.path().join("s3"))
        .args(["--addr", &format!("127.0.0.1:{port}"), "--bucket", "bkt"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "gantry serve did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::fs::write(dir.path().join("small"), b"zero configuration").unwrap();
    let issuer = Arc::new(StaticIssuer::new("ASIAUNUSED", "unused", "unused", Duration::from_secs(3600)));
    World { server, url: format!("http://127.0.0.1:{port}"), dir, imds: ImdsServer::start(issuer) }
}

impl World {
    /// Uploads a small file with `gantry cp --json` on a clean environment whose IMDS is the
    /// double; `env` adds variables, `args` flags.
    fn cp(&self, env: &[(&str, &str)], args: &[&str]) -> (serde_json::Value, String) {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "gantry")
            .env("AWS_SECRET_ACCESS_KEY", "gantry-secret-key")
            .env("AWS_EC2_METADATA_SERVICE_ENDPOINT", self.imds.url())
            .env("GANTRY_LOG", "gantry=info");
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(["cp", "--json", "--quiet", "--endpoint-url", &self.url]).args(args);
        c.arg(self.dir.path().join("small")).arg("s3://bkt/small");
        let out: Output = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "gantry cp {args:?}: {stderr}");
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    }
}

/// A local interface with a real MAC (not loopback, not down), if this host has one.
fn some_local_interface() -> Option<(String, String)> {
    let mut names: Vec<String> =
        std::fs::read_dir("/sys/class/net").ok()?.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let dir = Path::new("/sys/class/net").join(&name);
        let mac = std::fs::read_to_string(dir.join("address")).ok()?.trim().to_ascii_lowercase();
        let down = std::fs::read_to_string(dir.join("operstate")).is_ok_and(|s| s.trim() == "down");
        (!down && !mac.is_empty() && mac.chars().any(|c| c != '0' && c != ':')).then_some((name, mac))
    })
}

#[test]
fn the_instance_type_sizes_the_connections() {
    let w = world();
    w.imds.set_instance_type("p5.48xlarge");
    let (r, stderr) = w.cp(&[], &[]);
    let a = &r["auto_config"];
    assert_eq!(a["instance_type"], "p5.48xlarge", "{r}");
    assert_eq!(a["instance_bandwidth_gbps"], 3200.0);
    assert_eq!(a["throughput_target_gbps"], 3200.0);
    assert_eq!(r["max_connections"], 8000, "2.5 connections per Gbit/s of the instance's bandwidth");
    // The double's one interface is not on this host: one card, no interface, no lanes.
    assert_eq!(a["network_cards"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(a["network_cards"][0]["interface"], serde_json::Value::Null);
    assert_eq!(a["network_interfaces"], serde_json::json!([]));
    assert_eq!(r["nics"][0]["name"], "default");
    assert_eq!(stderr.matches("auto_config: configured for this EC2 instance").count(), 1, "{stderr}");

    // An unknown type keeps the default target, and says so once.
    w.imds.set_instance_type("x9.nonesuch");
    let (r, stderr) = w.cp(&[], &[]);
    assert_eq!(r["auto_config"]["instance_type"], "x9.nonesuch");
    assert_eq!(r["auto_config"]["throughput_target_gbps"], serde_json::Value::Null);
    assert_eq!(r["max_connections"], 25);
    assert_eq!(stderr.matches("is not in gantry's bandwidth table").count(), 1, "{stderr}");
    assert!(!stderr.contains("configured for this EC2 instance"), "{stderr}");
}

#[test]
fn explicit_settings_win_and_off_means_off() {
    let w = world();
    w.imds.set_instance_type("p4d.24xlarge");
    // An explicit target wins; the instance is still reported.
    let (r, _) = w.cp(&[], &["--target-gbps", "4"]);
    assert_eq!(r["max_connections"], 10);
    assert_eq!(r["auto_config"]["instance_bandwidth_gbps"], 400.0);
    assert_eq!(r["auto_config"]["throughput_target_gbps"], serde_json::Value::Null);

    // Off, four ways; none of them asks IMDS anything.
    let before = w.imds.requests();
    for (env, args) in [
        (&[][..], &["--no-auto-config"][..]),
        (&[][..], &["--set", "auto_config=false"][..]),
        (&[("AWS_EC2_METADATA_DISABLED", "true")][..], &[][..]),
        // Nothing left to fill: connections and lanes both explicit.
        (&[][..], &["--max-connections", "4", "--nic", "lo"][..]),
    ] {
        let (r, stderr) = w.cp(env, args);
        assert_eq!(r["auto_config"], serde_json::Value::Null, "{env:?} {args:?}: {r}");
        assert!(!stderr.contains("auto_config"), "{stderr}");
    }
    assert_eq!(w.imds.requests(), before, "IMDS was asked although auto-configuration was off");
}

#[test]
fn network_cards_map_to_local_interfaces() {
    let Some((name, mac)) = some_local_interface() else {
        eprintln!("skipping: this host has no network interface with a MAC address");
        return;
    };
    let w = world();
    w.imds.set_instance_type("p4d.24xlarge");
    // Card 0 is this host's interface (as device 1; device 0 is elsewhere), card 1 is not here:
    // one card with an interface is no reason to bind, so the OS keeps routing.
    let nic =
        |mac: &str, card, device| NetworkInterface { mac: mac.into(), network_card_index: card, device_number: device };
    w.imds.set_interfaces(vec![nic("0e:00:00:00:00:09", 0, 0), nic(&mac, 0, 1), nic("0e:00:00:00:01:00", 1, 0)]);
    let (r, _) = w.cp(&[], &["--max-connections", "4"]);
    let cards = &r["auto_config"]["network_cards"];
    assert_eq!(
        cards,
        &serde_json::json!([
            {"index": 0, "device_number": 1, "mac": mac, "interface": name},
            {"index": 1, "device_number": 0, "mac": "0e:00:00:00:01:00", "interface": null},
        ]),
        "{r}"
    );
    assert_eq!(r["auto_config"]["network_interfaces"], serde_json::json!([]));
    assert_eq!(r["auto_config"]["throughput_target_gbps"], serde_json::Value::Null, "--max-connections wins");
    assert_eq!(r["nics"][0]["name"], "default");
}

#[test]
fn a_silent_imds_costs_seconds_not_the_transfer() {
    let w = world();
    w.imds.set_mode(Mode::Hang);
    let start = Instant::now();
    let (r, _) = w.cp(&[], &[]);
    let took = start.elapsed();
    assert_eq!(r["auto_config"], serde_json::Value::Null);
    assert_eq!(r["max_connections"], 25);
    assert!(took < Duration::from_secs(6), "a hanging IMDS held the client up for {took:?}");
}
