//! A simulated Claude Code + GSD agent for tests and demos: it draws what
//! Claude Code 2.1.197 draws in a terminal (the input box, kept under a
//! `✢ Verb… (1s · ↑ 174 tokens)` spinner row while busy with `esc to
//! interrupt` in its footer only; `●` answers; the permission, edit-free
//! AskUserQuestion (descriptions, an inner rule, `Chat about this`) and
//! plan dialogs without a box, waiting for a key; GSD banners, checkpoints,
//! progress, API errors, output floods), driven by a small [`Script`].
//!
//! Input: one line at a time (typed with `tmux send-keys -l` then `Enter`);
//! menus read a single key in raw mode. Output: ANSI to the terminal. End of
//! input ends the agent.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

mod script;
mod term;

use std::io::{self, BufRead, Write};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

pub use script::{DEFAULT_SCRIPT, Handler, Script, ScriptError, Step, Trigger, substitute};
pub use term::DEFAULT_COLS;

/// Spinner frame interval: Claude Code redraws its spinner about this often.
const SPIN_FRAME: Duration = Duration::from_millis(80);
/// How long each retry row shows (the real backoff is seconds; the sim
/// only has to show each attempt).
const RETRY_PAUSE: Duration = Duration::from_millis(400);
/// Pause between progress lines, so each arrives as its own update.
const PROGRESS_STEP: Duration = Duration::from_millis(100);
/// Widest idle-box rule drawn, in columns.
const MAX_RULE_COLS: usize = 100;
/// Cells in a progress bar.
const BAR_CELLS: usize = 10;
/// Spinner glyphs, as Claude Code cycles them.
const GLYPHS: [&str; 6] = ["✶", "✻", "✽", "✢", "·", "✳"];
/// Rows of the busy block: spinner, blank, rule, prompt, rule, footer.
const BUSY_ROWS: usize = 6;
/// Tokens the spinner row claims per frame (it only has to look alive).
const TOKENS_PER_FRAME: u64 = 12;
/// The row after `⎿` in Claude Code has a space and a no-break space.
const RESULT: &str = "  ⎿ \u{a0}";

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Time divisor: 2.0 runs every step twice as fast.
    pub speed: f64,
    /// Terminal width for the idle box rules.
    pub cols: u16,
    /// The input terminal, for raw-mode key reads and line echo; `None`
    /// when input is a pipe (nothing is echoed).
    pub tty: Option<RawFd>,
}

impl SimOptions {
    /// Options for the process's own stdin/stdout terminal.
    pub fn for_terminal(speed: f64) -> Self {
        use std::io::IsTerminal;
        let is_tty = std::io::stdin().is_terminal();
        SimOptions {
            speed,
            cols: term::columns(1),
            tty: is_tty.then_some(0),
        }
    }
}

/// The simulated agent over an input and an output.
pub struct SimAgent<R, W> {
    script: Script,
    input: R,
    out: W,
    options: SimOptions,
    /// The spinner row kept at the bottom while a turn works, as Claude
    /// Code keeps its status line under the output.
    spinner: Option<String>,
}

/// How a turn ended.
enum Flow {
    Continue,
    /// The user declined a permission: the rest of the handler is skipped.
    Stop,
    /// Input ended.
    Eof,
}

impl<R: BufRead, W: Write> SimAgent<R, W> {
    pub fn new(script: Script, input: R, out: W, options: SimOptions) -> Self {
        SimAgent {
            script,
            input,
            out,
            options,
            spinner: None,
        }
    }

    /// Runs until input ends.
    pub fn run(&mut self) -> io::Result<()> {
        self.write("✻ Welcome to sim-agent (clawmux's simulated Claude Code)\r\n")?;
        while let Some(line) = self.prompt()? {
            if line.trim().is_empty() {
                continue;
            }
            if let Flow::Eof = self.turn(&line)? {
                break;
            }
        }
        Ok(())
    }

    fn write(&mut self, s: &str) -> io::Result<()> {
        self.out.write_all(s.as_bytes())?;
        self.out.flush()
    }

    fn sleep(&self, d: Duration) {
        let speed = if self.options.speed > 0.0 {
            self.options.speed
        } else {
            1.0
        };
        std::thread::sleep(d.div_f64(speed));
    }

    fn rule(&self) -> String {
        "─".repeat(usize::from(self.options.cols).clamp(3, MAX_RULE_COLS))
    }

    /// Draws the idle box, reads one line, replaces the box with the line.
    fn prompt(&mut self) -> io::Result<Option<String>> {
        let rule = self.rule();
        // Blank, rule, prompt, rule, hint; then the cursor goes to the prompt.
        self.write(&format!(
            "\r\n{rule}\r\n❯\u{a0}\r\n{rule}\r\n  ? for shortcuts\x1b[2A\r\x1b[2C"
        ))?;
        let mut line = String::new();
        if self.input.read_line(&mut line)? == 0 {
            self.write("\r\n\r\n")?;
            return Ok(None);
        }
        let line = line.trim_end_matches(['\r', '\n']).to_owned();
        // A terminal echoed the Enter, so the cursor is one row lower.
        let up = if self.options.tty.is_some() { 3 } else { 2 };
        self.write(&format!("\r\x1b[{up}A\x1b[J❯ {}\r\n", printable(&line)))?;
        Ok(Some(line))
    }

    fn turn(&mut self, input: &str) -> io::Result<Flow> {
        let started = Instant::now();
        let steps = self
            .script
            .handler_for(input)
            .map(|h| h.steps.clone())
            .unwrap_or_default();
        let mut flow = Flow::Continue;
        for step in &steps {
            flow = self.step(step, input)?;
            if !matches!(flow, Flow::Continue) {
                break;
            }
        }
        self.stop_spinner()?;
        if !matches!(flow, Flow::Eof) {
            let secs = started.elapsed().as_secs().max(1);
            self.write(&format!("\r\n✻ Churned for {secs}s\r\n"))?;
        }
        Ok(flow)
    }

    fn step(&mut self, step: &Step, input: &str) -> io::Result<Flow> {
        let sub = |t: &str| printable(&substitute(t, input));
        match step {
            Step::Say(t) => self.line(&sub(t))?,
            Step::Sleep(d) => self.sleep(*d),
            Step::Banner(t) => self.line(&format!("\r\n━━━ GSD ► {}\r\n", sub(t)))?,
            Step::Spin(d, t) => self.spin(*d, &sub(t))?,
            Step::Flood(n) => self.flood(*n)?,
            Step::Retry(n) => {
                for attempt in 1..=*n {
                    let row = format!("✻ API error · Retrying in 1s · attempt {attempt}/{n}");
                    let erase = self.erase_block();
                    let block = self.busy_block(&row);
                    self.write(&format!("{erase}{block}"))?;
                    self.spinner = Some(row);
                    self.sleep(RETRY_PAUSE);
                }
            }
            Step::Progress {
                from,
                to,
                step,
                text,
            } => {
                for pct in (*from..=*to).step_by(usize::from(*step)) {
                    let filled = usize::from(pct) * BAR_CELLS / 100;
                    let bar = format!("{}{}", "█".repeat(filled), "░".repeat(BAR_CELLS - filled));
                    self.line(&format!("  {} {bar} {pct}%", sub(text)))?;
                    self.sleep(PROGRESS_STEP);
                }
            }
            Step::Permission(cmd) => return self.permission(&sub(cmd)),
            Step::Question(q, options) => {
                let options: Vec<String> = options.iter().map(|o| sub(o)).collect();
                return self.question(&sub(q), &options);
            }
            Step::Plan(steps) => {
                let steps: Vec<String> = steps.iter().map(|s| sub(s)).collect();
                return self.plan(&steps);
            }
            Step::Checkpoint(title, action) => return self.checkpoint(&sub(title), &sub(action)),
        }
        Ok(Flow::Continue)
    }

    fn spin(&mut self, d: Duration, text: &str) -> io::Result<()> {
        let started = Instant::now();
        let frames = (d.as_millis() / SPIN_FRAME.as_millis()).max(1);
        let verb = if text.ends_with('…') {
            text.to_owned()
        } else {
            format!("{text}…")
        };
        for frame in 0..frames {
            let glyph = GLYPHS[usize::try_from(frame).unwrap_or(0) % GLYPHS.len()];
            let secs = started.elapsed().as_secs();
            let tokens = (u64::try_from(frame).unwrap_or(0) + 1) * TOKENS_PER_FRAME;
            let row = format!("{glyph} {verb} ({secs}s · ↑ {tokens} tokens)");
            let erase = self.erase_block();
            let block = self.busy_block(&row);
            self.write(&format!("{erase}{block}"))?;
            self.spinner = Some(row);
            self.sleep(SPIN_FRAME);
        }
        Ok(())
    }

    /// The spinner row over the input box, whose footer says the agent
    /// works; the cursor is left at the end of the footer.
    fn busy_block(&self, spinner: &str) -> String {
        let rule = self.rule();
        format!("{spinner}\r\n\r\n{rule}\r\n❯\u{a0}\r\n{rule}\r\n  esc to interrupt")
    }

    /// Moves to the start of the busy block, if one shows, and erases it.
    fn erase_block(&self) -> String {
        match self.spinner {
            Some(_) => format!("\r\x1b[{}A\x1b[J", BUSY_ROWS - 1),
            None => "\r\x1b[2K".to_owned(),
        }
    }

    /// Prints a line above the busy block, if one is showing.
    fn line(&mut self, text: &str) -> io::Result<()> {
        match self.spinner.clone() {
            Some(row) => {
                let erase = self.erase_block();
                let block = self.busy_block(&row);
                self.write(&format!("{erase}{text}\r\n{block}"))
            }
            None => self.write(&format!("{text}\r\n")),
        }
    }

    /// Removes the busy block (a dialog or the end of the turn).
    fn stop_spinner(&mut self) -> io::Result<()> {
        if self.spinner.is_some() {
            let erase = self.erase_block();
            self.spinner = None;
            self.write(&erase)?;
        }
        Ok(())
    }

    fn flood(&mut self, n: usize) -> io::Result<()> {
        self.stop_spinner()?;
        let mut buf = String::new();
        for i in 1..=n {
            buf.push_str(&format!(
                "  {i:>6} │ generated output line with some text to fill the pane {i}\r\n"
            ));
            if buf.len() > 16 * 1024 {
                self.write(&buf)?;
                buf.clear();
            }
        }
        self.write(&buf)
    }

    /// Shows `rows` as a dialog, waits for a key choosing one of `n`
    /// options, erases the dialog. `None` when input ended.
    fn menu(&mut self, rows: &[String], n: usize) -> io::Result<Option<usize>> {
        self.stop_spinner()?;
        self.write(&rows.join("\r\n"))?;
        let choice = self.read_choice(n)?;
        self.write(&format!("\r\x1b[{}A\x1b[J", rows.len() - 1))?;
        Ok(choice)
    }

    /// Reads keys until one chooses an option (0-based): a digit, Enter
    /// (the highlighted first option) or Esc (the last).
    fn read_choice(&mut self, n: usize) -> io::Result<Option<usize>> {
        let _raw = self.options.tty.and_then(term::RawMode::enter);
        loop {
            let mut byte = [0u8; 1];
            if self.input.read(&mut byte)? == 0 {
                return Ok(None);
            }
            match byte[0] {
                b'\r' | b'\n' => return Ok(Some(0)),
                0x1b => return Ok(Some(n - 1)),
                d @ b'1'..=b'9' if usize::from(d - b'0') <= n => {
                    return Ok(Some(usize::from(d - b'1')));
                }
                _ => {}
            }
        }
    }

    /// Reads the words typed into a dialog's text field, up to Enter.
    /// `None` when input ended.
    fn read_field(&mut self) -> io::Result<Option<String>> {
        let _raw = self.options.tty.and_then(term::RawMode::enter);
        let mut bytes = Vec::new();
        loop {
            let mut byte = [0u8; 1];
            if self.input.read(&mut byte)? == 0 {
                return Ok(None);
            }
            match byte[0] {
                b'\r' | b'\n' => return Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
                b if b < 0x20 => {}
                b => bytes.push(b),
            }
        }
    }

    fn permission(&mut self, cmd: &str) -> io::Result<Flow> {
        self.stop_spinner()?;
        self.write(&format!("● Bash({cmd})\r\n{RESULT}Waiting…\r\n"))?;
        let program = cmd.split_whitespace().next().unwrap_or("");
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let options = [
            "Yes".to_owned(),
            format!("Yes, and don't ask again for {program} commands in {cwd}"),
            "No".to_owned(),
        ];
        let mut rows = vec![
            String::new(),
            self.rule(),
            " Bash command".to_owned(),
            String::new(),
            format!("   {cmd}"),
            "   Run the project's check".to_owned(),
            String::new(),
            " Do you want to proceed?".to_owned(),
        ];
        rows.extend(menu_rows(" ", &options, &[]));
        rows.extend([
            String::new(),
            " Esc to cancel · Tab to amend · ctrl+e to explain".to_owned(),
        ]);
        let Some(choice) = self.menu(&rows, options.len())? else {
            return Ok(Flow::Eof);
        };
        // The `Waiting…` row becomes the outcome.
        self.write("\x1b[1A\r\x1b[2K")?;
        if choice == options.len() - 1 {
            self.write(&format!(
                "{RESULT}Interrupted · What should Claude do instead?\r\n"
            ))?;
            return Ok(Flow::Stop);
        }
        self.write(&format!("{RESULT}Ran {cmd}: ok\r\n"))?;
        Ok(Flow::Continue)
    }

    fn question(&mut self, question: &str, options: &[String]) -> io::Result<Flow> {
        self.stop_spinner()?;
        let (labels, descriptions): (Vec<String>, Vec<String>) = options
            .iter()
            .map(|o| match o.split_once(": ") {
                Some((l, d)) => (l.trim().to_owned(), d.trim().to_owned()),
                None => (o.clone(), String::new()),
            })
            .unzip();
        let rule = self.rule();
        let mut rows = vec![
            String::new(),
            rule.clone(),
            " ☐ Scope".to_owned(),
            String::new(),
            question.to_owned(),
            String::new(),
        ];
        rows.extend(menu_rows("", &labels, &descriptions));
        let chat = "Chat about this";
        rows.extend([
            rule,
            format!("  {}. {chat}", labels.len() + 1),
            String::new(),
            "Enter to select · ↑/↓ to navigate · Esc to cancel".to_owned(),
        ]);
        self.write(&rows.join("\r\n"))?;
        let Some(choice) = self.read_choice(labels.len() + 1)? else {
            return Ok(Flow::Eof);
        };
        let erase = format!("\r\x1b[{}A\x1b[J", rows.len() - 1);
        let label = labels.get(choice).map_or(chat, String::as_str);
        let answer = if label.starts_with("Type something") {
            // Its key focuses the field (the cursor moves to its row);
            // typed words and Enter are the answer.
            let focused: Vec<String> = rows
                .iter()
                .map(|r| match r.strip_prefix("❯ ") {
                    Some(rest) => format!("  {rest}"),
                    None => r.clone(),
                })
                .map(|r| match r.strip_prefix(&format!("  {}. ", choice + 1)) {
                    Some(rest) => format!("❯ {}. {rest}", choice + 1),
                    None => r,
                })
                .collect();
            self.write(&format!("{erase}{}", focused.join("\r\n")))?;
            let Some(words) = self.read_field()? else {
                return Ok(Flow::Eof);
            };
            printable(&words)
        } else {
            label.to_owned()
        };
        self.write(&erase)?;
        self.write(&format!(
            "● User answered Claude's questions:\r\n{RESULT}· {question} → {answer}\r\n"
        ))?;
        Ok(Flow::Continue)
    }

    fn plan(&mut self, steps: &[String]) -> io::Result<Flow> {
        self.stop_spinner()?;
        self.write(&format!("● Updated plan\r\n{RESULT}/plan to preview\r\n"))?;
        let rule = self.rule();
        let dashed = "╌".repeat(usize::from(self.options.cols).clamp(3, MAX_RULE_COLS));
        let mut rows = vec![
            String::new(),
            rule.clone(),
            " Ready to code?".to_owned(),
            String::new(),
            " Here is Claude's plan:".to_owned(),
            dashed.clone(),
            " Plan".to_owned(),
            String::new(),
        ];
        rows.extend(
            steps
                .iter()
                .enumerate()
                .map(|(i, s)| format!(" {}. {s}", i + 1)),
        );
        rows.extend([
            dashed,
            String::new(),
            rule,
            " Claude has written up a plan and is ready to execute. Would you like to proceed?"
                .to_owned(),
            String::new(),
        ]);
        let options = [
            "Yes, and use auto mode".to_owned(),
            "Yes, manually approve edits".to_owned(),
            "Tell Claude what to change".to_owned(),
        ];
        let hints = [
            String::new(),
            String::new(),
            "shift+tab to approve with this feedback".to_owned(),
        ];
        rows.extend(menu_rows(" ", &options, &hints));
        rows.extend([
            String::new(),
            " ctrl+g to edit in Vim · ~/.claude/plans/sim-plan.md".to_owned(),
        ]);
        let Some(choice) = self.menu(&rows, options.len())? else {
            return Ok(Flow::Eof);
        };
        if choice == options.len() - 1 {
            self.write(&format!("{RESULT}User rejected Claude's plan\r\n"))?;
            return Ok(Flow::Stop);
        }
        self.write("● User approved Claude's plan\r\n")?;
        Ok(Flow::Continue)
    }

    fn checkpoint(&mut self, title: &str, action: &str) -> io::Result<Flow> {
        self.stop_spinner()?;
        let width = 56;
        let bar = "═".repeat(width);
        let label = format!("  CHECKPOINT: {title}");
        let pad = width.saturating_sub(label.chars().count());
        self.write(&format!(
            "\r\n╔{bar}╗\r\n║{label}{}║\r\n╚{bar}╝\r\n\r\n→ YOUR ACTION: {action}\r\n\r\nType \"approved\" or describe issues\r\n",
            " ".repeat(pad)
        ))?;
        self.write("\r\n✻ Churned for 1s\r\n")?;
        let Some(answer) = self.prompt()? else {
            return Ok(Flow::Eof);
        };
        self.write(&format!(
            "⏺ Checkpoint response: {}\r\n",
            printable(&answer)
        ))?;
        Ok(Flow::Continue)
    }
}

/// Menu rows with the cursor on the first option; a non-empty
/// `descriptions[i]` goes on the row under option `i`, under its label.
fn menu_rows(indent: &str, options: &[String], descriptions: &[String]) -> Vec<String> {
    let mut rows = Vec::new();
    for (i, o) in options.iter().enumerate() {
        let cursor = if i == 0 { "❯" } else { " " };
        let number = format!("{}.", i + 1);
        rows.push(format!("{indent}{cursor} {number} {o}"));
        if let Some(d) = descriptions.get(i).filter(|d| !d.is_empty()) {
            let pad = " ".repeat(indent.chars().count() + 2 + number.chars().count() + 1);
            rows.push(format!("{pad}{d}"));
        }
    }
    rows
}

/// `text` with control characters shown as `?`, so echoing user input can
/// never emit escape sequences.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawmux_pane::Pane;

    fn run(input: &str) -> String {
        let script = Script::parse(DEFAULT_SCRIPT).unwrap();
        let mut out = Vec::new();
        let options = SimOptions {
            speed: 100.0,
            cols: 40,
            tty: None,
        };
        SimAgent::new(script, input.as_bytes(), &mut out, options)
            .run()
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn echoes_input_literally_and_returns_to_idle() {
        let out = run("hello $(rm -rf) 'q' \"x\"\n");
        let mut pane = Pane::new(40, 20);
        pane.feed(out.as_bytes());
        let screen = pane.screen();
        assert!(
            screen.contains("● You said: hello $(rm -rf) 'q' \"x\""),
            "{screen}"
        );
        assert!(screen.contains("✻ Churned for 1s"), "{screen}");
        assert!(screen.ends_with("────\n  ? for shortcuts"), "{screen}");
    }

    #[test]
    fn permission_waits_for_a_key_and_erases_the_prompt() {
        let out = run("/gsd:plan-phase 2\n2");
        let mut pane = Pane::new(100, 40);
        pane.feed(out.as_bytes());
        let screen = pane.screen();
        assert!(!screen.contains("Do you want to proceed?"), "{screen}");
        assert!(
            screen.contains("⎿ \u{a0}Ran make build-check-phase-2: ok"),
            "{screen}"
        );
        assert!(!screen.contains("Waiting…"), "{screen}");
        assert!(screen.contains("Plans verified [3/3]"), "{screen}");
        // "No" stops the turn, as Claude Code does.
        let out = run("/gsd:plan-phase 2\n3");
        assert!(out.contains("Interrupted · What should Claude do instead?"));
        assert!(!out.contains("Plans verified"));
    }

    #[test]
    fn type_something_focuses_a_field_whose_words_are_the_answer() {
        let out = run("/gsd:discuss-phase 1\n3redis, please\n");
        let mut pane = Pane::new(100, 40);
        pane.feed(out.as_bytes());
        let screen = pane.screen();
        assert!(!screen.contains("Chat about this"), "{screen}");
        assert!(
            screen.contains("· Which scope should phase 1 cover? → redis, please"),
            "{screen}"
        );
        assert!(screen.contains("Context for phase 1 captured"), "{screen}");
        // The field is drawn with the cursor on its row.
        assert!(out.contains("❯ 3. Type something."), "{out}");
    }
}
