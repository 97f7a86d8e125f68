//! The OpenSpec delta reader and lint on arbitrary bytes (decoded lossily,
//! as the lint reads files): never panics, and every line it reports is
//! within the file. Runs the delta reader, body extraction, scenario
//! counting and main-spec parsing on every block (as the module's
//! proptest), then the whole `lint_change` on a change folder whose delta
//! spec and tasks.md hold the text and whose main spec holds the part
//! after the first NUL byte (the whole text when there is none).
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use clawmux::openspec::delta::{
    count_empty_scenarios, count_scenarios, main_spec_requirements, parse_delta_spec,
    requirement_body, scenario_names,
};
use clawmux::openspec::lint::lint_change;
use libfuzzer_sys::fuzz_target;

const SLUG: &str = "fz";

/// A project root of our own for the process (rewritten by every input).
static ROOT: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = std::env::temp_dir().join(format!("clawmux-fuzz-lint-{}", std::process::id()));
    for dir in ["openspec/changes/fz/specs/cap", "openspec/specs/cap"] {
        std::fs::create_dir_all(root.join(dir)).expect("create fuzz project");
    }
    root
});

/// Lines as the delta reader numbers them (BOM dropped, CR LF and CR are
/// line ends).
fn line_count(text: &str) -> usize {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .split('\n')
        .count()
}

fn check_reader(text: &str) {
    let lines = line_count(text);
    let in_range = |l: usize| (1..=lines).contains(&l);
    let plan = parse_delta_spec(text);
    for b in plan.added.iter().chain(&plan.modified) {
        assert!(in_range(b.line), "block at line {}", b.line);
        let _ = requirement_body(&b.raw);
        // Every `#### ` header is a scenario that counts or an empty one.
        let headers = scenario_names(&b.raw).len();
        assert_eq!(
            count_scenarios(&b.raw) + count_empty_scenarios(&b.raw),
            headers
        );
    }
    assert!(plan.removed.iter().all(|r| in_range(r.line)));
    assert!(plan.renamed.iter().all(|r| in_range(r.line)));
    assert!(plan.unpaired_renames.iter().all(|r| in_range(r.line)));
    assert!(plan.orphaned.iter().all(|o| in_range(o.line)));
    assert!(plan.skipped_headers.iter().all(|s| in_range(s.line)));
    assert!(plan.section_lines.iter().flatten().all(|l| in_range(*l)));
    for b in main_spec_requirements(text) {
        assert!(in_range(b.line), "main spec block at line {}", b.line);
        let _ = (requirement_body(&b.raw), count_scenarios(&b.raw));
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (delta, main) = match text.split_once('\0') {
        Some((delta, main)) => (delta, main),
        None => (&*text, &*text),
    };
    check_reader(delta);
    check_reader(main);

    let root = &*ROOT;
    let change = root.join("openspec/changes").join(SLUG);
    let write = |path: PathBuf, text: &str| std::fs::write(path, text).expect("write fuzz file");
    write(change.join("specs/cap/spec.md"), delta);
    write(change.join("tasks.md"), delta);
    write(root.join("openspec/specs/cap/spec.md"), main);
    let report = lint_change(root, SLUG, true).expect("the change folder exists");
    let lines = line_count(delta).max(line_count(main));
    for issue in &report.issues {
        if let Some(line) = issue.line {
            assert!(
                (1..=lines).contains(&line),
                "{issue:?} outside {lines} lines"
            );
        }
    }
});
