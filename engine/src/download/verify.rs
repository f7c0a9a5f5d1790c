//! How a download checks its bytes against the checksum the server stores with the object.
//!
//! S3 sends an object's checksum only with an answer that covers the whole object, so a
//! verifying download asks for the whole object first and reads only its first part from that
//! answer (see the module docs of [`super`]). What the answer's headers claim
//! ([`Claim`]) then decides the check, before any part is admitted:
//!
//! - **Nothing to check** (verification off, a ranged read, no checksum): the download runs
//!   as before and reports [`NotVerifiedReason`].
//! - **One part, full-object checksum** (any algorithm): the part's response is hashed as it
//!   arrives and compared at its end; a mismatch retries the part like any broken response. A
//!   stream holds that part's bytes until they are checked.
//! - **Several parts, full-object CRC** (CRC32, CRC32C, CRC64NVME): each part hashes its own
//!   bytes in parallel, and the part CRCs are combined by length at the end
//!   ([`crate::crc_combine`]), so no byte is hashed twice and no part waits for another.
//! - **Several parts, full-object SHA1/SHA256**, and **every composite checksum**: SHAs do not
//!   combine, and a composite value is checked part by part against the upload parts'
//!   checksums (from GetObjectAttributes), whose boundaries need not match ours. Both are
//!   handled by one *ordered hasher*: every part also hands its chunks (reference-counted, no
//!   copy) to a thread that hashes the object in order, restarting at each upload-part
//!   boundary. A chunk that arrives ahead of the hashing point waits there with its part's
//!   memory reservation, so a lagging hasher holds back admission through the memory budget
//!   instead of growing memory. Its answer arrives when the last byte was hashed.
//!
//! For a composite checksum, the parts' checksums are also checked against the composite
//! value (the algorithm over the concatenated part checksums), so the listed part checksums
//! are those of the object that was read. If they cannot be had (GetObjectAttributes
//! unsupported, refused or failing, parts without checksums, sizes that do not add up, another
//! ETag), the download goes on unverified and says why: an optional check must not fail a
//! download that would otherwise succeed.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::Download;
use crate::buffer_pool::MemoryPermit;
use crate::checksum::{check, Claim, Hasher, Mismatch, S3ChecksumAlgorithm, Sum};
use crate::context::Context;
use crate::object_client::ObjectClient;
use crate::s3::get_object::RangeHead;
use crate::types::{NotVerifiedReason, Verification};

/// The check a download runs, decided from its first answer.
#[derive(Debug)]
pub(crate) enum Check {
    None,
    /// One part holds the whole object: its response is verified against this value.
    Response(Claim),
    /// Part CRCs of this full-object CRC, combined at the end.
    Combine(Claim),
    /// In-order hashing, restarting at each segment end (an upload part, or the whole object).
    Ordered {
        algorithm: S3ChecksumAlgorithm,
        segments: Vec<(u64, Sum)>,
        composite: bool,
    },
}

/// A download's check and what it proves once passed.
#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) check: Check,
    pub(crate) verification: Verification,
}

impl Plan {
    pub(crate) fn none(reason: NotVerifiedReason) -> Plan {
        Plan { check: Check::None, verification: Verification::NotVerified(reason) }
    }

    fn full_object(claim: Claim, single_part: bool, total: u64) -> Plan {
        let check = if single_part {
            Check::Response(claim)
        } else if claim.algorithm.combines() {
            Check::Combine(claim)
        } else {
            Check::Ordered { algorithm: claim.algorithm, segments: vec![(total, claim.sum)], composite: false }
        };
        Plan { check, verification: Verification::FullObject(claim.algorithm) }
    }
}

/// Decides how the download whose first answer is `head` is checked (see the module docs).
/// `single_part`: the first part is the whole download.
/// The caller decided the download verifies at all ([`super::Download::verifies`]).
pub(crate) async fn plan<C: ObjectClient>(
    ctx: &Context<C>,
    job: &Download,
    head: &RangeHead,
    single_part: bool,
) -> Plan {
    if job.options.range.is_some() {
        return Plan::none(NotVerifiedReason::RangedRead);
    }
    let Some(claim) = head.claim else { return Plan::none(NotVerifiedReason::NoChecksum) };
    let Some(count) = claim.composite else { return Plan::full_object(claim, single_part, head.total) };
    let unverifiable = Plan::none(NotVerifiedReason::Composite(claim.algorithm));
    let attrs = match ctx.store.object_parts(&job.bucket, &job.key, claim.algorithm).await {
        Ok(a) => a,
        Err(e) => {
            tracing::info!(error = %e, "no part checksums (GetObjectAttributes); the download is not verified");
            return unverifiable;
        }
    };
    let etag = head.etag.as_deref().map(|e| e.trim().trim_start_matches("W/").trim_matches('"'));
    if let (Some(a), Some(b)) = (etag, attrs.etag.as_deref()) {
        if a != b {
            tracing::info!(get = a, attributes = b, "GetObjectAttributes describes another version; not verified");
            return unverifiable;
        }
    }
    // Composite only by inference (no type header, a multipart ETag): the store may say
    // the value covers the bytes after all.
    if claim.inferred && attrs.checksum_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("FULL_OBJECT")) {
        return Plan::full_object(Claim { composite: None, inferred: false, ..claim }, single_part, head.total);
    }
    match segments(&claim, count, head.total, attrs.object_size, &attrs.parts) {
        Some(segments) => {
            let parts = segments.len() as u32;
            Plan {
                check: Check::Ordered { algorithm: claim.algorithm, segments, composite: true },
                verification: Verification::Parts { algorithm: claim.algorithm, parts },
            }
        }
        None => {
            tracing::info!(parts = attrs.parts.len(), "part checksums do not describe the object; not verified");
            unverifiable
        }
    }
}

/// The upload parts as `(end offset, checksum)`, when they describe the object: every part
/// has a checksum, the sizes add up to `total` (and to the listed size), the count matches
/// the `-N` suffix when there is one, and the part checksums hash to the composite value.
fn segments(
    claim: &Claim,
    count: Option<u32>,
    total: u64,
    listed_size: Option<u64>,
    parts: &[(u64, Option<Sum>)],
) -> Option<Vec<(u64, Sum)>> {
    if parts.is_empty() || count.is_some_and(|n| n as usize != parts.len()) || listed_size.is_some_and(|s| s != total) {
        return None;
    }
    let mut end = 0u64;
    let mut out = Vec::with_capacity(parts.len());
    let mut of_sums = claim.algorithm.hasher();
    for (size, sum) in parts {
        let sum = (*sum)?;
        end = end.checked_add(*size)?;
        of_sums.update(sum.as_slice());
        out.push((end, sum));
    }
    (end == total && of_sums.finish() == claim.sum).then_some(out)
}

/// One chunk handed to the ordered hasher; the permit keeps its part's memory reserved until
/// it has been hashed.
#[derive(Debug)]
pub(crate) struct TeeChunk {
    pub(crate) offset: u64,
    pub(crate) data: Bytes,
    pub(crate) _permit: Arc<MemoryPermit>,
}

/// A mismatch found by the ordered hasher: the upload part (1-based) for a composite
/// checksum, and the values.
pub(crate) type OrderedMismatch = (Option<usize>, Mismatch);

/// Starts the ordered hasher on a blocking thread. Every part sends its chunks to the
/// returned sender; the handle answers once every sender is gone.
pub(crate) fn spawn_ordered(
    algorithm: S3ChecksumAlgorithm,
    segments: Vec<(u64, Sum)>,
    composite: bool,
) -> (mpsc::UnboundedSender<TeeChunk>, tokio::task::JoinHandle<Result<(), OrderedMismatch>>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<TeeChunk>();
    let handle = tokio::task::spawn_blocking(move || {
        let mut ordered = Ordered::new(algorithm, segments, composite);
        let mut ahead: BTreeMap<u64, TeeChunk> = BTreeMap::new();
        while let Some(chunk) = rx.blocking_recv() {
            if chunk.offset > ordered.next {
                ahead.insert(chunk.offset, chunk);
                continue;
            }
            ordered.feed(chunk.offset, &chunk.data);
            while let Some(entry) = ahead.first_entry() {
                if *entry.key() > ordered.next {
                    break;
                }
                let chunk = entry.remove();
                ordered.feed(chunk.offset, &chunk.data);
            }
        }
        ordered.finish()
    });
    (tx, handle)
}

/// Hashes bytes in object order, comparing at each segment end.
struct Ordered {
    algorithm: S3ChecksumAlgorithm,
    segments: Vec<(u64, Sum)>,
    composite: bool,
    /// Segments already compared.
    done: usize,
    hasher: Hasher,
    /// The first object offset not hashed yet.
    next: u64,
    mismatch: Option<OrderedMismatch>,
}

impl Ordered {
    fn new(algorithm: S3ChecksumAlgorithm, segments: Vec<(u64, Sum)>, composite: bool) -> Ordered {
        let mut o =
            Ordered { algorithm, segments, composite, done: 0, hasher: algorithm.hasher(), next: 0, mismatch: None };
        o.settle();
        o
    }

    /// Hashes the part of `data` (at `offset`, which is at most `next`) not hashed yet.
    fn feed(&mut self, offset: u64, data: &[u8]) {
        let skip = usize::try_from(self.next - offset).unwrap_or(usize::MAX).min(data.len());
        let mut data = &data[skip..];
        while !data.is_empty() {
            let Some(&(end, _)) = self.segments.get(self.done) else {
                // Bytes past the last segment: the object is longer than its parts say. The
                // download's size checks catch that; nothing here to compare them with.
                self.next += data.len() as u64;
                return;
            };
            let take = usize::try_from(end - self.next).unwrap_or(usize::MAX).min(data.len());
            self.hasher.update(&data[..take]);
            self.next += take as u64;
            data = &data[take..];
            self.settle();
        }
    }

    /// Compares every segment that ends at `next` (empty ones included).
    fn settle(&mut self) {
        while let Some(&(end, want)) = self.segments.get(self.done) {
            if end != self.next {
                return;
            }
            let got = std::mem::replace(&mut self.hasher, self.algorithm.hasher()).finish();
            if let Err(m) = check(self.algorithm, want, got) {
                self.mismatch.get_or_insert((self.composite.then_some(self.done + 1), m));
            }
            self.done += 1;
        }
    }

    fn finish(self) -> Result<(), OrderedMismatch> {
        if let Some(m) = self.mismatch {
            return Err(m);
        }
        // Every part completed before the senders were dropped, so every byte was fed.
        debug_assert_eq!(self.done, self.segments.len(), "the ordered hasher saw every byte");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
    }

    fn feed_shuffled(o: &mut Ordered, data: &[u8], chunk: usize) {
        // Chunks arrive last first and wait until the hashing point reaches them, as in the
        // hasher thread.
        let mut ahead: BTreeMap<u64, &[u8]> = BTreeMap::new();
        for (i, c) in data.chunks(chunk).enumerate().collect::<Vec<_>>().into_iter().rev() {
            ahead.insert((i * chunk) as u64, c);
            while let Some(entry) = ahead.first_entry() {
                if *entry.key() > o.next {
                    break;
                }
                let offset = *entry.key();
                o.feed(offset, entry.remove());
            }
        }
        assert!(ahead.is_empty());
    }

    #[test]
    fn ordered_checks_each_segment() {
        let d = data(100_000);
        for alg in S3ChecksumAlgorithm::ALL {
            let bounds = [0usize, 30_000, 30_000, 99_999, 100_000];
            let segs: Vec<(u64, Sum)> = bounds.windows(2).map(|w| (w[1] as u64, alg.digest(&d[w[0]..w[1]]))).collect();
            let mut o = Ordered::new(alg, segs.clone(), true);
            feed_shuffled(&mut o, &d, 7_001);
            assert!(o.finish().is_ok(), "{alg}");
            // One flipped byte in the third segment (the second is empty).
            let mut bad = d.clone();
            bad[50_000] ^= 1;
            let mut o = Ordered::new(alg, segs, true);
            feed_shuffled(&mut o, &bad, 4_096);
            let (part, (a, want, got)) = o.finish().unwrap_err();
            assert_eq!((part, a), (Some(3), alg));
            assert_eq!(
                (want, got),
                (alg.digest(&d[30_000..99_999]).encoded(), alg.digest(&bad[30_000..99_999]).encoded())
            );
        }
    }

    #[test]
    fn overlapping_bytes_are_hashed_once() {
        let d = data(10_000);
        let alg = S3ChecksumAlgorithm::Sha256;
        let mut o = Ordered::new(alg, vec![(10_000, alg.digest(&d))], false);
        o.feed(0, &d[..6_000]);
        o.feed(4_000, &d[4_000..]);
        assert!(o.finish().is_ok());
    }

    #[test]
    fn segments_must_describe_the_object() {
        let d = data(20_000);
        let alg = S3ChecksumAlgorithm::Crc32;
        let parts = [(12_000u64, Some(alg.digest(&d[..12_000]))), (8_000, Some(alg.digest(&d[12_000..])))];
        let mut of_sums = Vec::new();
        parts.iter().for_each(|(_, s)| of_sums.extend_from_slice(s.unwrap().as_slice()));
        let claim = Claim { algorithm: alg, sum: alg.digest(&of_sums), composite: Some(Some(2)), inferred: false };
        assert_eq!(segments(&claim, Some(2), 20_000, Some(20_000), &parts).map(|s| s.len()), Some(2));
        assert!(segments(&claim, Some(3), 20_000, None, &parts).is_none(), "count");
        assert!(segments(&claim, None, 20_001, None, &parts).is_none(), "sizes");
        assert!(segments(&claim, None, 20_000, Some(1), &parts).is_none(), "listed size");
        assert!(segments(&claim, None, 20_000, None, &[parts[0], (8_000, None)]).is_none(), "a part without checksum");
        let other = Claim { sum: alg.digest(b"x"), ..claim };
        assert!(segments(&other, None, 20_000, None, &parts).is_none(), "composite value");
    }
}
