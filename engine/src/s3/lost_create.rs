//! A CreateMultipartUpload retried after a lost answer: abort the uploads the lost answers
//! made.
//!
//! An attempt whose answer was lost (a reset or timeout after the request went out) may have
//! created an upload whose id we never learned. Nothing would ever complete or abort it: it
//! holds no parts, so it costs nothing, but it shows in every listing until an
//! `AbortIncompleteMultipartUpload` lifecycle rule (if the bucket has one) removes it. So when
//! a Create succeeds after such an attempt, the key's in-progress uploads are listed
//! (ListMultipartUploads with `prefix` = the key, then exact key match) and those our attempts
//! can have made are aborted.
//!
//! Which ones those are is decided on the server's clock, never ours, so a skewed local clock
//! cannot widen or shift the window: our own upload's `Initiated` time (from the same listing)
//! is when the server acted on our last attempt, and the first attempt went out at most `span`
//! earlier (`span` = local monotonic time from the first attempt's start to the answer). An
//! upload of the key initiated in `[ours − span − 2 s, ours + 2 s]` is taken as ours; the 2 s
//! allow for the clocks of different S3 front ends and timestamp rounding. If our upload is
//! not in the listing, the answer's `Date` header (whole seconds: `[Date, Date + 1 s]`) stands
//! in for it; with neither, nothing is aborted. The cost of this choice: another writer's
//! upload of the same key started within those seconds would be aborted too (its upload
//! fails and can be retried), which is why the window is kept to the attempts' own span.
//!
//! A store that does not allow listing uploads (`AccessDenied`, `NotImplemented`) or any other
//! failure of the listing or an abort is logged at warn, and the upload goes on: the orphan is
//! then left to a lifecycle rule, as before.

use std::time::{Duration, SystemTime};

use aws_smithy_types::date_time::{DateTime, Format};

use super::S3;
use crate::types::MultipartUploadSummary;

/// Allowance for clock differences between the hosts that stamp `Initiated`, and rounding.
const SKEW: Duration = Duration::from_secs(2);

/// Where the server's clock stood when it acted on our successful attempt: an interval, since
/// the `Date` header has whole seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ServerTime {
    earliest: SystemTime,
    latest: SystemTime,
}

/// The uploads of `key` in `uploads` that our earlier attempts made: not `ours`, and initiated
/// within `span` (plus [`SKEW`]) before the server acted on our successful attempt.
fn orphans<'a>(
    uploads: &'a [MultipartUploadSummary],
    key: &str,
    ours: &str,
    span: Duration,
    date: Option<SystemTime>,
) -> Vec<&'a str> {
    let own = uploads.iter().find(|u| u.key == key && u.upload_id == ours).and_then(|u| u.initiated);
    let now = match (own, date) {
        (Some(t), _) => ServerTime { earliest: t, latest: t },
        (None, Some(d)) => ServerTime { earliest: d, latest: d + Duration::from_secs(1) },
        (None, None) => return Vec::new(),
    };
    let (Some(from), Some(to)) = (now.earliest.checked_sub(span + SKEW), now.latest.checked_add(SKEW)) else {
        return Vec::new();
    };
    uploads
        .iter()
        .filter(|u| u.key == key && u.upload_id != ours)
        .filter(|u| u.initiated.is_some_and(|t| from <= t && t <= to))
        .map(|u| u.upload_id.as_str())
        .collect()
}

/// An HTTP `Date` header (`Mon, 23 Nov 2026 20:40:40 GMT`).
fn http_date(text: &str) -> Option<SystemTime> {
    SystemTime::try_from(DateTime::from_str(text.trim(), Format::HttpDate).ok()?).ok()
}

impl S3 {
    /// After CreateMultipartUpload of `bucket/key` returned `ours` following a lost answer:
    /// aborts the uploads of the key our earlier attempts made (see the module docs). `span`
    /// is the time from the first attempt's start to the answer, `date` the answer's `Date`
    /// header. Never fails: the upload goes on whatever happens here.
    pub(crate) async fn abort_orphans(&self, bucket: &str, key: &str, ours: &str, span: Duration, date: Option<&str>) {
        let uploads = match self.list_multipart_uploads(bucket, Some(key)).await {
            Ok(u) => u,
            Err(e) => {
                tracing::warn!(error = %e, %bucket, %key,
                    "cannot list uploads after a lost CreateMultipartUpload answer; the upload it made may be left behind");
                return;
            }
        };
        for id in orphans(&uploads, key, ours, span, date.and_then(http_date)) {
            match self.abort_multipart(bucket, key, id).await {
                Ok(()) => tracing::info!(%bucket, %key, upload_id = id, "aborted the upload a lost Create answer made"),
                Err(e) => tracing::warn!(error = %e, %bucket, %key, upload_id = id,
                    "cannot abort the upload a lost CreateMultipartUpload answer made"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::*;

    fn at(secs: f64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_800_000_000) + Duration::from_secs_f64(secs)
    }

    fn up(key: &str, id: &str, initiated: Option<f64>) -> MultipartUploadSummary {
        MultipartUploadSummary { key: key.into(), upload_id: id.into(), initiated: initiated.map(at) }
    }

    #[test]
    fn window_on_the_servers_clock() {
        let list = [
            up("k", "ours", Some(100.0)),
            up("k", "lost", Some(99.2)),
            up("k", "lost-just-before-skew", Some(96.6)),
            up("k", "older", Some(95.0)),
            up("k", "undated", None),
            up("k/deeper", "prefix-only", Some(99.5)),
            up("k", "later-other-writer", Some(103.0)),
        ];
        // The first attempt went out 1.3 s before our answer: window [96.7, 102].
        let got = orphans(&list, "k", "ours", Duration::from_millis(1300), None);
        assert_eq!(got, ["lost"]);
        let got = orphans(&list, "k", "ours", Duration::from_millis(1500), None);
        assert_eq!(got, ["lost", "lost-just-before-skew"]);
    }

    #[test]
    fn date_header_stands_in_for_our_upload_and_nothing_without_either() {
        let list = [up("k", "lost", Some(99.2)), up("k", "older", Some(90.0))];
        // Our upload is not listed (eventual consistency): the answer's Date, 100 s, is used.
        assert_eq!(orphans(&list, "k", "ours", Duration::from_secs(1), Some(at(100.0))), ["lost"]);
        assert!(orphans(&list, "k", "ours", Duration::from_secs(1), None).is_empty());
        let d = http_date("Mon, 23 Nov 2026 20:40:40 GMT").unwrap();
        assert_eq!(d.duration_since(UNIX_EPOCH).unwrap().as_secs(), 1_795_466_440);
        assert!(http_date("yesterday").is_none());
    }
}
