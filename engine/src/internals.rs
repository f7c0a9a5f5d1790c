//! Engine internals reachable from the criterion micro-benchmarks (`engine/benches/`), behind
//! the `bench-internals` feature so that the hot spots can be measured in isolation without
//! making them public API. Nothing here is stable; users never enable this feature.

use bytes::Bytes;
use futures::FutureExt;
use http::Method;

use crate::buffer_pool::BufferPool;
use crate::checksum::ChecksumAlgorithm;
use crate::config::ClientConfig;
use crate::error::Operation;
use crate::s3::{S3Request, S3};

/// Builds and signs requests exactly as a transfer does, without sending them.
#[derive(Debug)]
pub struct RequestFactory {
    s3: S3,
}

impl RequestFactory {
    /// A factory with `config`'s endpoint, credentials, region and checksum settings.
    pub fn new(config: &ClientConfig) -> crate::Result<Self> {
        Ok(RequestFactory { s3: S3::from_config(config, Default::default())? })
    }

    /// The ranged GetObject of one part, signed; returns the number of headers (so the work
    /// cannot be optimised away).
    pub fn ranged_get(&self, bucket: &str, key: &str, start: u64, end_exclusive: u64) -> usize {
        let range = format!("bytes={}-{}", start, end_exclusive - 1);
        let req = S3Request::new(Operation::GetObject, Method::GET, bucket, Some(key))
            .header(http::header::RANGE, &range)
            .expect("valid range header");
        let (_, built) = self.s3.build(&req).expect("request builds");
        built.headers().len()
    }

    /// An UploadPart with `body` (checksum computed as configured), signed.
    pub fn upload_part(&self, bucket: &str, key: &str, body: Bytes) -> usize {
        let crc = self.s3.upload_checksum(bucket, &body);
        let req = S3Request::new(Operation::UploadPart, Method::PUT, bucket, Some(key))
            .query("partNumber", "7")
            .query("uploadId", "2~kTyTtzLRr0w1Awlj1kpl1o1bSLBI0uX")
            .body(body)
            .checksum(crc);
        let (_, built) = self.s3.build(&req).expect("request builds");
        built.headers().len()
    }
}

/// The CRC of `data` (what every uploaded and verified byte costs).
pub fn checksum(algorithm: ChecksumAlgorithm, data: &[u8]) -> u64 {
    algorithm.checksum(data).value
}

/// The memory budget and buffer free list.
#[derive(Debug)]
pub struct Pool(BufferPool);

impl Pool {
    /// A pool with a budget of `limit_bytes`.
    pub fn new(limit_bytes: u64) -> Self {
        Pool(BufferPool::new(limit_bytes))
    }

    /// One upload part's life: reserve budget, take a buffer, fill a byte, give both back.
    pub fn cycle(&self, bytes: usize) -> usize {
        let permit = self.0.reserve(bytes as u64).now_or_never().expect("budget free");
        let mut buf = self.0.take(bytes);
        buf.push(1);
        let n = buf.capacity();
        self.0.give_back(buf);
        drop(permit);
        n
    }
}

/// Parses a ListObjectsV2 page; returns the number of keys.
pub fn parse_list_objects(body: &[u8]) -> usize {
    let page: crate::s3::xml::ListBucketResult =
        crate::s3::xml::parse(body, Operation::ListObjectsV2).expect("valid ListBucketResult");
    page.contents.len()
}

/// Parses a Content-Range value.
pub fn parse_content_range(value: &str) -> Option<(u64, u64, u64)> {
    crate::s3::get_object::parse_content_range(value)
}

/// crc(A‖B) from crc(A), crc(B) and |B| (once per part of a multipart transfer).
pub fn combine(algorithm: ChecksumAlgorithm, crc_a: u64, crc_b: u64, len_b: u64) -> u64 {
    let a = crate::checksum::Crc { algorithm, value: crc_a, len: 1 };
    let b = crate::checksum::Crc { algorithm, value: crc_b, len: len_b };
    a.combine(b).value
}
