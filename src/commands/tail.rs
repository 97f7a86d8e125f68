//! `clawmux tail`: read (and follow) the event log, filtered, pretty or raw.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clawmux::store::{self, EventRecord, clock, event_log};

use super::UsageError;

/// How often `-f` looks for new lines: quick enough for a human watching.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

#[derive(clap::Args)]
pub struct Args {
    /// Keep printing new events as they are written.
    #[arg(short = 'f', long)]
    follow: bool,
    /// Only events of this kind (e.g. command, card, approval, detection, denied).
    #[arg(long)]
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

fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 30s, 10m, 2h, 1d"))?;
    let secs = match unit {
        "s" | "" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("unknown unit `{unit}` in `{s}`: use s, m, h or d")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dir = store::state_dir();
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
    let mut offset = event_log::current_len(&dir);
    let contents = event_log::read_all(&dir).map_err(|e| UsageError(e.to_string()))?;
    if contents.skipped_lines > 0 {
        eprintln!(
            "clawmux: skipped {} torn or unreadable line(s) in the event log",
            contents.skipped_lines
        );
    }
    for r in contents.records.iter().filter(|r| keep(r)) {
        print_record(&mut out, r, args.json)?;
    }
    if !args.follow {
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        out.flush()?;
        std::thread::sleep(FOLLOW_POLL);
        let (new, next) = event_log::read_from(&dir, offset)?;
        offset = next;
        for r in new.records.iter().filter(|r| keep(r)) {
            print_record(&mut out, r, args.json)?;
        }
    }
}

fn print_record(out: &mut impl Write, r: &EventRecord, json: bool) -> std::io::Result<()> {
    if json {
        return writeln!(out, "{}", serde_json::Value::Object(r.fields.clone()));
    }
    write!(out, "{} {:<10}", clock::rfc3339(r.ts_ms), r.kind)?;
    for (k, v) in r.fields.iter().filter(|(k, _)| *k != "ts" && *k != "kind") {
        match v.as_str() {
            Some(s) if !s.contains(char::is_whitespace) && !s.is_empty() => {
                write!(out, " {k}={s}")?
            }
            _ => write!(out, " {k}={v}")?,
        }
    }
    writeln!(out)
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
        assert!(parse_duration("10x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("m").is_err());
    }
}
