//! Request classification types and fault-rule matching.
//!
//! Rules are evaluated once per request, at arrival, so a test can predict exactly which
//! request gets which fault (counters and the seeded RNG advance in a fixed order).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::faults::Fault;

/// The S3 operation a request was classified as; rules and counters are keyed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `GET /bucket/key`.
    GetObject,
    /// `HEAD /bucket/key`.
    HeadObject,
    /// `PUT /bucket/key` (without `partNumber`/`uploadId`).
    PutObject,
    /// `POST /bucket/key?uploads`.
    CreateMultipartUpload,
    /// `PUT /bucket/key?partNumber=N&uploadId=U`.
    UploadPart,
    /// `POST /bucket/key?uploadId=U`.
    CompleteMultipartUpload,
    /// `DELETE /bucket/key?uploadId=U`.
    AbortMultipartUpload,
    /// `GET /bucket?uploads`.
    ListMultipartUploads,
    /// `GET /bucket?list-type=2` (a plain `GET /bucket` is answered the same way).
    ListObjectsV2,
    /// `DELETE /bucket/key`.
    DeleteObject,
    /// `PUT /bucket`.
    CreateBucket,
    /// `PUT /bucket/key` with `x-amz-copy-source` (without `partNumber`/`uploadId`).
    CopyObject,
    /// `PUT /bucket/key?partNumber=N&uploadId=U` with `x-amz-copy-source`.
    UploadPartCopy,
    /// `POST /bucket?delete`: a batch of keys. Each key is also matched as a [`Op::DeleteObject`]
    /// of its own, so a rule can refuse one key inside a batch.
    DeleteObjects,
    /// `GET /bucket?session`: S3 Express One Zone's CreateSession (see
    /// [`crate::FaultServer::enable_express`]).
    CreateSession,
    /// Anything else (HeadBucket, DeleteBucket, ListBuckets, unsupported calls).
    Other,
}

impl Op {
    /// All variants, in declaration order (index = `op as usize`), for per-op counters.
    pub const ALL: [Op; 16] = [
        Op::GetObject,
        Op::HeadObject,
        Op::PutObject,
        Op::CreateMultipartUpload,
        Op::UploadPart,
        Op::CompleteMultipartUpload,
        Op::AbortMultipartUpload,
        Op::ListMultipartUploads,
        Op::ListObjectsV2,
        Op::DeleteObject,
        Op::CreateBucket,
        Op::CopyObject,
        Op::UploadPartCopy,
        Op::DeleteObjects,
        Op::CreateSession,
        Op::Other,
    ];

    /// The variant name (as used in fault specs and the binary's JSON summary).
    pub fn name(self) -> &'static str {
        match self {
            Op::GetObject => "GetObject",
            Op::HeadObject => "HeadObject",
            Op::PutObject => "PutObject",
            Op::CreateMultipartUpload => "CreateMultipartUpload",
            Op::UploadPart => "UploadPart",
            Op::CompleteMultipartUpload => "CompleteMultipartUpload",
            Op::AbortMultipartUpload => "AbortMultipartUpload",
            Op::ListMultipartUploads => "ListMultipartUploads",
            Op::ListObjectsV2 => "ListObjectsV2",
            Op::DeleteObject => "DeleteObject",
            Op::CreateBucket => "CreateBucket",
            Op::CopyObject => "CopyObject",
            Op::UploadPartCopy => "UploadPartCopy",
            Op::DeleteObjects => "DeleteObjects",
            Op::CreateSession => "CreateSession",
            Op::Other => "Other",
        }
    }

    /// Parses a variant name (case-insensitive), the inverse of [`Op::name`].
    pub fn from_name(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name().eq_ignore_ascii_case(s))
    }

    /// Whether the request carries a body the server must read (uploads): faults act on
    /// that body instead of on the response.
    pub fn carries_body(self) -> bool {
        matches!(self, Op::PutObject | Op::UploadPart | Op::CompleteMultipartUpload)
    }
}

/// One logged request, so tests can assert what the client actually sent.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// The classified operation.
    pub op: Op,
    /// The decoded object key, for object-level requests.
    pub key: Option<String>,
    /// GET Range as (start, inclusive end); a suffix range is resolved against the object size
    /// when the object exists (else `None`); `bytes=a-` gives `(a, None)`.
    pub range: Option<(u64, Option<u64>)>,
    /// UploadPart's `partNumber`.
    pub part_number: Option<u32>,
    /// Debug rendering of the fault fired for this request, if any.
    pub fault: Option<String>,
    /// All request headers except `authorization`, names lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
}

/// Conditions a request must meet for a rule to fire; `None` fields are wildcards.
#[derive(Debug, Clone, Default)]
pub struct Match {
    /// Only this operation.
    pub op: Option<Op>,
    /// Only this (decoded) key.
    pub key: Option<String>,
    /// Only a GET whose Range starts at this byte ("on part K" = K * part_size); a GET without
    /// Range does not match.
    pub range_start: Option<u64>,
    /// Only UploadPart with this partNumber.
    pub part_number: Option<u32>,
    /// Fires on the n-th, 2n-th, ... request that matched the fields above.
    pub every_nth: Option<u64>,
    /// Fires with this probability, drawn from the server's seeded RNG.
    pub probability: Option<f64>,
}

impl Match {
    /// Matches every request (the starting point of the builder).
    pub fn any() -> Match {
        Match::default()
    }

    /// Matches requests of one operation.
    pub fn op(op: Op) -> Match {
        Match { op: Some(op), ..Match::default() }
    }

    /// Also require this key.
    pub fn key(mut self, k: &str) -> Self {
        self.key = Some(k.to_string());
        self
    }

    /// Also require a GET Range starting at byte `b`.
    pub fn range_start(mut self, b: u64) -> Self {
        self.range_start = Some(b);
        self
    }

    /// Also require UploadPart number `n`.
    pub fn part_number(mut self, n: u32) -> Self {
        self.part_number = Some(n);
        self
    }

    /// Fire only on every n-th statically matching request (n = 0 is treated as 1).
    pub fn every_nth(mut self, n: u64) -> Self {
        self.every_nth = Some(n);
        self
    }

    /// Fire only with probability `p` (clamped to 0..=1).
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p);
        self
    }

    fn static_match(&self, req: &RequestInfo<'_>) -> bool {
        self.op.is_none_or(|op| op == req.op)
            && self.key.as_deref().is_none_or(|k| req.key == Some(k))
            && self.range_start.is_none_or(|b| req.range_start == Some(b))
            && self.part_number.is_none_or(|n| req.part_number == Some(n))
    }
}

/// A fault plus the condition that triggers it and an optional firing budget.
#[derive(Debug, Clone)]
pub struct Rule {
    /// When the rule applies.
    pub when: Match,
    /// What to inject.
    pub fault: Fault,
    /// Fire at most this many times; `None` = unlimited.
    pub times: Option<u64>,
}

impl Rule {
    /// A rule with an unlimited firing budget.
    pub fn new(when: Match, fault: Fault) -> Rule {
        Rule { when, fault, times: None }
    }

    /// Limits the rule to `n` firings (e.g. "fail the first attempt only").
    pub fn times(mut self, n: u64) -> Rule {
        self.times = Some(n);
        self
    }
}

/// What rule matching looks at in a request.
pub(crate) struct RequestInfo<'a> {
    pub op: Op,
    pub key: Option<&'a str>,
    pub range_start: Option<u64>,
    pub part_number: Option<u32>,
}

struct RuleState {
    rule: Rule,
    matched: u64,
    fired: u64,
}

/// The rule list with per-rule counters, plus the RNG for `probability` (kept under one lock
/// so draws happen in request-evaluation order).
pub(crate) struct RuleSet {
    rules: Vec<RuleState>,
    rng: StdRng,
}

impl RuleSet {
    pub(crate) fn new() -> RuleSet {
        RuleSet { rules: Vec::new(), rng: StdRng::seed_from_u64(0) }
    }

    pub(crate) fn seed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }

    pub(crate) fn add(&mut self, rule: Rule) {
        self.rules.push(RuleState { rule, matched: 0, fired: 0 });
    }

    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    /// Evaluates all rules for one request. Every rule whose static fields match counts the
    /// request (so `every_nth` counts independently per rule), but only the first rule that
    /// fires wins; rules after the winner only count, they draw no random number and spend no
    /// budget.
    pub(crate) fn evaluate(&mut self, req: &RequestInfo<'_>) -> Option<Fault> {
        let mut winner = None;
        for st in &mut self.rules {
            if !st.rule.when.static_match(req) {
                continue;
            }
            st.matched += 1;
            if winner.is_some() {
                continue;
            }
            let nth_ok = st.rule.when.every_nth.is_none_or(|n| st.matched % n.max(1) == 0);
            if !nth_ok {
                continue;
            }
            if let Some(p) = st.rule.when.probability {
                let draw: f64 = self.rng.random();
                if draw >= p.clamp(0.0, 1.0) {
                    continue;
                }
            }
            if st.rule.times.is_some_and(|t| st.fired >= t) {
                continue;
            }
            st.fired += 1;
            winner = Some(st.rule.fault.clone());
        }
        winner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(key: &str) -> RequestInfo<'_> {
        RequestInfo { op: Op::GetObject, key: Some(key), range_start: None, part_number: None }
    }

    #[test]
    fn every_nth_times_and_order() {
        let mut rs = RuleSet::new();
        rs.add(Rule::new(Match::op(Op::GetObject).every_nth(2), Fault::slow_down()).times(2));
        rs.add(Rule::new(Match::any().key("b"), Fault::internal_error()));
        let fired: Vec<bool> = (0..8).map(|_| rs.evaluate(&get("a")).is_some()).collect();
        assert_eq!(fired, [false, true, false, true, false, false, false, false]);
        assert_eq!(rs.evaluate(&get("b")), Some(Fault::internal_error()));
        let put = RequestInfo { op: Op::PutObject, key: Some("a"), range_start: None, part_number: None };
        assert_eq!(rs.evaluate(&put), None);
    }

    #[test]
    fn probability_is_seeded() {
        let run = |seed| {
            let mut rs = RuleSet::new();
            rs.seed(seed);
            rs.add(Rule::new(Match::any().probability(0.5), Fault::slow_down()));
            (0..64).map(|_| rs.evaluate(&get("k")).is_some()).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let n = run(7).iter().filter(|f| **f).count();
        assert!((16..48).contains(&n), "{n}");
    }
}
