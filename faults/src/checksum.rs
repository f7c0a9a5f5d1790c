//! The three CRC checksums S3 speaks for data integrity, in S3's wire encoding.
//!
//! Kept separate so the service, the store and the tests agree on one encoding: base64 of the
//! big-endian CRC (4 bytes for CRC32/CRC32C, 8 bytes for CRC64NVME).

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
}

impl ChecksumAlgo {
    /// Every supported algorithm, so header scans cover all of them in one place.
    pub const ALL: [ChecksumAlgo; 3] = [ChecksumAlgo::Crc32, ChecksumAlgo::Crc32c, ChecksumAlgo::Crc64Nvme];

    /// The lowercase header (and trailer) name carrying this checksum.
    pub fn header(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgo::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgo::Crc64Nvme => "x-amz-checksum-crc64nvme",
        }
    }

    /// The element name used in S3 XML documents (e.g. `<ChecksumCRC32C>`).
    pub fn xml_name(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "ChecksumCRC32",
            ChecksumAlgo::Crc32c => "ChecksumCRC32C",
            ChecksumAlgo::Crc64Nvme => "ChecksumCRC64NVME",
        }
    }

    /// The value used in `x-amz-checksum-algorithm` (e.g. `CRC32C`).
    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgo::Crc32 => "CRC32",
            ChecksumAlgo::Crc32c => "CRC32C",
            ChecksumAlgo::Crc64Nvme => "CRC64NVME",
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

    /// Computes the CRC of `data`.
    pub fn compute(self, data: &[u8]) -> u64 {
        crc_fast::checksum(self.crc_algorithm(), data)
    }

    fn crc_algorithm(self) -> CrcAlgorithm {
        match self {
            ChecksumAlgo::Crc32 => CrcAlgorithm::Crc32IsoHdlc,
            ChecksumAlgo::Crc32c => CrcAlgorithm::Crc32Iscsi,
            ChecksumAlgo::Crc64Nvme => CrcAlgorithm::Crc64Nvme,
        }
    }

    fn width(self) -> usize {
        match self {
            ChecksumAlgo::Crc64Nvme => 8,
            _ => 4,
        }
    }

    /// Encodes a CRC value the way S3 sends it: base64 of the big-endian bytes.
    pub fn encode(self, value: u64) -> String {
        let be = value.to_be_bytes();
        B64.encode(&be[8 - self.width()..])
    }

    /// Decodes a header value; `None` when it is not base64 of the right width.
    pub fn decode(self, s: &str) -> Option<u64> {
        let raw = B64.decode(s.trim()).ok()?;
        if raw.len() != self.width() {
            return None;
        }
        Some(raw.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// Convenience: the encoded checksum of `data`.
    pub fn encoded(self, data: &[u8]) -> String {
        self.encode(self.compute(data))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values() {
        // The standard "123456789" check values of each CRC catalogue entry.
        assert_eq!(ChecksumAlgo::Crc32.compute(b"123456789"), 0xCBF4_3926);
        assert_eq!(ChecksumAlgo::Crc32c.compute(b"123456789"), 0xE306_9283);
        assert_eq!(ChecksumAlgo::Crc64Nvme.compute(b"123456789"), 0xAE8B_1486_0A79_9888);
    }

    #[test]
    fn encode_roundtrip() {
        for a in ChecksumAlgo::ALL {
            let v = a.compute(b"hello world");
            let e = a.encode(v);
            assert_eq!(a.decode(&e), Some(v));
            assert_eq!(ChecksumAlgo::from_header(a.header()), Some(a));
            assert_eq!(ChecksumAlgo::from_name(&a.name().to_lowercase()), Some(a));
        }
        // CRC32C of the empty string is 0 -> "AAAAAA==".
        assert_eq!(ChecksumAlgo::Crc32c.encoded(b""), "AAAAAA==");
        assert_eq!(ChecksumAlgo::Crc32c.decode("AAAAAAAAAAA="), None);
    }
}
