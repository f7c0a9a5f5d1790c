//! Small HTTP helpers (percent-coding, query strings, dates, Range headers) written here so the
//! crate needs no extra dependencies for them.

use std::time::{SystemTime, UNIX_EPOCH};

/// Percent-decodes `s`. `+` stays literal: S3 clients encode spaces as `%20`, and a literal
/// `+` in a key must survive. Invalid escapes are kept as-is.
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex_val(b[i + 1]), hex_val(b[i + 2])) {
                out.push(h << 4 | l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes everything except RFC 3986 unreserved characters and `/` (S3's
/// `encoding-type=url` style for keys in listings).
pub(crate) fn percent_encode_key(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// Parses a query string into decoded `(name, value)` pairs (a bare `name` gets an empty value).
pub(crate) fn parse_query(q: Option<&str>) -> Vec<(String, String)> {
    let Some(q) = q else { return Vec::new() };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Splits a UNIX timestamp into (year, month, day, hour, minute, second, weekday 0=Sunday).
fn civil(t: SystemTime) -> (i64, u32, u32, u32, u32, u32, u32, u32) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let millis = d.subsec_millis();
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    // 1970-01-01 was a Thursday (weekday 4).
    let weekday = (days + 4).rem_euclid(7) as u32;
    // Days-to-civil conversion using 400-year eras that start on March 1st.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, sod / 3600, sod / 60 % 60, sod % 60, weekday, millis)
}

/// Formats an IMF-fixdate (`Last-Modified` style): `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(t: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let (y, mo, d, h, mi, s, wd, _) = civil(t);
    format!("{}, {d:02} {} {y:04} {h:02}:{mi:02}:{s:02} GMT", DAYS[wd as usize], MONTHS[mo as usize - 1])
}

/// Formats an ISO 8601 timestamp as S3 XML uses it: `2009-10-12T17:50:30.000Z`.
pub(crate) fn iso8601(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, _, ms) = civil(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// A syntactically valid single `Range: bytes=` request, before it is resolved against a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeSpec {
    /// `bytes=a-b` (b inclusive) or `bytes=a-` (b = None).
    From(u64, Option<u64>),
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

/// Parses a Range header. Anything S3 would ignore (other units, multiple ranges, garbage,
/// `a-b` with b < a) yields `None`, which means "serve the whole object".
pub(crate) fn parse_range(h: &str) -> Option<RangeSpec> {
    let spec = h.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() {
        return b.parse().ok().map(RangeSpec::Suffix);
    }
    let start: u64 = a.parse().ok()?;
    if b.is_empty() {
        return Some(RangeSpec::From(start, None));
    }
    let end: u64 = b.parse().ok()?;
    (end >= start).then_some(RangeSpec::From(start, Some(end)))
}

impl RangeSpec {
    /// Resolves against an object size: `Some((start, end_inclusive))` for a satisfiable
    /// range, `None` for an unsatisfiable one (416).
    pub(crate) fn resolve(self, total: u64) -> Option<(u64, u64)> {
        match self {
            RangeSpec::From(start, end) => {
                if start >= total {
                    return None;
                }
                let end = end.map_or(total - 1, |e| e.min(total - 1));
                Some((start, end))
            }
            RangeSpec::Suffix(n) => {
                if n == 0 || total == 0 {
                    return None;
                }
                Some((total.saturating_sub(n), total - 1))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates() {
        let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        let t = UNIX_EPOCH + Duration::from_millis(1_255_369_830_123);
        assert_eq!(iso8601(t), "2009-10-12T17:50:30.123Z");
        assert_eq!(iso8601(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn percent() {
        assert_eq!(percent_decode("a%2Fb%20c+d%zz%4"), "a/b c+d%zz%4");
        assert_eq!(percent_encode_key("a b/ü+"), "a%20b/%C3%BC%2B");
        assert_eq!(
            parse_query(Some("uploads&prefix=a%2Fb&x=")),
            vec![("uploads".into(), "".into()), ("prefix".into(), "a/b".into()), ("x".into(), "".into())]
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_range("bytes=0-9"), Some(RangeSpec::From(0, Some(9))));
        assert_eq!(parse_range("bytes=5-"), Some(RangeSpec::From(5, None)));
        assert_eq!(parse_range("bytes=-3"), Some(RangeSpec::Suffix(3)));
        assert_eq!(parse_range("bytes=9-5"), None);
        assert_eq!(parse_range("bytes=0-1,3-4"), None);
        assert_eq!(parse_range("items=0-1"), None);
        assert_eq!(RangeSpec::From(0, Some(99)).resolve(10), Some((0, 9)));
        assert_eq!(RangeSpec::From(10, None).resolve(10), None);
        assert_eq!(RangeSpec::From(0, None).resolve(0), None);
        assert_eq!(RangeSpec::Suffix(3).resolve(10), Some((7, 9)));
        assert_eq!(RangeSpec::Suffix(30).resolve(10), Some((0, 9)));
        assert_eq!(RangeSpec::Suffix(0).resolve(10), None);
    }
}
