//! Wall-clock timestamps for records: milliseconds since the Unix epoch and
//! their RFC 3339 (UTC) form, read and written with `jiff`.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The instant `ms` milliseconds after the epoch; for anything later than
/// jiff's last instant (9999-12-30T22:00Z, so that every offset still
/// lands in year 9999), that one.
fn instant(ms: u64) -> jiff::Timestamp {
    i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::MAX)
}

/// `2026-11-29T15:30:00.123Z` for a millisecond timestamp.
pub fn rfc3339(ms: u64) -> String {
    format!("{:.3}", instant(ms))
}

/// `14:12:41` in `zone` (the machine's: `jiff::tz::TimeZone::system()`),
/// as a person reads a clock. Cards show this rather than [`rfc3339`],
/// which is for machines and logs.
pub fn time_in(ms: u64, zone: &jiff::tz::TimeZone) -> String {
    instant(ms)
        .to_zoned_datetime(zone.clone())
        .strftime("%H:%M:%S")
        .to_string()
}

/// `YYYY-MM-DD` (UTC) for a millisecond timestamp.
pub fn date(ms: u64) -> String {
    instant(ms).strftime("%Y-%m-%d").to_string()
}

/// Parses what [`rfc3339`] writes: UTC (`Z`), `T` between date and time,
/// an optional fraction (kept to the millisecond). Other RFC 3339 and
/// ISO 8601 spellings jiff would take (an offset, a space) are refused:
/// the log only ever holds this one.
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b.get(10) != Some(&b'T') || !s.ends_with('Z') {
        return None;
    }
    let at: jiff::Timestamp = s.parse().ok()?;
    u64::try_from(at.as_millisecond()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_in_the_zone() {
        let ms = 1_795_966_205_000; // 2026-11-29T15:30:05Z
        let beijing = jiff::tz::TimeZone::fixed(jiff::tz::offset(8));
        assert_eq!(time_in(ms, &beijing), "23:30:05");
        assert_eq!(time_in(ms, &jiff::tz::TimeZone::UTC), "15:30:05");
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
            "2026-02-30T00:00:00Z",
            "2026-11-29 14:20:20Z",
            "2026-11-29t14:20:20Z",
            "2026-11-29T14:20:20+08:00",
            "2026-11-29T14:20:20.Z",
            "1969-12-31T23:59:59Z",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        // A finer fraction is kept to the millisecond.
        assert_eq!(
            parse_rfc3339("2026-11-29T15:00:20.123999Z"),
            Some(1_795_964_420_123)
        );
    }

    #[test]
    fn instants_past_year_9999_are_the_last_one() {
        assert_eq!(rfc3339(u64::MAX), "9999-12-30T22:00:00.999Z");
        assert_eq!(date(u64::MAX), "9999-12-30");
    }
}
