//! Proxies on the wire: the client reaches the embedded server through the forward-proxy
//! double (`gantry-doubles`), over a CONNECT tunnel for https and in absolute form for http,
//! with Basic auth, and directly for targets `no_proxy` names.

use std::time::Duration;

use gantry::{Client, ErrorKind};
use gantry_doubles::ProxyServer;
use gantry_integration::{embedded, embedded_tls, pattern, with_deadline, Backend};

fn round_trip(b: &Backend, client: &Client) {
    let bucket = b.bucket(client);
    let data = pattern(12 << 20, 9);
    client.block_on(client.put(&bucket, "through/proxy", data.clone())).expect("put through the proxy");
    let mut buf = vec![0u8; data.len()];
    client.block_on(client.get_into(&bucket, "through/proxy", &mut buf)).expect("get through the proxy");
    assert!(buf == data, "bytes changed on the way");
}

#[test]
fn https_goes_through_connect_tunnels() {
    with_deadline(Duration::from_secs(60), || {
        let b = embedded_tls();
        let proxy = ProxyServer::start();
        proxy.set_basic_auth(Some(("alice", "p@ss word")));
        let url = proxy.url_with_auth("alice", "p@ss word");
        let client = b.client(|c| c.proxy(&url));
        round_trip(&b, &client);
        assert!(proxy.tunnels() >= 1, "no CONNECT tunnel was opened");
        assert_eq!(proxy.forwarded(), 0, "https must never be forwarded in the clear");
        let port = b.endpoint.rsplit(':').next().unwrap().to_string();
        assert!(proxy.targets().iter().all(|t| t.ends_with(&port)), "{:?}", proxy.targets());

        // Wrong proxy credentials: a typed error naming the proxy, not a retry storm.
        let bad = b.client(|c| c.proxy(proxy.url_with_auth("alice", "wrong")));
        let mut buf = vec![0u8; 1];
        let e = bad.block_on(bad.get_into("any", "k", &mut buf)).unwrap_err();
        assert_eq!((e.kind(), e.http_status()), (ErrorKind::AccessDenied, Some(407)), "{e}");
        assert!(e.message().contains("proxy"), "{e}");
    });
}

#[test]
fn http_is_forwarded_in_absolute_form() {
    with_deadline(Duration::from_secs(60), || {
        let b = embedded();
        let proxy = ProxyServer::start();
        let client = b.client(|c| c.proxy(proxy.url()));
        round_trip(&b, &client);
        assert!(proxy.forwarded() >= 3, "requests were not forwarded: {}", proxy.forwarded());
        assert_eq!(proxy.tunnels(), 0);
    });
}

#[test]
fn no_proxy_targets_connect_directly() {
    with_deadline(Duration::from_secs(60), || {
        let b = embedded();
        let proxy = ProxyServer::start();
        let client = b.client(|c| c.proxy(proxy.url()).no_proxy("localhost,127.0.0.0/8"));
        round_trip(&b, &client);
        assert_eq!((proxy.forwarded(), proxy.tunnels()), (0, 0));
    });
}
