//! The checksums S3 keeps with an object, computed as the bytes arrive and checked against
//! what the client claimed.
//!
//! S3 stores one additional checksum per object (CRC32, CRC32C, CRC64NVME, SHA1 or SHA256)
//! and answers it on GET/HEAD with `x-amz-checksum-mode: ENABLED`. A client names it in a
//! header (`x-amz-checksum-crc32: <base64>`), or in a trailer after an aws-chunked body
//! (`x-amz-trailer`), or only names the algorithm (`x-amz-sdk-checksum-algorithm`); a value
//! that does not match the bytes is refused with `BadDigest`. With none, S3 computes a
//! CRC64NVME, and so do we.
//!
//! A multipart object's checksum has a type: `FULL_OBJECT` is the checksum of all the bytes
//! (CRCs only; we combine the parts' CRCs with `crc_fast::checksum_combine`, no second pass),
//! `COMPOSITE` is the checksum of the concatenated part checksums with a `-N` suffix.
//!
//! The MD5 for ETags and Content-MD5 is computed here too, in the same pass.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use s3s::crypto::{Checksum as _, Md5, Sha1, Sha256};
use s3s::dto;
use s3s::{s3_error, S3Error};
use serde::{Deserialize, Serialize};

/// A checksum algorithm S3 supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Algorithm {
    Crc32,
    Crc32c,
    Crc64Nvme,
    Sha1,
    Sha256,
}

impl Algorithm {
    pub(crate) const ALL: [Algorithm; 5] =
        [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme, Algorithm::Sha1, Algorithm::Sha256];

    /// The wire name (`CRC32`, `CRC64NVME`, ...).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Algorithm::Crc32 => "CRC32",
            Algorithm::Crc32c => "CRC32C",
            Algorithm::Crc64Nvme => "CRC64NVME",
            Algorithm::Sha1 => "SHA1",
            Algorithm::Sha256 => "SHA256",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// `x-amz-checksum-crc32`, ...
    pub(crate) fn header(self) -> &'static str {
        match self {
            Algorithm::Crc32 => "x-amz-checksum-crc32",
            Algorithm::Crc32c => "x-amz-checksum-crc32c",
            Algorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            Algorithm::Sha1 => "x-amz-checksum-sha1",
            Algorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }

    fn crc(self) -> Option<crc_fast::CrcAlgorithm> {
        match self {
            Algorithm::Crc32 => Some(crc_fast::CrcAlgorithm::Crc32IsoHdlc),
            Algorithm::Crc32c => Some(crc_fast::CrcAlgorithm::Crc32Iscsi),
            Algorithm::Crc64Nvme => Some(crc_fast::CrcAlgorithm::Crc64Nvme),
            Algorithm::Sha1 | Algorithm::Sha256 => None,
        }
    }

    /// Digest length in bytes.
    fn width(self) -> usize {
        match self {
            Algorithm::Crc32 | Algorithm::Crc32c => 4,
            Algorithm::Crc64Nvme => 8,
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 => 32,
        }
    }

    /// The default type of a multipart upload's checksum: FULL_OBJECT for CRC64NVME (the only
    /// type S3 allows for it), COMPOSITE otherwise.
    pub(crate) fn default_kind(self) -> Kind {
        if self == Algorithm::Crc64Nvme {
            Kind::FullObject
        } else {
            Kind::Composite
        }
    }
}

/// `FULL_OBJECT` or `COMPOSITE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Kind {
    FullObject,
    Composite,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::FullObject => dto::ChecksumType::FULL_OBJECT,
            Kind::Composite => dto::ChecksumType::COMPOSITE,
        }
    }

    pub(crate) fn from_dto(t: &dto::ChecksumType) -> Result<Kind, S3Error> {
        match t.as_str() {
            dto::ChecksumType::FULL_OBJECT => Ok(Kind::FullObject),
            dto::ChecksumType::COMPOSITE => Ok(Kind::Composite),
            other => Err(s3_error!(InvalidRequest, "unknown checksum type {other}")),
        }
    }
}

/// A checksum as stored and answered: algorithm, type and base64 value (`-N` for composite).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stored {
    pub(crate) algorithm: Algorithm,
    pub(crate) kind: Kind,
    pub(crate) value: String,
}

impl Stored {
    /// The value in the s3s field of its algorithm, plus the type.
    pub(crate) fn to_dto(&self) -> dto::Checksum {
        let mut c = dto::Checksum::default();
        let v = Some(self.value.clone());
        match self.algorithm {
            Algorithm::Crc32 => c.checksum_crc32 = v,
            Algorithm::Crc32c => c.checksum_crc32c = v,
            Algorithm::Crc64Nvme => c.checksum_crc64nvme = v,
            Algorithm::Sha1 => c.checksum_sha1 = v,
            Algorithm::Sha256 => c.checksum_sha256 = v,
        }
        c.checksum_type = Some(dto::ChecksumType::from(self.kind.name().to_string()));
        c
    }
}

/// Copies the fields of a [`dto::Checksum`] into an output that has the same field names.
macro_rules! set_checksum_fields {
    ($out:expr, $c:expr) => {{
        let c: s3s::dto::Checksum = $c;
        $out.checksum_crc32 = c.checksum_crc32;
        $out.checksum_crc32c = c.checksum_crc32c;
        $out.checksum_crc64nvme = c.checksum_crc64nvme;
        $out.checksum_sha1 = c.checksum_sha1;
        $out.checksum_sha256 = c.checksum_sha256;
    }};
}
pub(crate) use set_checksum_fields;

/// The `(algorithm, value)` pairs a request claims through the named fields of its input.
macro_rules! claimed_fields {
    ($input:expr) => {{
        use $crate::store::checksum::Algorithm;
        let mut v: Vec<(Algorithm, String)> = Vec::new();
        for (alg, val) in [
            (Algorithm::Crc32, &$input.checksum_crc32),
            (Algorithm::Crc32c, &$input.checksum_crc32c),
            (Algorithm::Crc64Nvme, &$input.checksum_crc64nvme),
            (Algorithm::Sha1, &$input.checksum_sha1),
            (Algorithm::Sha256, &$input.checksum_sha256),
        ] {
            if let Some(val) = val {
                v.push((alg, val.clone()));
            }
        }
        v
    }};
}
pub(crate) use claimed_fields;

/// One running digest.
enum Digest {
    Crc(crc_fast::Digest),
    Sha1(Sha1),
    Sha256(Sha256),
}

/// The hashes of one body: MD5 (for the ETag) and the checksum algorithms asked for.
pub(crate) struct Hashes {
    md5: Md5,
    digests: Vec<(Algorithm, Digest)>,
}

impl std::fmt::Debug for Hashes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hashes").field("algorithms", &self.digests.iter().map(|d| d.0).collect::<Vec<_>>()).finish()
    }
}

/// What [`Hashes::finish`] produced: raw MD5 and one raw digest per algorithm.
#[derive(Debug, Clone)]
pub(crate) struct Sums {
    pub(crate) md5: [u8; 16],
    pub(crate) digests: Vec<(Algorithm, Vec<u8>)>,
}

impl Sums {
    pub(crate) fn get(&self, algorithm: Algorithm) -> Option<&[u8]> {
        self.digests.iter().find(|d| d.0 == algorithm).map(|d| d.1.as_slice())
    }

    pub(crate) fn md5_hex(&self) -> String {
        hex::encode(self.md5)
    }
}

impl Hashes {
    /// MD5 plus each of `algorithms` (duplicates ignored).
    pub(crate) fn new(algorithms: &[Algorithm]) -> Hashes {
        let mut digests: Vec<(Algorithm, Digest)> = Vec::new();
        for &a in algorithms {
            if digests.iter().any(|d| d.0 == a) {
                continue;
            }
            let d = match (a.crc(), a) {
                (Some(crc), _) => Digest::Crc(crc_fast::Digest::new(crc)),
                (None, Algorithm::Sha1) => Digest::Sha1(Sha1::new()),
                (None, _) => Digest::Sha256(Sha256::new()),
            };
            digests.push((a, d));
        }
        Hashes { md5: Md5::new(), digests }
    }

    pub(crate) fn update(&mut self, data: &[u8]) {
        self.md5.update(data);
        for (_, d) in &mut self.digests {
            match d {
                Digest::Crc(c) => c.update(data),
                Digest::Sha1(s) => s.update(data),
                Digest::Sha256(s) => s.update(data),
            }
        }
    }

    pub(crate) fn finish(self) -> Sums {
        let digests = self
            .digests
            .into_iter()
            .map(|(a, d)| {
                let raw = match d {
                    Digest::Crc(c) => {
                        let v = c.finalize();
                        if a.width() == 4 {
                            (v as u32).to_be_bytes().to_vec()
                        } else {
                            v.to_be_bytes().to_vec()
                        }
                    }
                    Digest::Sha1(s) => s.finalize().as_ref().to_vec(),
                    Digest::Sha256(s) => s.finalize().as_ref().to_vec(),
                };
                (a, raw)
            })
            .collect();
        Sums { md5: self.md5.finalize(), digests }
    }
}

pub(crate) fn encode(raw: &[u8]) -> String {
    BASE64.encode(raw)
}

/// Decodes a claimed value: base64 of exactly the algorithm's width.
pub(crate) fn decode(algorithm: Algorithm, value: &str) -> Result<Vec<u8>, S3Error> {
    match BASE64.decode(value.trim()) {
        Ok(raw) if raw.len() == algorithm.width() => Ok(raw),
        _ => Err(s3_error!(InvalidRequest, "Value for {} header is invalid.", algorithm.header())),
    }
}

/// Refuses with `BadDigest` unless every claimed value matches the computed digest.
pub(crate) fn verify(claimed: &[(Algorithm, String)], sums: &Sums) -> Result<(), S3Error> {
    for (algorithm, value) in claimed {
        let want = decode(*algorithm, value)?;
        let have = sums.get(*algorithm).ok_or_else(|| s3_error!(InternalError, "{} not computed", algorithm.name()))?;
        if want != have {
            return Err(s3_error!(
                BadDigest,
                "The {} you specified did not match the calculated checksum.",
                algorithm.name()
            ));
        }
    }
    Ok(())
}

/// Refuses with `BadDigest` unless the `Content-MD5` (base64) matches.
pub(crate) fn verify_content_md5(content_md5: Option<&str>, sums: &Sums) -> Result<(), S3Error> {
    let Some(value) = content_md5 else { return Ok(()) };
    match BASE64.decode(value.trim()) {
        Ok(raw) if raw.len() == 16 => {
            if raw != sums.md5 {
                return Err(s3_error!(BadDigest, "The Content-MD5 you specified did not match what we received."));
            }
            Ok(())
        }
        _ => Err(s3_error!(InvalidDigest, "The Content-MD5 you specified is not valid.")),
    }
}

/// The checksum values an aws-chunked body's trailer carries.
pub(crate) fn claimed_in_trailers(trailers: &http::HeaderMap) -> Result<Vec<(Algorithm, String)>, S3Error> {
    let mut out = Vec::new();
    for a in Algorithm::ALL {
        if let Some(v) = trailers.get(a.header()) {
            let v = v.to_str().map_err(|_| s3_error!(InvalidRequest, "bad {} trailer", a.header()))?;
            out.push((a, v.to_string()));
        }
    }
    Ok(out)
}

/// The algorithm a request announces for its trailer (`x-amz-trailer: x-amz-checksum-crc32`).
pub(crate) fn trailer_algorithm(headers: &http::HeaderMap) -> Option<Algorithm> {
    let names = headers.get("x-amz-trailer")?.to_str().ok()?;
    names.split(',').find_map(|n| Algorithm::ALL.into_iter().find(|a| a.header().eq_ignore_ascii_case(n.trim())))
}

/// The CRC of the concatenation of parts, from each part's CRC and length (`FULL_OBJECT`).
pub(crate) fn combine_crcs(algorithm: Algorithm, parts: &[(Vec<u8>, u64)]) -> Option<Vec<u8>> {
    let crc = algorithm.crc()?;
    let mut acc: Option<u64> = None;
    for (raw, len) in parts {
        let v = raw.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        acc = Some(match acc {
            None => v,
            Some(a) => crc_fast::checksum_combine(crc, a, v, *len),
        });
    }
    let v = acc.unwrap_or_else(|| crc_fast::checksum(crc, b""));
    Some(if algorithm.width() == 4 { (v as u32).to_be_bytes().to_vec() } else { v.to_be_bytes().to_vec() })
}

/// `base64(H(part1 || part2 || ...))-N` (`COMPOSITE`).
pub(crate) fn composite(algorithm: Algorithm, parts: &[Vec<u8>]) -> String {
    let mut h = Hashes::new(&[algorithm]);
    for p in parts {
        h.update(p);
    }
    let sums = h.finish();
    format!("{}-{}", encode(sums.get(algorithm).expect("computed")), parts.len())
}

/// The multipart ETag: hex MD5 of the concatenated part MD5s, `-N`.
pub(crate) fn multipart_etag(part_md5s: &[[u8; 16]]) -> String {
    let mut md5 = Md5::new();
    for m in part_md5s {
        md5.update(m);
    }
    format!("{}-{}", hex::encode(md5.finalize()), part_md5s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(data: &[u8]) -> Sums {
        let mut h = Hashes::new(&Algorithm::ALL);
        h.update(data);
        h.finish()
    }

    /// Known answers for "123456789" (the CRC catalogue's check values; SHA of the same).
    #[test]
    fn known_answers() {
        let s = sums(b"123456789");
        assert_eq!(s.get(Algorithm::Crc32).unwrap(), 0xCBF4_3926u32.to_be_bytes());
        assert_eq!(s.get(Algorithm::Crc32c).unwrap(), 0xE306_9283u32.to_be_bytes());
        assert_eq!(s.get(Algorithm::Crc64Nvme).unwrap(), 0xAE8B_1486_0A79_9888u64.to_be_bytes());
        assert_eq!(hex::encode(s.get(Algorithm::Sha1).unwrap()), "f7c3bc1d808e04732adf679965ccc34ca7ae3441");
        assert_eq!(s.md5_hex(), "25f9e794323b453885f5181f1b624d0b");
    }

    /// Combining the parts' CRCs gives the CRC of all the bytes, for every CRC.
    #[test]
    fn combined_crcs_cover_the_bytes() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for a in [Algorithm::Crc32, Algorithm::Crc32c, Algorithm::Crc64Nvme] {
            let parts: Vec<(Vec<u8>, u64)> =
                data.chunks(3000).map(|c| (sums(c).get(a).unwrap().to_vec(), c.len() as u64)).collect();
            assert_eq!(combine_crcs(a, &parts).unwrap(), sums(&data).get(a).unwrap(), "{a:?}");
        }
        assert!(combine_crcs(Algorithm::Sha256, &[]).is_none());
    }

    #[test]
    fn claims_are_checked() {
        let s = sums(b"hello");
        let good = encode(s.get(Algorithm::Crc32).unwrap());
        verify(&[(Algorithm::Crc32, good)], &s).unwrap();
        let bad = encode(&[0, 0, 0, 0]);
        assert_eq!(verify(&[(Algorithm::Crc32, bad)], &s).unwrap_err().code().as_str(), "BadDigest");
        assert_eq!(verify(&[(Algorithm::Crc32, "!!".into())], &s).unwrap_err().code().as_str(), "InvalidRequest");
        verify_content_md5(Some(&encode(&s.md5)), &s).unwrap();
        assert_eq!(verify_content_md5(Some(&encode(&[0; 16])), &s).unwrap_err().code().as_str(), "BadDigest");
    }

    /// The composite form AWS documents: checksum of the part checksums, `-N`.
    #[test]
    fn composite_and_multipart_etag() {
        let p1 = sums(b"part one").get(Algorithm::Sha256).unwrap().to_vec();
        let p2 = sums(b"part two").get(Algorithm::Sha256).unwrap().to_vec();
        let mut cat = p1.clone();
        cat.extend_from_slice(&p2);
        let want = format!("{}-2", encode(sums(&cat).get(Algorithm::Sha256).unwrap()));
        assert_eq!(composite(Algorithm::Sha256, &[p1, p2]), want);
        let m = [sums(b"a").md5, sums(b"b").md5];
        assert!(multipart_etag(&m).ends_with("-2"));
    }
}
