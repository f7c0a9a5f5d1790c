//! End-to-end integrity: CRC32C / CRC64NVME checksums sent with uploads and verified on
//! downloads.
//!
//! Uploads send a checksum per request (PutObject, every UploadPart) and, for multipart
//! uploads, a *full-object* checksum on CompleteMultipartUpload that is combined from the part
//! CRCs (CRCs combine by length, so no second pass over the data). A full-object checksum is
//! what S3 returns on a later whole-object GET, so the object can be verified end to end.
//!
//! Downloads verify whenever the answer carries a checksum for exactly the bytes received:
//! S3 only sends one when the response covers the whole object (it omits it for ranged
//! answers), and a composite value (`...-N`, a checksum of part checksums) cannot be checked
//! against the bytes, so it is skipped.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use crc_fast::{CrcAlgorithm, Digest};
use http::HeaderMap;

/// Which CRC protects uploaded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumAlgorithm {
    /// CRC-64/NVME: S3's default for new objects, supports full-object multipart checksums.
    #[default]
    Crc64Nvme,
    /// CRC-32C (Castagnoli): the most widely supported by S3-compatible stores.
    Crc32c,
}

/// How an upload's checksum travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumUpload {
    /// No checksum is sent (the store computes its own, if any).
    None,
    /// An `x-amz-checksum-*` header computed before the request is sent. Works against AWS
    /// and every S3-compatible store we know, so it is the default.
    #[default]
    Header,
    /// An `aws-chunked` body with the checksum in a trailer (`STREAMING-UNSIGNED-PAYLOAD-TRAILER`),
    /// what the AWS SDKs do. Several S3-compatible stores reject aws-chunked bodies.
    Trailer,
}

impl ChecksumAlgorithm {
    fn crc(self) -> CrcAlgorithm {
        match self {
            ChecksumAlgorithm::Crc64Nvme => CrcAlgorithm::Crc64Nvme,
            ChecksumAlgorithm::Crc32c => CrcAlgorithm::Crc32Iscsi,
        }
    }

    fn poly(self) -> &'static crate::crc_combine::Poly {
        match self {
            ChecksumAlgorithm::Crc64Nvme => &crate::crc_combine::CRC64NVME,
            ChecksumAlgorithm::Crc32c => &crate::crc_combine::CRC32C,
        }
    }

    /// The header carrying this checksum (`x-amz-checksum-crc64nvme`).
    pub(crate) fn header(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
        }
    }

    /// The value of `x-amz-checksum-algorithm` and of the XML element suffix (`ChecksumCRC64NVME`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
            ChecksumAlgorithm::Crc32c => "CRC32C",
        }
    }

    fn width(self) -> usize {
        match self {
            ChecksumAlgorithm::Crc64Nvme => 8,
            ChecksumAlgorithm::Crc32c => 4,
        }
    }

    /// The CRC of `data`.
    pub(crate) fn checksum(self, data: &[u8]) -> Crc {
        Crc { algorithm: self, value: crc_fast::checksum(self.crc(), data), len: data.len() as u64 }
    }

    /// S3's wire form of a CRC value: base64 of its big-endian bytes.
    pub(crate) fn encode(self, value: u64) -> String {
        let bytes = value.to_be_bytes();
        B64.encode(&bytes[8 - self.width()..])
    }

    fn decode(self, text: &str) -> Option<u64> {
        let bytes = B64.decode(text.trim()).ok()?;
        if bytes.len() != self.width() {
            return None;
        }
        Some(bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }
}

/// A finished CRC over `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Crc {
    pub(crate) algorithm: ChecksumAlgorithm,
    pub(crate) value: u64,
    pub(crate) len: u64,
}

impl Crc {
    /// The base64 wire form.
    pub(crate) fn encoded(&self) -> String {
        self.algorithm.encode(self.value)
    }

    /// The CRC of `self`'s bytes followed by `next`'s bytes.
    pub(crate) fn combine(self, next: Crc) -> Crc {
        debug_assert_eq!(self.algorithm, next.algorithm);
        if self.len == 0 {
            return next;
        }
        let value = self.algorithm.poly().combine(self.value, next.value, next.len);
        Crc { algorithm: self.algorithm, value, len: self.len + next.len }
    }
}

/// A checksum a response claims for its whole body, and the running CRC of the bytes received.
#[derive(Debug, Clone)]
pub(crate) struct Verifier {
    algorithm: ChecksumAlgorithm,
    expected: u64,
    digest: Digest,
}

impl Verifier {
    /// A verifier for a response whose body is the whole object, if it carries a checksum we
    /// can check (CRC64NVME or CRC32C, not composite).
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Verifier> {
        // A multipart object's checksum is a checksum of part checksums unless the store says
        // it covers the bytes (`FULL_OBJECT`); some stores omit the `-N` suffix on those.
        let kind = headers.get("x-amz-checksum-type").and_then(|v| v.to_str().ok());
        let multipart = headers.get("etag").and_then(|v| v.to_str().ok()).is_some_and(|e| e.contains('-'));
        match kind {
            Some(k) if !k.eq_ignore_ascii_case("FULL_OBJECT") => return None,
            None if multipart => return None,
            _ => {}
        }
        [ChecksumAlgorithm::Crc64Nvme, ChecksumAlgorithm::Crc32c].into_iter().find_map(|algorithm| {
            let text = headers.get(algorithm.header())?.to_str().ok()?;
            // `<base64>-<parts>` is a checksum of part checksums: nothing to compare bytes with.
            if text.contains('-') {
                return None;
            }
            let expected = algorithm.decode(text)?;
            Some(Verifier { algorithm, expected, digest: Digest::new(algorithm.crc()) })
        })
    }

    /// A running CRC of the same algorithm, for one part of a download whose parts are
    /// combined and compared with this (whole-object) checksum at the end.
    pub(crate) fn part_hasher(&self) -> PartHasher {
        PartHasher { algorithm: self.algorithm, digest: Digest::new(self.algorithm.crc()), len: 0 }
    }

    /// Compares the combined CRC of every part with the expected value.
    pub(crate) fn check_combined(&self, crc: Crc) -> Result<(), (&'static str, String, String)> {
        self.compare(crc.value)
    }

    /// Feeds the next bytes of the body, in order.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.digest.update(data);
    }

    /// Compares the CRC of every byte fed against the expected value; on a mismatch returns
    /// `(header, expected, actual)` in wire form for the error message.
    pub(crate) fn finish(&self) -> Result<(), (&'static str, String, String)> {
        self.compare(self.digest.finalize())
    }

    fn compare(&self, actual: u64) -> Result<(), (&'static str, String, String)> {
        if actual == self.expected {
            return Ok(());
        }
        Err((self.algorithm.header(), self.algorithm.encode(self.expected), self.algorithm.encode(actual)))
    }
}

/// The CRC of one part's bytes, fed in order.
#[derive(Debug, Clone)]
pub(crate) struct PartHasher {
    algorithm: ChecksumAlgorithm,
    digest: Digest,
    len: u64,
}

/// Bytes per step of [`PartHasher::copy_from`]: small enough to stay in L2 between the copy
/// and the CRC that follows it.
const HOT_STEP: usize = 128 * 1024;

impl PartHasher {
    pub(crate) fn new(algorithm: ChecksumAlgorithm) -> Self {
        PartHasher { algorithm, digest: Digest::new(algorithm.crc()), len: 0 }
    }

    /// Appends `data` to `buf` and hashes it, in cache-sized steps: each step's bytes are
    /// hashed while still hot from the copy, so the CRC costs no second trip to memory.
    pub(crate) fn copy_from(&mut self, buf: &mut Vec<u8>, data: &[u8]) {
        for step in data.chunks(HOT_STEP) {
            buf.extend_from_slice(step);
            self.update(step);
        }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.digest.update(data);
        self.len += data.len() as u64;
    }

    pub(crate) fn finish(&self) -> Crc {
        Crc { algorithm: self.algorithm, value: self.digest.finalize(), len: self.len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // Check values from the CRC catalogue: CRC of "123456789".
        assert_eq!(ChecksumAlgorithm::Crc32c.checksum(b"123456789").value, 0xe306_9283);
        assert_eq!(ChecksumAlgorithm::Crc64Nvme.checksum(b"123456789").value, 0xae8b_1486_0a79_9888);
        // S3's documented empty-body values.
        assert_eq!(ChecksumAlgorithm::Crc32c.checksum(b"").encoded(), "AAAAAA==");
        assert_eq!(ChecksumAlgorithm::Crc64Nvme.checksum(b"").encoded(), "AAAAAAAAAAA=");
    }

    #[test]
    fn verifier_reads_s3_headers() {
        let data = b"hello world";
        let mut h = HeaderMap::new();
        h.insert("x-amz-checksum-crc32c", ChecksumAlgorithm::Crc32c.checksum(data).encoded().parse().unwrap());
        let mut v = Verifier::from_headers(&h).unwrap();
        v.update(&data[..5]);
        v.update(&data[5..]);
        assert!(v.finish().is_ok());
        let mut v = Verifier::from_headers(&h).unwrap();
        v.update(b"hello World");
        assert!(v.finish().is_err());
        h.insert("x-amz-checksum-type", "COMPOSITE".parse().unwrap());
        assert!(Verifier::from_headers(&h).is_none(), "composite checksums are not verifiable");
        h.remove("x-amz-checksum-type");
        h.insert("etag", "\"abc-2\"".parse().unwrap());
        assert!(Verifier::from_headers(&h).is_none(), "a multipart object without a checksum type");
        h.insert("x-amz-checksum-type", "FULL_OBJECT".parse().unwrap());
        assert!(Verifier::from_headers(&h).is_some());
        h.insert("x-amz-checksum-crc32c", "abcd-3".parse().unwrap());
        assert!(Verifier::from_headers(&h).is_none(), "composite checksums are not verifiable");
        h.insert("x-amz-checksum-crc32c", "!!".parse().unwrap());
        assert!(Verifier::from_headers(&h).is_none());
    }

    proptest! {
        #[test]
        fn combine_equals_checksum_of_concatenation(a in proptest::collection::vec(any::<u8>(), 0..3000),
                                                     b in proptest::collection::vec(any::<u8>(), 0..3000)) {
            for alg in [ChecksumAlgorithm::Crc32c, ChecksumAlgorithm::Crc64Nvme] {
                let whole = [a.as_slice(), b.as_slice()].concat();
                prop_assert_eq!(alg.checksum(&a).combine(alg.checksum(&b)), alg.checksum(&whole));
                prop_assert_eq!(alg.decode(&alg.checksum(&whole).encoded()), Some(alg.checksum(&whole).value));
            }
        }
    }
}

#[cfg(test)]
mod chunking {
    use super::*;

    #[test]
    fn digest_is_independent_of_chunking() {
        let data: Vec<u8> = (0..6_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        for alg in [ChecksumAlgorithm::Crc64Nvme, ChecksumAlgorithm::Crc32c] {
            let want = alg.checksum(&data).value;
            for step in [1usize, 7, 64, 1000, 16384, 65536, 100_003] {
                let mut h = PartHasher { algorithm: alg, digest: Digest::new(alg.crc()), len: 0 };
                let limit = if step < 64 { 200_000 } else { data.len() };
                for c in data[..limit].chunks(step) {
                    h.update(c);
                }
                assert_eq!(h.finish().value, alg.checksum(&data[..limit]).value, "{alg:?} step {step}");
                let _ = want;
            }
            let (a, b) = data.split_at(5 << 20);
            assert_eq!(alg.checksum(a).combine(alg.checksum(b)).value, want, "{alg:?} combine");
        }
    }
}
