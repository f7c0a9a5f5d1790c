//! The client on a caller's tokio runtime, and awaited from inside async code.

use gantry::{Client, ClientConfig, Credentials, CredentialsSource};
use gantry_integration::{embedded, pattern, sha256};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_on_the_callers_runtime() {
    let backend = embedded();
    let config = ClientConfig::builder()
        .ignore_environment()
        .endpoint_url(&backend.endpoint)
        .credentials(CredentialsSource::Static(Credentials::new(&backend.keys.0, &backend.keys.1)))
        .part_size_bytes(5 << 20)
        .build()
        .unwrap();
    let client = Client::with_runtime(config, tokio::runtime::Handle::current()).unwrap();
    client.create_bucket("rtb").await.unwrap();
    let data = pattern(12 << 20, 8);
    client.put("rtb", "k", data.clone()).await.unwrap();
    let mut buf = vec![0u8; data.len()];
    client.get_into("rtb", "k", &mut buf).await.unwrap();
    assert_eq!(sha256(&buf), sha256(&data));
    // Dropping a client inside async code must not panic or block.
    drop(client);
}

#[tokio::test]
async fn owned_runtime_client_dropped_inside_async_code() {
    let backend = embedded();
    let client = backend.client(|c| c);
    let bucket = backend.bucket(&client);
    client.put(&bucket, "k", vec![1u8; 10]).await.unwrap();
    drop(client);
}
