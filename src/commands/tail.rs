//! `clawmux tail`: read (and follow) the event log, filtered, pretty or raw.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clawmux::store::event_log::LOG_FILE;
use clawmux::store::log_event::KINDS;
use clawmux::store::log_read::{self, ReadStats};
use clawmux::store::{self, EventRecord, clock};
use clawmux::text_escape::{Keep, escape_controls};

/// How often `-f` looks for new lines: quick enough for a human watching.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

#[derive(clap::Args)]
pub struct Args {
    /// Keep printing new events as they are written.
    #[arg(short = 'f', long)]
    follow: bool,
    /// Only events of this kind (e.g. command, card, approval, detection, denied;
    /// docs/EVENTS.md lists them all).
    #[arg(long, value_parser = parse_kind)]
    kind: Option<String>,
    /// Only events of this project.
    #[arg(long)]
    project: Option<String>,
    /// Only events newer than this, e.g. 30s, 10m, 2h, 1d.
    #[arg(long, value_parser = parse_duration)]
    since: Option<Duration>,
    /// Print the raw JSON lines.
    #[arg(long)]
    json: bool,
}

/// A kind the event log can hold; anything else is bad usage (exit 2)
/// rather than a filter that silently matches nothing.
fn parse_kind(s: &str) -> Result<String, String> {
    if KINDS.contains(&s) {
        return Ok(s.to_string());
    }
    // Kinds that share the word's stem (`approve` → `approval…`).
    let stem = s.get(..s.len().min(5)).unwrap_or(s);
    let close: Vec<&str> = (KINDS.iter().copied())
        .filter(|k| k.contains(s) || s.contains(k) || k.starts_with(stem))
        .collect();
    let listed = if close.is_empty() {
        KINDS.to_vec()
    } else {
        close
    };
    Err(format!("no event kind `{s}`; kinds: {}", listed.join(", ")))
}

/// `30s`, `10m`, `2h`, `1d`, or jiff's friendly spans (`1h30m`, `2 days`);
/// a bare number is seconds. A day is 24 hours here.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}` is not a duration like 30s, 10m, 2h, 1d");
    let t = s.trim();
    let with_unit = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        format!("{t}s")
    } else {
        t.to_string()
    };
    let span: jiff::Span = with_unit.parse().map_err(|_| bad())?;
    let d = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|_| bad())?;
    Duration::try_from(d).map_err(|_| bad())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = store::state_dir();
    let log = dir.join(LOG_FILE);
    if !log.exists() {
        eprintln!(
            "clawmux: no event log at {}: `clawmux serve` writes it there (CLAWMUX_HOME picks another state directory)",
            log.display()
        );
        if !args.follow {
            return Ok(ExitCode::FAILURE);
        }
    }
    let since_ms = args
        .since
        .map(|d| clock::now_ms().saturating_sub(d.as_millis() as u64));
    let keep = |r: &EventRecord| {
        args.kind.as_deref().is_none_or(|k| r.kind == k)
            && args
                .project
                .as_deref()
                .is_none_or(|p| r.field("project") == Some(p))
            && since_ms.is_none_or(|t| r.ts_ms >= t)
    };
    let mut out = std::io::stdout().lock();
    // Records are printed as they are read: memory stays bounded whatever
    // the size of the log, and `--since` starts reading near the end.
    let mut written = Ok(());
    let mut print = |r: EventRecord| {
        if written.is_ok() && keep(&r) {
            written = print_record(&mut out, &r, args.json);
        }
    };
    // An unreadable log is a runtime failure (exit 1), not bad usage.
    let stats = log_read::stream(&dir, since_ms, &mut print)?;
    if let Some(code) = stopped(written)? {
        return Ok(code);
    }
    report_skipped(&stats);
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    let mut offset = stats.end_offset;
    loop {
        if let Some(code) = stopped(out.flush())? {
            return Ok(code);
        }
        std::thread::sleep(FOLLOW_POLL);
        let mut written = Ok(());
        let stats = log_read::follow_from(&dir, offset, &mut |r| {
            if written.is_ok() && keep(&r) {
                written = print_record(&mut out, &r, args.json);
            }
        })?;
        if let Some(code) = stopped(written)? {
            return Ok(code);
        }
        report_skipped(&stats);
        offset = stats.end_offset;
    }
}

/// A write to stdout: the reader going away (`clawmux tail | head`) ends
/// the command successfully; any other error is a failure.
fn stopped(written: std::io::Result<()>) -> std::io::Result<Option<ExitCode>> {
    match written {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Some(ExitCode::SUCCESS)),
        Err(e) => Err(e),
    }
}

fn report_skipped(stats: &ReadStats) {
    if stats.skipped_lines > 0 {
        eprintln!(
            "clawmux: skipped {} torn or unreadable line(s) in the event log",
            stats.skipped_lines
        );
    }
    if stats.too_long > 0 {
        eprintln!(
            "clawmux: skipped {} line(s) longer than {} bytes in the event log",
            stats.too_long,
            log_read::MAX_RECORD_BYTES
        );
    }
}

/// One record: raw JSON (already escaped, printed byte for byte as stored
/// fields), or one readable line whose outside text has its control
/// characters made visible.
fn print_record(out: &mut impl Write, r: &EventRecord, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", serde_json::Value::Object(r.fields.clone()));
    }
    let line = readable(r);
    writeln!(out, "{}", escape_controls(&line, Keep::Nothing))
}

/// Width of the kind column: the longest kind, so every line's fields
/// start in the same column.
fn kind_width() -> usize {
    KINDS.iter().map(|k| k.len()).max().unwrap_or(0)
}

/// Fields the readable form leaves out (`--json` keeps everything): the
/// line's own `ts` and `kind`, absent values, and a delivered card's
/// handle and uuid (bookkeeping, not news).
fn is_noise(kind: &str, field: &str, value: &serde_json::Value) -> bool {
    matches!(field, "ts" | "kind")
        || value.is_null()
        || (kind == "card" && matches!(field, "uuid" | "handle"))
}

fn readable(r: &EventRecord) -> String {
    use std::fmt::Write as _;
    let mut line = format!(
        "{} {:<width$}",
        clock::rfc3339(r.ts_ms),
        r.kind,
        width = kind_width()
    );
    for (k, v) in r.fields.iter().filter(|(k, v)| !is_noise(&r.kind, k, v)) {
        // Infallible: writing to a String.
        let _ = match v.as_str() {
            Some(s) if !s.contains(char::is_whitespace) && !s.is_empty() => {
                write!(line, " {k}={s}")
            }
            _ => write!(line, " {k}={v}"),
        };
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        // jiff's spans: combined units and words.
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2 days"), Ok(Duration::from_secs(172_800)));
        assert!(parse_duration("10x").unwrap_err().contains("like 30s, 10m"));
        for bad in ["m", "", "-5m", "1.5.2h"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn kinds_are_checked() {
        assert_eq!(
            parse_kind("approval_answered"),
            Ok("approval_answered".into())
        );
        let err = parse_kind("bogus").unwrap_err();
        assert!(
            err.contains("no event kind `bogus`") && err.contains("card_retry"),
            "{err}"
        );
        let err = parse_kind("approve").unwrap_err();
        assert!(
            err.contains("approval_answered") && !err.contains("card_retry"),
            "{err}"
        );
    }

    #[test]
    fn readable_lines_align_and_drop_noise() {
        let card = EventRecord::parse(
            r#"{"ts":"2026-11-29T15:00:20.000Z","kind":"card","uuid":"u1","handle":"h1","op":"send"}"#,
        )
        .unwrap();
        let done = EventRecord::parse(
            r#"{"ts":"2026-11-29T15:00:21.000Z","kind":"completed","errors":0,"job":null,"project":"p","seconds":1}"#,
        )
        .unwrap();
        let (card, done) = (readable(&card), readable(&done));
        assert!(
            !card.contains("u1") && !card.contains("h1") && card.contains("op=send"),
            "{card}"
        );
        assert!(!done.contains("job"), "{done}");
        assert_eq!(card.find("op="), done.find("errors="), "{card}\n{done}");
    }

    #[test]
    fn readable_lines_make_control_characters_visible() {
        let line = r#"{"ts":"2026-11-29T15:00:20.000Z","kind":"command","project":"x","sender":"ou_a\u001b[2J","text":"hi \u001b]2;pwned\u0007 there\u009b"}"#;
        // A project is a project name, in the log too: a line naming
        // another is not an event of the schema.
        assert!(EventRecord::parse(&line.replace(r#""x""#, r#""x\u001b[2J""#)).is_none());
        let r = EventRecord::parse(line).unwrap();
        let mut out = Vec::new();
        print_record(&mut out, &r, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        assert!(text.contains("sender=ou_a\\x1b[2J"), "{text}");
        assert!(text.contains("\\u{9b}"), "{text}");
        // JSON output stays JSON: the same record, escaped by JSON itself.
        let mut out = Vec::new();
        print_record(&mut out, &r, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r"\u001b]2;pwned\u0007"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(line).unwrap()
        );
    }
}
