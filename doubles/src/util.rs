//! Small helpers shared by the doubles: timestamps, random ids, escaping, form decoding.

use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::distr::{Alphanumeric, SampleString};

/// Locks, ignoring poison: a panic in one request must not wedge the whole double.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `2026-11-23T15:04:05Z`: RFC 3339, UTC, seconds precision (as IMDS, ECS and STS send it).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Milliseconds since the Unix epoch (the SSO portal's `expiration`).
pub(crate) fn epoch_millis(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// `len` random ASCII letters and digits.
pub(crate) fn random_alnum(len: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rng(), len)
}

/// A UUID-shaped request id, as STS and the SSO portal send.
pub(crate) fn request_id() -> String {
    let h = random_alnum(32).to_ascii_lowercase();
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// Escapes text for an XML element.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A JSON string literal (quoted and escaped).
pub(crate) fn json_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Decodes `application/x-www-form-urlencoded` text (also query strings) into pairs.
pub(crate) fn form_decode(s: &str) -> Vec<(String, String)> {
    let decode = |v: &str| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned();
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(1_795_446_245)), "2026-11-23T15:04:05Z");
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn form_decoding() {
        let got = form_decode("Action=AssumeRole&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&X=a+b&Y");
        assert_eq!(got[1].1, "arn:aws:iam::1:role/r");
        assert_eq!(got[2].1, "a b");
        assert_eq!(got[3], ("Y".into(), String::new()));
    }
}
