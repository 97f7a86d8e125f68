//! CPU time and peak memory of processes, read from `/proc` (Linux), so
//! every design is measured the same way from outside.

use std::path::Path;

use super::BenchError;

/// CPU seconds a process used, split the way `/proc/<pid>/stat` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Times {
    /// utime + stime of the process itself.
    own: f64,
    /// cutime + cstime: children it has waited for.
    reaped_children: f64,
    ppid: u32,
    pgrp: u32,
}

/// The process's own CPU seconds (user + system), children excluded: the
/// tmux server, whose children are the panes' programs.
pub fn own_cpu(pid: u32) -> Result<f64, BenchError> {
    Ok(times(pid)?.own)
}

/// CPU seconds of a process and all its children, live or reaped: the
/// watcher with its `tmux -C` clients, the poller with its `capture-pane`
/// processes.
pub fn tree_cpu(pid: u32) -> Result<f64, BenchError> {
    let root = times(pid)?;
    let mut total = root.own + root.reaped_children;
    for child in children(pid) {
        // A child may exit between listing and reading: its time then moves
        // to the parent's reaped total, read next time.
        if let Ok(t) = times(child) {
            total += t.own + t.reaped_children;
        }
    }
    Ok(total)
}

/// Peak resident memory (`VmHWM`) in bytes.
pub fn peak_rss(pid: u32) -> Result<u64, BenchError> {
    let status = read(pid, "status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| BenchError::Proc {
            pid,
            reason: "no VmHWM line in status".into(),
        })
}

/// Resident memory now (`VmRSS`) in bytes.
pub fn rss(pid: u32) -> Result<u64, BenchError> {
    let status = read(pid, "status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| BenchError::Proc {
            pid,
            reason: "no VmRSS line in status".into(),
        })
}

/// Live children of `pid` (one level: the bench's roles do not nest).
pub fn children(pid: u32) -> Vec<u32> {
    processes_where(|t| t.ppid == pid)
}

/// Live processes of the process group `pgid` (tmux starts each pane's
/// program as the leader of its own).
pub fn process_group(pgid: u32) -> Vec<u32> {
    processes_where(|t| t.pgrp == pgid)
}

fn processes_where(wanted: impl Fn(&Times) -> bool) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| times(p).is_ok_and(|t| wanted(&t)))
        .collect()
}

fn times(pid: u32) -> Result<Times, BenchError> {
    let stat = read(pid, "stat")?;
    parse_stat(&stat, clock_ticks()).ok_or_else(|| BenchError::Proc {
        pid,
        reason: format!("unexpected stat line: {stat}"),
    })
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses, so fields are counted after the last `)`.
fn parse_stat(stat: &str, ticks_per_second: f64) -> Option<Times> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … utime(14) stime(15) cutime(16) cstime(17).
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    let ticks = |a: usize, b: usize| Some((field(a)? + field(b)?) as f64 / ticks_per_second);
    Some(Times {
        own: ticks(14, 15)?,
        reaped_children: ticks(16, 17)?,
        ppid: u32::try_from(field(4)?).ok()?,
        pgrp: u32::try_from(field(5)?).ok()?,
    })
}

/// Clock ticks per second of the times in `/proc/<pid>/stat` (`USER_HZ`).
pub fn clock_ticks() -> f64 {
    let hz = rustix::param::clock_ticks_per_second();
    if hz > 0 { hz as f64 } else { 100.0 }
}

fn read(pid: u32, file: &str) -> Result<String, BenchError> {
    std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join(file)).map_err(|e| {
        BenchError::Proc {
            pid,
            reason: format!("{file}: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let line =
            "4242 (tmux: a) b) S 17 4242 4242 0 -1 4194560 1 2 3 4 250 50 7 3 20 0 1 0 5 6 7";
        let t = parse_stat(line, 100.0).unwrap();
        assert_eq!(t.ppid, 17);
        assert_eq!(t.pgrp, 4242);
        assert!((t.own - 3.0).abs() < 1e-9);
        assert!((t.reaped_children - 0.1).abs() < 1e-9);
        assert_eq!(parse_stat("1 (x) S", 100.0), None);
    }

    #[test]
    fn finds_this_process_in_its_group() {
        let me = std::process::id();
        let group = u32::try_from(rustix::process::getpgrp().as_raw_pid()).unwrap();
        assert!(process_group(group).contains(&me));
        assert!(!process_group(u32::MAX).contains(&me));
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id();
        // Own time first: the tree's, read after, can only have grown
        // (other tests run on other threads meanwhile).
        let own = own_cpu(me).unwrap();
        assert!(own >= 0.0);
        assert!(tree_cpu(me).unwrap() >= own);
        assert!(peak_rss(me).unwrap() > 0);
    }
}
