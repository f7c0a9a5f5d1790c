//! Timestamps as the credential services write them: RFC 3339 (`2026-11-23T15:04:05Z`, IMDS,
//! the container endpoint, STS, credential processes, the SSO token cache) and epoch
//! milliseconds (the SSO portal).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_smithy_types::date_time::{DateTime, Format};

/// Parses an RFC 3339 timestamp; `None` when it is not one.
/// Numeric offsets (`+02:00`, which credential processes print) are applied.
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    if let Ok(t) = DateTime::from_str(text, Format::DateTime) {
        return SystemTime::try_from(t).ok();
    }
    // `…±HH:MM`: parse the local part as UTC, then move it by the offset.
    let (local, offset) = text.split_at(text.len().checked_sub(6)?);
    let sign = match offset.as_bytes()[0] {
        b'+' => 1i64,
        b'-' => -1,
        _ => return None,
    };
    let (h, m) = offset[1..].split_once(':')?;
    let secs = sign * (h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60);
    let utc = SystemTime::try_from(DateTime::from_str(&format!("{local}Z"), Format::DateTime).ok()?).ok()?;
    let shift = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 {
        utc.checked_sub(shift)
    } else {
        utc.checked_add(shift)
    }
}

/// Formats a time as RFC 3339 in UTC (for messages).
pub(crate) fn format_rfc3339(t: SystemTime) -> String {
    DateTime::from(t).fmt(Format::DateTime).unwrap_or_else(|_| format!("{t:?}"))
}

pub(crate) fn from_epoch_millis(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_aws_sends() {
        let t = parse_rfc3339("2026-11-23T15:04:05Z").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 1_795_446_245);
        assert!(parse_rfc3339("2026-11-23T15:04:05.123Z").is_some());
        assert_eq!(parse_rfc3339("2026-11-23T15:04:05+00:00"), Some(t));
        assert_eq!(parse_rfc3339("2026-11-23T17:04:05+02:00"), Some(t));
        assert_eq!(parse_rfc3339("2026-11-23T14:34:05-00:30"), Some(t));
        assert!(parse_rfc3339("tomorrow").is_none());
        assert_eq!(format_rfc3339(t), "2026-11-23T15:04:05Z");
    }
}
