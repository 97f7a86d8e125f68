//! The OpenClaw skill: `skill/SKILL.md` has frontmatter OpenClaw's embedded
//! parser accepts, triggers on every GSD command it documents, and every
//! `clawmux` command line in it (and in `skill/README.md`) names only
//! subcommands, flags and values the built binary has.

use std::collections::BTreeMap;

use clawmux::bridge::router::{self, Route};
use serde_json::Value;

use super::{clawmux, repo_file, stderr, stdout};

/// The main GSD commands (as GSD releases name them): the skill must document each, as
/// well as clawmux's own built-ins.
const GSD_COMMANDS: [&str; 17] = [
    "new-project",
    "discuss-phase",
    "plan-phase",
    "execute-phase",
    "verify-work",
    "ship",
    "progress",
    "quick",
    "help",
    "map-codebase",
    "pause-work",
    "resume-work",
    "autonomous",
    "settings",
    "debug",
    "health",
    "stats",
];

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_file(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Splits `---`-delimited frontmatter into flat `key: value` pairs, the only
/// form OpenClaw's embedded parser reads (nested YAML is not supported, so
/// `metadata` is one line of JSON).
fn frontmatter(text: &str) -> (BTreeMap<String, String>, &str) {
    let rest = text
        .strip_prefix("---\n")
        .expect("SKILL.md starts with ---");
    let end = rest.find("\n---\n").expect("frontmatter ends with ---");
    let mut fields = BTreeMap::new();
    for line in rest[..end].lines() {
        let (key, value) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("not a flat `key: value` line: {line:?}"));
        assert!(
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "bad key {key:?}"
        );
        assert!(
            fields.insert(key.to_owned(), value.to_owned()).is_none(),
            "duplicate key {key}"
        );
    }
    (fields, &rest[end + 5..])
}

/// A YAML plain scalar that reads back as exactly this text.
fn assert_plain_yaml_scalar(key: &str, value: &str) {
    assert!(!value.is_empty(), "{key} is empty");
    assert!(
        !value.starts_with(|c| "-?:,[]{}#&*!|>'\"%@`".contains(c)),
        "{key} starts with a YAML indicator"
    );
    assert!(
        !value.contains(": ") && !value.contains(" #"),
        "{key} would not parse as one plain YAML scalar"
    );
}

#[test]
fn frontmatter_is_valid_and_declares_name_triggers_and_binary() {
    let text = read("skill/SKILL.md");
    let (fields, body) = frontmatter(&text);
    assert_eq!(
        fields.keys().map(String::as_str).collect::<Vec<_>>(),
        ["description", "metadata", "name"]
    );
    assert_eq!(fields["name"], "gsd-openclaw");

    let description = &fields["description"];
    assert_plain_yaml_scalar("description", description);
    assert!(
        description.contains("/gsd:") && description.contains("/gsd-"),
        "{description}"
    );
    let table: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
        .filter(|m| m.starts_with("/gsd:"))
        .collect();
    let names: Vec<&str> = table
        .iter()
        .filter_map(|m| clawmux::gsd::spelling::gsd_name(m))
        .collect();
    for name in GSD_COMMANDS.iter().chain(router::BUILTINS) {
        assert!(
            names.contains(name),
            "/gsd:{name} missing from the command tables"
        );
    }
    // Every GSD command the skill names is one GSD really has (the tested
    // release's 67): no name a release dropped (`next`, `add-todo`).
    let mentioned = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == ':' || c == '/'))
        .chain(description.split([' ', ',']))
        .filter_map(clawmux::gsd::spelling::gsd_name)
        .filter(|n| {
            !router::BUILTINS.contains(n) && n.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        });
    for name in mentioned {
        assert!(
            clawmux::gsd::COMMANDS_1_42_3.contains(&name),
            "/gsd:{name} is not a GSD {} command",
            clawmux::gsd::TESTED_VERSION
        );
    }
    for name in &names {
        assert!(
            description.contains(&format!("/gsd:{name},"))
                || description.contains(&format!("/gsd:{name} ")),
            "the description does not trigger on /gsd:{name}"
        );
    }
    // Each documented message, with its placeholders filled in, is one
    // clawmux knows: a built-in or a command for the agent.
    for message in table {
        let filled = fill_placeholders(message);
        match router::route(&filled) {
            Route::Builtin(_) | Route::Agent(_) => {}
            other => panic!("{message} ({filled}) routes to {other:?}"),
        }
    }

    let metadata: Value =
        serde_json::from_str(&fields["metadata"]).expect("metadata is one line of JSON");
    let bins = metadata["openclaw"]["requires"]["bins"]
        .as_array()
        .expect("metadata.openclaw.requires.bins");
    // OpenClaw marks the skill ready only when every binary it names is
    // installed: clawmux runs nothing without tmux.
    for bin in ["clawmux", "tmux"] {
        assert!(bins.iter().any(|b| b == bin), "{bin} in {bins:?}");
    }
}

/// `/gsd:plan-phase <N> [x]` -> `/gsd:plan-phase value`.
fn fill_placeholders(message: &str) -> String {
    message
        .split_whitespace()
        .filter(|w| !w.starts_with('['))
        .map(|w| if w.starts_with('<') { "value" } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Splits one shell command line into words: quotes are honoured, and the
/// line ends at a comment or a shell operator.
pub(super) fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                let w = word.get_or_insert_with(String::new);
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    w.push(q);
                }
            }
            '#' if word.is_none() => break,
            '|' | ';' | '&' | '<' | '>' | ')' | '`' => break,
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Every `clawmux …` command line in the code blocks and inline code of a
/// markdown file.
fn clawmux_lines(markdown: &str) -> Vec<Vec<String>> {
    let mut code = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if in_block {
            code.push(line.to_owned());
        } else {
            code.extend(line.split('`').skip(1).step_by(2).map(str::to_owned));
        }
    }
    let mut commands = Vec::new();
    for line in code {
        let words = shell_words(&line);
        for (i, w) in words.iter().enumerate() {
            if w == "clawmux" && words.get(i + 1).is_some() {
                commands.push(words[i + 1..].to_vec());
            }
        }
    }
    commands
}

fn help(path: &[&str]) -> String {
    let mut args = path.to_vec();
    args.push("--help");
    let out = clawmux(&args).output().expect("run clawmux");
    assert!(
        out.status.success(),
        "clawmux {}: {}",
        args.join(" "),
        stderr(&out)
    );
    stdout(&out)
}

/// The subcommand names listed under `Commands:` in a help text.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:\n")
        .nth(1)
        .map(|section| {
            section
                .lines()
                .take_while(|l| !l.trim().is_empty())
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `flag` appears in `help` as a flag of its own (not a prefix).
fn help_has_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == ',' || c == '[')
            && after.is_none_or(|c| c.is_whitespace() || c == '=' || c == ']' || c == ',')
    })
}

/// The values clap lists for `flag` in `--help`: the `Possible values:`
/// block (`- name: doc` lines) or a `[possible values: a, b]` line.
fn possible_values(help: &str, flag: &str) -> Option<Vec<String>> {
    let mut lines = help.lines().skip_while(|l| !help_has_flag(l, flag));
    lines.next()?;
    let block: Vec<&str> = lines
        .take_while(|l| !l.trim_start().starts_with('-') || l.trim_start().starts_with("- "))
        .collect();
    if let Some(list) = block
        .iter()
        .find_map(|l| l.split("[possible values: ").nth(1))
    {
        return Some(
            list.trim_end_matches(']')
                .split(", ")
                .map(str::to_owned)
                .collect(),
        );
    }
    let values: Vec<String> = block
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix("- ")?.split(':').next())
        .map(str::to_owned)
        .collect();
    (!values.is_empty()).then_some(values)
}

pub(super) fn check_command_line(words: &[String]) -> String {
    let shown = format!("clawmux {}", words.join(" "));
    let mut path: Vec<&str> = Vec::new();
    let mut rest = words;
    if let Some(first) = rest.first().filter(|w| !w.starts_with('-')) {
        path.push(first);
        rest = &rest[1..];
        if let Some(second) = rest.first()
            && subcommands(&help(&path)).contains(second)
        {
            path.push(second);
            rest = &rest[1..];
        }
    }
    let help = help(&path);
    let mut i = 0;
    while i < rest.len() {
        let word = rest[i].as_str();
        if word == "--" {
            assert_eq!(
                rest.len() - i - 1,
                1,
                "{shown}: the message after -- must be one quoted argument"
            );
            break;
        }
        if word.starts_with('-') {
            let flag = word.split('=').next().unwrap_or(word);
            assert!(
                help_has_flag(&help, flag),
                "{shown}: `clawmux {} --help` has no {flag}",
                path.join(" ")
            );
            if let (Some(values), Some(value)) = (possible_values(&help, flag), rest.get(i + 1)) {
                assert!(
                    values.contains(value),
                    "{shown}: {flag} {value} is not one of {values:?}"
                );
            }
        }
        i += 1;
    }
    path.join(" ")
}

#[test]
fn every_clawmux_command_in_the_skill_exists_as_written() {
    let mut checked = Vec::new();
    for file in ["skill/SKILL.md", "skill/README.md"] {
        let lines = clawmux_lines(&read(file));
        assert!(!lines.is_empty(), "{file} names no clawmux command");
        for words in lines {
            checked.push(check_command_line(&words));
        }
    }
    for expected in ["run", "serve", "hooks install", "prompt"] {
        assert!(
            checked.iter().any(|c| c == expected),
            "no `clawmux {expected}` checked: {checked:?}"
        );
    }
}

#[test]
fn the_checker_rejects_what_does_not_exist() {
    let words = |s: &str| shell_words(s);
    for bad in [
        "run --project p --colour red -- '/gsd:help'",
        "run --project p --format html -- '/gsd:help'",
        "run --project p -- /gsd:plan-phase 2",
        "hooks install --writ",
    ] {
        let caught = std::panic::catch_unwind(|| check_command_line(&words(bad)));
        assert!(caught.is_err(), "accepted: {bad}");
    }
    assert_eq!(
        words("run --project 'my app' -- \"it is\" # note"),
        ["run", "--project", "my app", "--", "it is"]
    );
}
