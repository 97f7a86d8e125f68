//! Wall-clock timestamps for records: milliseconds since the Unix epoch and
//! their RFC 3339 (UTC) form, without a date-time crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `2026-11-29T15:30:00.123Z` for a millisecond timestamp.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// `14:12:41` in this machine's time zone (`TZ`, else the system's), as a
/// person reads a clock; UTC when the zone cannot be found. Cards show
/// this rather than [`rfc3339`], which is for machines and logs.
pub fn local_time(ms: u64) -> String {
    time_in(ms, jiff::tz::TimeZone::system())
}

fn time_in(ms: u64, zone: jiff::tz::TimeZone) -> String {
    let Ok(at) = jiff::Timestamp::from_millisecond(ms.min(i64::MAX as u64) as i64) else {
        return rfc3339(ms);
    };
    at.to_zoned_datetime(zone).strftime("%H:%M:%S").to_string()
}

/// `YYYY-MM-DD` (UTC) for a millisecond timestamp.
pub fn date(ms: u64) -> String {
    let (y, m, d) = civil_from_days((ms / 1000 / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Parses what [`rfc3339`] writes (UTC, `Z`, optional fraction).
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let frac = &s[19..s.len() - 1];
    let millis = match frac.strip_prefix('.') {
        Some(f) if !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()) => {
            format!("{f:0<3}")[..3].parse::<u64>().ok()?
        }
        None if frac.is_empty() => 0,
        _ => return None,
    };
    let days = days_from_civil(y as i64, mo as u32, d as u32);
    Some((days as u64 * 86_400 + h * 3600 + mi * 60 + se) * 1000 + millis)
}

// Howard Hinnant's civil calendar algorithms (public domain).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_in_the_zone() {
        let ms = 1_795_966_205_000; // 2026-11-29T15:30:05Z
        let beijing = jiff::tz::TimeZone::fixed(jiff::tz::offset(8));
        assert_eq!(time_in(ms, beijing), "23:30:05");
        assert_eq!(time_in(ms, jiff::tz::TimeZone::UTC), "15:30:05");
        assert_eq!(local_time(ms).len(), 8);
    }

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_795_964_420_123), "2026-11-29T15:00:20.123Z");
        assert_eq!(date(951_782_400_000), "2000-02-29");
    }

    #[test]
    fn round_trip_and_rejects() {
        for ms in [0, 1, 951_782_400_000, 1_795_964_420_123, 4_102_444_800_999] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Some(ms));
        }
        assert_eq!(
            parse_rfc3339("2026-11-29T15:00:20Z"),
            Some(1_795_964_420_000)
        );
        for bad in [
            "",
            "2026-13-01T00:00:00Z",
            "2026-11-29 14:20:20Z",
            "2026-11-29T14:20:20.Z",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
