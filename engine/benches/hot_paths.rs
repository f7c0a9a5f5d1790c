//! Micro-benchmarks of the per-request and per-byte hot spots a transfer goes through:
//! building + signing a request, the CRC over every byte, a part buffer's trip through the
//! memory budget, and parsing what S3 sends back. Run: `cargo bench -p gantry --features
//! bench-internals --bench hot_paths` (the throughput harness is `benches/run.sh`).

use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use gantry::internals::{self, Pool, RequestFactory};
use gantry::{ChecksumAlgorithm, ClientConfig, Credentials, CredentialsSource};

fn config() -> ClientConfig {
    ClientConfig::builder()
        .ignore_environment()
        .endpoint_url("http://127.0.0.1:9000")
        .credentials(CredentialsSource::Static(Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        )))
        .build()
        .expect("config")
}

fn signing(c: &mut Criterion) {
    let f = RequestFactory::new(&config()).expect("factory");
    let mut g = c.benchmark_group("request");
    g.bench_function("ranged_get_build_and_sign", |b| {
        b.iter(|| f.ranged_get(black_box("bench"), black_box("datasets/shard-00042.tar"), 8 << 20, 16 << 20))
    });
    let body = Bytes::from(vec![7u8; 8 << 20]);
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("upload_part_8MiB_build_sign_crc64", |b| {
        b.iter(|| f.upload_part(black_box("bench"), black_box("ckpt/step-1000.pt"), body.clone()))
    });
    g.finish();
}

fn checksums(c: &mut Criterion) {
    let mut g = c.benchmark_group("checksum");
    for size in [64 << 10, 8 << 20] {
        let data = vec![0x5au8; size];
        g.throughput(Throughput::Bytes(size as u64));
        for (name, alg) in [("crc64nvme", ChecksumAlgorithm::Crc64Nvme), ("crc32c", ChecksumAlgorithm::Crc32c)] {
            g.bench_with_input(BenchmarkId::new(name, size), &data, |b, d| {
                b.iter(|| internals::checksum(alg, black_box(d)))
            });
        }
    }
    g.finish();
    c.bench_function("checksum/combine_crc64nvme_8MiB_part", |b| {
        b.iter(|| internals::combine(ChecksumAlgorithm::Crc64Nvme, black_box(0x1234), black_box(0x5678), 8 << 20))
    });
}

fn buffer_pool(c: &mut Criterion) {
    let pool = Pool::new(2 << 30);
    c.bench_function("buffer_pool/reserve_take_give_8MiB", |b| b.iter(|| pool.cycle(black_box(8 << 20))));
}

fn parsing(c: &mut Criterion) {
    let mut doc = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Name>bench</Name><Prefix></Prefix><KeyCount>1000</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>",
    );
    for i in 0..1000 {
        doc.push_str(&format!(
            "<Contents><Key>datasets/train/shard-{i:06}.tar</Key><LastModified>2026-11-01T12:00:00.000Z</LastModified>\
             <ETag>&quot;0123456789abcdef0123456789abcdef&quot;</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
            1_000_000 + i
        ));
    }
    doc.push_str("<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken></ListBucketResult>");
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("list_objects_v2_1000_keys", |b| {
        b.iter(|| internals::parse_list_objects(black_box(doc.as_bytes())))
    });
    g.finish();
    c.bench_function("parse/content_range", |b| {
        b.iter(|| internals::parse_content_range(black_box("bytes 1073741824-1082130431/4294967296")))
    });
}

criterion_group!(benches, signing, checksums, buffer_pool, parsing);
criterion_main!(benches);
