//! End-to-end integrity: checksums sent with uploads and verified on downloads.
//!
//! Uploads send a CRC32C or CRC64NVME per request (PutObject, every UploadPart) and, for
//! multipart uploads, a *full-object* checksum on CompleteMultipartUpload that is combined
//! from the part CRCs (CRCs combine by length, so no second pass over the data). A full-object
//! checksum is what S3 returns on a later whole-object GET, so the object can be verified end
//! to end.
//!
//! Downloads verify every algorithm S3 stores ([`S3ChecksumAlgorithm`]: CRC32, CRC32C,
//! CRC64NVME, SHA1, SHA256). S3 sends the object's checksum only on an answer that covers the
//! whole object (it omits it for ranged answers), either as a *full-object* value (a checksum
//! of the bytes) or as a *composite* one (`<base64>-N`: a checksum of the N upload parts'
//! checksums, which only the parts' own checksums can be checked against). How a download
//! checks which kind is planned in `download::verify`; this module has the algorithms, the
//! wire encoding and the header parsing.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use crc_fast::{CrcAlgorithm, Digest};
use http::HeaderMap;

/// Which CRC protects uploaded bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ChecksumAlgorithm {
    /// CRC-64/NVME: S3's default for new objects, supports full-object multipart checksums.
    #[default]
    Crc64Nvme,
    /// CRC-32C (Castagnoli): the most widely supported by S3-compatible stores.
    Crc32c,
}

/// How an upload's checksum travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
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

    /// A CRC value from S3's wire form (a part checksum in a copy's answer).
    pub(crate) fn decode(self, text: &str) -> Option<u64> {
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

/// Any checksum algorithm S3 stores with an object. A download is verified with whichever of
/// them the server returns (see [`crate::Verification`]); uploads send the subset in
/// [`ChecksumAlgorithm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum S3ChecksumAlgorithm {
    /// CRC-32 (ISO-HDLC, the zlib/gzip one): what boto3 and the AWS CLI send by default.
    Crc32,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-64/NVME: S3's default for new objects.
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

impl S3ChecksumAlgorithm {
    /// Every algorithm, cheapest to verify first: when a server returns several checksums,
    /// the first full-object one in this order is checked.
    pub const ALL: [S3ChecksumAlgorithm; 5] = [
        S3ChecksumAlgorithm::Crc64Nvme,
        S3ChecksumAlgorithm::Crc32c,
        S3ChecksumAlgorithm::Crc32,
        S3ChecksumAlgorithm::Sha1,
        S3ChecksumAlgorithm::Sha256,
    ];

    /// S3's name (`CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`), as in
    /// `x-amz-checksum-algorithm` and the `Checksum<NAME>` XML elements.
    pub fn name(self) -> &'static str {
        match self {
            S3ChecksumAlgorithm::Crc32 => "CRC32",
            S3ChecksumAlgorithm::Crc32c => "CRC32C",
            S3ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
            S3ChecksumAlgorithm::Sha1 => "SHA1",
            S3ChecksumAlgorithm::Sha256 => "SHA256",
        }
    }

    /// The header carrying this checksum (`x-amz-checksum-crc32`).
    pub(crate) fn header(self) -> &'static str {
        match self {
            S3ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            S3ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            S3ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            S3ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            S3ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// Bytes of a value.
    fn width(self) -> usize {
        match self {
            S3ChecksumAlgorithm::Crc32 | S3ChecksumAlgorithm::Crc32c => 4,
            S3ChecksumAlgorithm::Crc64Nvme => 8,
            S3ChecksumAlgorithm::Sha1 => 20,
            S3ChecksumAlgorithm::Sha256 => 32,
        }
    }

    /// The CRC behind this algorithm; `None` for the SHAs.
    fn crc(self) -> Option<CrcAlgorithm> {
        match self {
            S3ChecksumAlgorithm::Crc32 => Some(CrcAlgorithm::Crc32IsoHdlc),
            S3ChecksumAlgorithm::Crc32c => Some(CrcAlgorithm::Crc32Iscsi),
            S3ChecksumAlgorithm::Crc64Nvme => Some(CrcAlgorithm::Crc64Nvme),
            S3ChecksumAlgorithm::Sha1 | S3ChecksumAlgorithm::Sha256 => None,
        }
    }

    /// Whether values of parts combine into the value of the whole (CRCs do, by length).
    pub(crate) fn combines(self) -> bool {
        self.crc().is_some()
    }

    /// The CRC of A‖B from the CRCs of A and B and the length of B; `None` for the SHAs.
    pub(crate) fn combine(self, a: Sum, b: Sum, len_b: u64) -> Option<Sum> {
        let poly = match self {
            S3ChecksumAlgorithm::Crc32 => &crate::crc_combine::CRC32,
            S3ChecksumAlgorithm::Crc32c => &crate::crc_combine::CRC32C,
            S3ChecksumAlgorithm::Crc64Nvme => &crate::crc_combine::CRC64NVME,
            S3ChecksumAlgorithm::Sha1 | S3ChecksumAlgorithm::Sha256 => return None,
        };
        Some(Sum::from_u64(poly.combine(a.to_u64(), b.to_u64(), len_b), self.width()))
    }

    /// A running hash of this algorithm.
    pub(crate) fn hasher(self) -> Hasher {
        let state = match self.crc() {
            Some(crc) => State::Crc(Box::new(Digest::new(crc))),
            None if self == S3ChecksumAlgorithm::Sha1 => State::Sha1(Default::default()),
            None => State::Sha256(Default::default()),
        };
        Hasher { algorithm: self, state, len: 0 }
    }

    /// The value of `data`.
    #[cfg(test)]
    pub(crate) fn digest(self, data: &[u8]) -> Sum {
        let mut h = self.hasher();
        h.update(data);
        h.finish()
    }

    /// Decodes S3's wire form (base64 of the big-endian value); `None` if malformed.
    pub(crate) fn decode(self, text: &str) -> Option<Sum> {
        let bytes = B64.decode(text.trim()).ok()?;
        (bytes.len() == self.width()).then(|| Sum::from_slice(&bytes))
    }
}

impl std::fmt::Display for S3ChecksumAlgorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ChecksumAlgorithm> for S3ChecksumAlgorithm {
    fn from(a: ChecksumAlgorithm) -> Self {
        match a {
            ChecksumAlgorithm::Crc64Nvme => S3ChecksumAlgorithm::Crc64Nvme,
            ChecksumAlgorithm::Crc32c => S3ChecksumAlgorithm::Crc32c,
        }
    }
}

/// A checksum value: up to 32 bytes (SHA-256), big-endian for CRCs as S3 encodes them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sum {
    bytes: [u8; 32],
    len: u8,
}

impl Sum {
    fn from_slice(b: &[u8]) -> Sum {
        let mut bytes = [0u8; 32];
        bytes[..b.len()].copy_from_slice(b);
        Sum { bytes, len: b.len() as u8 }
    }

    fn from_u64(v: u64, width: usize) -> Sum {
        Sum::from_slice(&v.to_be_bytes()[8 - width..])
    }

    fn to_u64(self) -> u64 {
        self.as_slice().iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// S3's wire form: base64.
    pub(crate) fn encoded(&self) -> String {
        B64.encode(self.as_slice())
    }
}

impl std::fmt::Debug for Sum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.encoded())
    }
}

/// A running checksum of any [`S3ChecksumAlgorithm`].
#[derive(Clone)]
pub(crate) struct Hasher {
    algorithm: S3ChecksumAlgorithm,
    state: State,
    len: u64,
}

#[derive(Clone)]
enum State {
    Crc(Box<Digest>),
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
}

impl std::fmt::Debug for Hasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hasher").field("algorithm", &self.algorithm).field("len", &self.len).finish()
    }
}

impl Hasher {
    pub(crate) fn update(&mut self, data: &[u8]) {
        use sha1::Digest as _;
        use sha2::Digest as _;
        match &mut self.state {
            State::Crc(d) => d.update(data),
            State::Sha1(d) => d.update(data),
            State::Sha256(d) => d.update(data),
        }
        self.len += data.len() as u64;
    }

    /// Bytes fed so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn finish(&self) -> Sum {
        use sha1::Digest as _;
        use sha2::Digest as _;
        match &self.state {
            State::Crc(d) => Sum::from_u64(d.finalize(), self.algorithm.width()),
            State::Sha1(d) => Sum::from_slice(&d.clone().finalize()),
            State::Sha256(d) => Sum::from_slice(&d.clone().finalize()),
        }
    }
}

/// What a whole-object answer's checksum headers claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) algorithm: S3ChecksumAlgorithm,
    /// The value: of the bytes (full object), or of the parts' checksums (composite).
    pub(crate) sum: Sum,
    /// `None`: a full-object checksum. `Some(n)`: composite over the upload's parts, `n` of
    /// them when the value's `-N` suffix or the multipart ETag says so.
    pub(crate) composite: Option<Option<u32>>,
    /// Composite only by inference: no `-N` suffix and no `x-amz-checksum-type`, but a
    /// multipart ETag. GetObjectAttributes' `ChecksumType` may still say `FULL_OBJECT`.
    pub(crate) inferred: bool,
}

impl Claim {
    /// The checksum an answer carrying the whole object claims, if any: the first full-object
    /// value in [`S3ChecksumAlgorithm::ALL`] order, else a composite one. Malformed values are
    /// ignored.
    ///
    /// A value is composite when it has a `-N` suffix, when `x-amz-checksum-type` says
    /// `COMPOSITE`, or when the type is missing and the ETag is a multipart one (`"…-N"`):
    /// some stores omit the suffix, and S3 names `FULL_OBJECT` ones explicitly.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Option<Claim> {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let kind = text("x-amz-checksum-type");
        let etag_parts =
            text("etag").and_then(|e| e.trim_matches('"').rsplit_once('-')).and_then(|(_, n)| n.parse().ok());
        let mut composite = None;
        for algorithm in S3ChecksumAlgorithm::ALL {
            let Some(value) = text(algorithm.header()) else { continue };
            let (b64, suffix) = match value.rsplit_once('-') {
                Some((b64, n)) => match n.parse::<u32>() {
                    Ok(n) => (b64, Some(n)),
                    Err(_) => continue,
                },
                None => (value, None),
            };
            let Some(sum) = algorithm.decode(b64) else { continue };
            let is_composite = suffix.is_some()
                || match kind {
                    Some(k) => k.eq_ignore_ascii_case("COMPOSITE"),
                    None => etag_parts.is_some(),
                };
            if !is_composite {
                return Some(Claim { algorithm, sum, composite: None, inferred: false });
            }
            let inferred = suffix.is_none() && kind.is_none();
            composite.get_or_insert(Claim { algorithm, sum, composite: Some(suffix.or(etag_parts)), inferred });
        }
        composite
    }
}

/// A full-object checksum and the running hash of the bytes received, in order.
#[derive(Debug, Clone)]
pub(crate) struct Verifier {
    expected: Claim,
    hasher: Hasher,
}

/// A checksum that did not match: `(algorithm, expected, computed)` in wire form.
pub(crate) type Mismatch = (S3ChecksumAlgorithm, String, String);

impl Verifier {
    /// A verifier for bytes that should match `claim` (a full-object value).
    pub(crate) fn new(claim: Claim) -> Verifier {
        debug_assert!(claim.composite.is_none());
        Verifier { expected: claim, hasher: claim.algorithm.hasher() }
    }

    /// Feeds the next bytes of the body, in order.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
    }

    /// Compares the hash of every byte fed with the expected value.
    pub(crate) fn finish(&self) -> Result<(), Mismatch> {
        check(self.expected.algorithm, self.expected.sum, self.hasher.finish())
    }
}

/// `Ok` when `computed` is `expected`, else the mismatch in wire form.
pub(crate) fn check(algorithm: S3ChecksumAlgorithm, expected: Sum, computed: Sum) -> Result<(), Mismatch> {
    if expected == computed {
        return Ok(());
    }
    Err((algorithm, expected.encoded(), computed.encoded()))
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
    fn every_s3_algorithm_known_values() {
        use S3ChecksumAlgorithm as A;
        let hex = |a: A, d: &[u8]| hex::encode(a.digest(d).as_slice());
        assert_eq!(hex(A::Crc32, b"123456789"), "cbf43926");
        assert_eq!(hex(A::Crc32c, b"123456789"), "e3069283");
        assert_eq!(hex(A::Crc64Nvme, b"123456789"), "ae8b14860a799888");
        assert_eq!(hex(A::Sha1, b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(A::Sha256, b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        for a in A::ALL {
            let sum = a.digest(b"hello world");
            assert_eq!(a.decode(&sum.encoded()), Some(sum), "{a}");
            assert_eq!(a.decode("AAAA"), None, "{a}: wrong width");
            let mut h = a.hasher();
            h.update(b"hello ");
            h.update(b"world");
            assert_eq!((h.finish(), h.len()), (sum, 11), "{a}: chunked");
            assert_eq!(a.combine(a.digest(b"hello "), a.digest(b"world"), 5).is_some(), a.combines());
        }
    }

    #[test]
    fn claims_from_s3_headers() {
        use S3ChecksumAlgorithm as A;
        let data = b"hello world";
        let headers = |pairs: &[(&'static str, String)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let crc32 = A::Crc32.digest(data).encoded();
        let sha = A::Sha256.digest(data).encoded();
        // Full object, any algorithm.
        let c = Claim::from_headers(&headers(&[("x-amz-checksum-sha256", sha.clone())])).unwrap();
        assert_eq!((c.algorithm, c.composite), (A::Sha256, None));
        let mut v = Verifier::new(c);
        v.update(&data[..3]);
        v.update(&data[3..]);
        assert!(v.finish().is_ok());
        let mut v = Verifier::new(c);
        v.update(b"hello World");
        let (alg, want, got) = v.finish().unwrap_err();
        assert_eq!((alg, want), (A::Sha256, sha.clone()));
        assert_eq!(got, A::Sha256.digest(b"hello World").encoded());
        // A full-object value wins over a composite one; CRCs before SHAs.
        let h = headers(&[("x-amz-checksum-crc32", format!("{crc32}-3")), ("x-amz-checksum-sha256", sha.clone())]);
        assert_eq!(Claim::from_headers(&h).unwrap().algorithm, A::Sha256);
        let h = headers(&[("x-amz-checksum-crc32", crc32.clone()), ("x-amz-checksum-sha256", sha.clone())]);
        assert_eq!(Claim::from_headers(&h).unwrap().algorithm, A::Crc32);
        // Composite: by suffix, by type, or by a multipart ETag without a type.
        let h = headers(&[("x-amz-checksum-crc32", format!("{crc32}-3"))]);
        assert_eq!(Claim::from_headers(&h).unwrap().composite, Some(Some(3)));
        let h = headers(&[("x-amz-checksum-crc32", crc32.clone()), ("x-amz-checksum-type", "COMPOSITE".into())]);
        assert_eq!(Claim::from_headers(&h).unwrap().composite, Some(None));
        let h = headers(&[("x-amz-checksum-crc32", crc32.clone()), ("etag", "\"abc-2\"".into())]);
        assert_eq!(Claim::from_headers(&h).unwrap().composite, Some(Some(2)));
        let h = headers(&[
            ("x-amz-checksum-crc32", crc32.clone()),
            ("etag", "\"abc-2\"".into()),
            ("x-amz-checksum-type", "FULL_OBJECT".into()),
        ]);
        assert_eq!(Claim::from_headers(&h).unwrap().composite, None);
        // Malformed values are ignored.
        assert!(Claim::from_headers(&headers(&[("x-amz-checksum-crc32", "!!".into())])).is_none());
        assert!(Claim::from_headers(&headers(&[("x-amz-checksum-crc32", format!("{crc32}-x"))])).is_none());
        assert!(Claim::from_headers(&headers(&[("x-amz-checksum-sha1", crc32)])).is_none());
        assert!(Claim::from_headers(&HeaderMap::new()).is_none());
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
