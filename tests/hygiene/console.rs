//! The console as a newcomer uses it: buttons pressed with `/press N`, a
//! stop that says what keeps running and what still waits, and a restart
//! that greets with the projects it found.

use std::io::Write;

use super::serve_stop::{line_with, serve, serve_again, serve_with};
use super::wait_exit;

/// The console-wide number on a button's line: `[1] Yes · /press 7`.
fn press_number(line: &str) -> String {
    line.rsplit("/press ")
        .next()
        .map(str::trim)
        .unwrap_or_default()
        .to_string()
}

#[test]
fn buttons_pressed_a_stop_that_says_what_is_left_and_a_restart_that_greets() {
    let mut served = serve();
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/gsd:new-project demo").unwrap();
    line_with(&served.stdout, "Created **demo**");
    writeln!(stdin, "/gsd:plan-phase 2").unwrap();
    let yes = line_with(&served.stdout, "[1] Yes · /press ");
    // The prompt waits: stop here, with it unanswered.
    drop(stdin);
    let status = wait_exit(served.child).expect("exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let stopped = line_with(&served.stderr, "clawmux: stopped");
    assert!(
        stopped.contains(&format!("`-L {}`", served.tmux.socket)) && stopped.contains("cm-demo"),
        "{stopped}"
    );
    assert!(stopped.contains("kill-server"), "{stopped}");
    line_with(&served.stderr, "Waiting for an answer");
    line_with(&served.stderr, "demo: Do you want to proceed?");

    // A number from the last run presses nothing now; the restart greets.
    let mut served = serve_again(served.home, served.tmux);
    assert!(
        served.greeting.contains("Projects found: demo"),
        "{}",
        served.greeting
    );
    line_with(&served.stdout, "demo: Do you want to proceed?");
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/press {}", press_number(&yes)).unwrap();
    line_with(&served.stdout, "✗ no button");
    // The inbox shows the prompt's buttons again, numbered anew.
    writeln!(stdin, "/gsd:inbox").unwrap();
    let yes = line_with(&served.stdout, "[1] Yes · /press ");
    writeln!(stdin, "/press {}", press_number(&yes)).unwrap();
    line_with(&served.stdout, "✓ Sending: Yes");
    line_with(&served.stdout, "Plans verified [3/3]");
    drop(stdin);
    wait_exit(served.child).expect("exits after end of input");
}

/// With `LANG=zh_CN.UTF-8` the console prints clawmux's words in Chinese,
/// buttons included, and the agent's words as the agent wrote them.
#[test]
fn the_console_speaks_chinese_under_a_chinese_locale() {
    let tmux = crate::support::tmux::TmuxServer::new();
    let home = super::sim_home(&tmux);
    let mut served = serve_with(home, tmux, &[("LANG", "zh_CN.UTF-8")]);
    // The console's own framing is in Chinese too.
    assert_eq!(
        served.greeting, "输入 /gsd:help，或输入 /gsd:new-project demo 开始。",
        "{}",
        served.greeting
    );
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/gsd:help").unwrap();
    line_with(&served.stdout, "== clawmux 帮助 ==");
    line_with(&served.stdout, "**clawmux 命令**");
    line_with(&served.stdout, "- `/gsd:status`：每个项目正在做什么");
    writeln!(stdin, "/gsd:new-project demo").unwrap();
    line_with(&served.stdout, "== 项目已就绪 ==");
    line_with(&served.stdout, "创建 **demo**");
    // The agent's own answer is not translated.
    line_with(&served.stdout, "You said: /gsd:new-project");
    writeln!(stdin, "/gsd:plan-phase 2").unwrap();
    line_with(&served.stdout, "== 需要审批 ==");
    let yes = line_with(&served.stdout, "[1] Yes · /press ");
    writeln!(stdin, "/press {}", press_number(&yes)).unwrap();
    line_with(&served.stdout, "✓ 正在发送：Yes");
    line_with(&served.stdout, "Plans verified [3/3]");
    // The turn footer under the result: the time it took, in Chinese.
    let footer = line_with(&served.stdout, "⏱ ");
    assert!(
        footer.starts_with("⏱ 用时 ") && footer.contains('秒'),
        "{footer}"
    );
    drop(stdin);
    let status = wait_exit(served.child).expect("exits after end of input");
    assert_eq!(status.code(), Some(0), "{status:?}");
    let stopped = line_with(&served.stderr, "clawmux：已停止（");
    assert!(stopped.contains("智能体仍在 tmux 服务器"), "{stopped}");
}

/// A long result read on the console is cards, and the state directory
/// keeps no copy of what the agent printed (a chat gets a long result as a
/// file; the console does not, so none is written).
#[test]
fn a_long_result_on_the_console_leaves_no_copy_behind() {
    let mut served = serve();
    let mut stdin = served.stdin.take().expect("piped stdin");
    writeln!(stdin, "/gsd:new-project demo").unwrap();
    line_with(&served.stdout, "Created **demo**");
    // 5000 numbered lines: far over the 24 KiB of a long result.
    writeln!(stdin, "/gsd:flood").unwrap();
    line_with(&served.stdout, "5000 │ generated output line");
    drop(stdin);
    wait_exit(served.child).expect("exits after end of input");
    // Never written: only a chat gets a long result as a file.
    let kept = served.home.path().join("outbox-files");
    assert!(!kept.exists(), "{:?}", std::fs::read_dir(&kept));
}
