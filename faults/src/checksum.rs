//! The five checksums S3 speaks for data integrity (three CRCs, SHA1, SHA256), in S3's wire
//! encoding.
//!
//! Kept separate so the service, the store and the tests agree on one encoding: base64 of the
//! raw value (the big-endian CRC: 4 bytes for CRC32/CRC32C, 8 for CRC64NVME; the 20- or
//! 32-byte digest for SHA1/SHA256).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use crc_fast::CrcAlgorithm;

/// A checksum algorithm S3 accepts in `x-amz-checksum-*` headers and trailers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumAlgo {
    /// CRC32 (ISO-HDLC, the zlib one).
    Crc32,
    /// CRC32C (Castagnoli / iSCSI).
    Crc32c,
    /// CRC64NVME, which S3 computes for every new object.
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

impl ChecksumAlgo {
    /// Every supported algorithm, so header scans cover all of them in one place.
    pub const ALL: [ChecksumAlgo; 5] =
        [ChecksumAlgo::Crc32, ChecksumAlgo::Crc32c, ChecksumAlgo::Crc64Nvme, ChecksumAlgo::Sha1, ChecksumAlgo::Sha256];

    /// The lowercase header (and trailer) name carrying this checksum.
    pub fn header(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgo::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgo::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgo::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgo::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// The element name used in S3 XML documents (e.g. `<ChecksumCRC32C>`).
    pub fn xml_name(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "ChecksumCRC32",
            ChecksumAlgo::Crc32c => "ChecksumCRC32C",
            ChecksumAlgo::Crc64Nvme => "ChecksumCRC64NVME",
            ChecksumAlgo::Sha1 => "ChecksumSHA1",
            ChecksumAlgo::Sha256 => "ChecksumSHA256",
        }
    }

    /// The value used in `x-amz-checksum-algorithm` (e.g. `CRC32C`).
    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "CRC32",
            ChecksumAlgo::Crc32c => "CRC32C",
            ChecksumAlgo::Crc64Nvme => "CRC64NVME",
            ChecksumAlgo::Sha1 => "SHA1",
            ChecksumAlgo::Sha256 => "SHA256",
        }
    }

    /// Parses an `x-amz-checksum-algorithm` value (case-insensitive).
    pub fn from_name(s: &str) -> Option<ChecksumAlgo> {
        ChecksumAlgo::ALL.into_iter().find(|a| a.name().eq_ignore_ascii_case(s.trim()))
    }

    /// Maps a (lowercase) header or trailer name to its algorithm.
    pub fn from_header(name: &str) -> Option<ChecksumAlgo> {
        ChecksumAlgo::ALL.into_iter().find(|a| a.header().eq_ignore_ascii_case(name.trim()))
    }

    /// Computes the raw value of `data` (big-endian for the CRCs).
    pub fn compute(self, data: &[u8]) -> Vec<u8> {
        use sha1::Digest as _;
        use sha2::Digest as _;
        match self {
            ChecksumAlgo::Crc32 | ChecksumAlgo::Crc32c | ChecksumAlgo::Crc64Nvme => {
                let crc = crc_fast::checksum(self.crc_algorithm(), data);
                crc.to_be_bytes()[8 - self.width()..].to_vec()
            }
            ChecksumAlgo::Sha1 => sha1::Sha1::digest(data).to_vec(),
            ChecksumAlgo::Sha256 => sha2::Sha256::digest(data).to_vec(),
        }
    }

    fn crc_algorithm(self) -> CrcAlgorithm {
        match self {
            ChecksumAlgo::Crc32 => CrcAlgorithm::Crc32IsoHdlc,
            ChecksumAlgo::Crc32c => CrcAlgorithm::Crc32Iscsi,
            _ => CrcAlgorithm::Crc64Nvme,
        }
    }

    fn width(self) -> usize {
        match self {
            ChecksumAlgo::Crc32 | ChecksumAlgo::Crc32c => 4,
            ChecksumAlgo::Crc64Nvme => 8,
            ChecksumAlgo::Sha1 => 20,
            ChecksumAlgo::Sha256 => 32,
        }
    }

    /// Encodes a raw value the way S3 sends it: base64.
    pub fn encode(self, value: &[u8]) -> String {
        B64.encode(value)
    }

    /// Decodes a header value; `None` when it is not base64 of the right width.
    pub fn decode(self, s: &str) -> Option<Vec<u8>> {
        let raw = B64.decode(s.trim()).ok()?;
        (raw.len() == self.width()).then_some(raw)
    }

    /// Convenience: the encoded checksum of `data`.
    pub fn encoded(self, data: &[u8]) -> String {
        self.encode(&self.compute(data))
    }

    /// S3's composite checksum of parts with these raw checksums: the checksum of their
    /// concatenation, with `-N` appended (N = number of parts).
    pub fn composite(self, part_values: &[Vec<u8>]) -> String {
        format!("{}-{}", self.encoded(&part_values.concat()), part_values.len())
    }
}

/// CRC64NVME of `data` as a number (for ETags and upload ids).
pub(crate) fn crc64(data: &[u8]) -> u64 {
    crc_fast::checksum(CrcAlgorithm::Crc64Nvme, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        let hex = |a: ChecksumAlgo, d: &[u8]| a.compute(d).iter().map(|b| format!("{b:02x}")).collect::<String>();
        // The standard "123456789" check values of each CRC catalogue entry.
        assert_eq!(hex(ChecksumAlgo::Crc32, b"123456789"), "cbf43926");
        assert_eq!(hex(ChecksumAlgo::Crc32c, b"123456789"), "e3069283");
        assert_eq!(hex(ChecksumAlgo::Crc64Nvme, b"123456789"), "ae8b14860a799888");
        assert_eq!(hex(ChecksumAlgo::Sha1, b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(hex(ChecksumAlgo::Sha256, b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(crc64(b"123456789"), 0xAE8B_1486_0A79_9888);
    }

    #[test]
    fn encode_roundtrip() {
        for a in ChecksumAlgo::ALL {
            let v = a.compute(b"hello world");
            let e = a.encode(&v);
            assert_eq!(a.decode(&e), Some(v));
            assert_eq!(ChecksumAlgo::from_header(a.header()), Some(a));
            assert_eq!(ChecksumAlgo::from_name(&a.name().to_lowercase()), Some(a));
        }
        // CRC32C of the empty string is 0 -> "AAAAAA==".
        assert_eq!(ChecksumAlgo::Crc32c.encoded(b""), "AAAAAA==");
        assert_eq!(ChecksumAlgo::Crc32c.decode("AAAAAAAAAAA="), None);
        let parts = [ChecksumAlgo::Sha1.compute(b"a"), ChecksumAlgo::Sha1.compute(b"b")];
        assert!(ChecksumAlgo::Sha1.composite(&parts).ends_with("-2"));
    }
}
