//! The root crate's modules form layers, and so do the bridge's: no
//! module reaches, through `crate::` (or `super::`) paths in its product
//! code, one that reaches it back. Crates cannot import each other in a
//! circle (cargo refuses it); modules of one crate can, and a circle there
//! is what keeps them from becoming crates of their own. Unit tests
//! (`#[cfg(test)] mod tests`, `tests.rs`) may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The references of each module directly under `dir` (the crate root's
/// `src/`, or `src/bridge/`, whose path is `within`: `""` or `"bridge::"`)
/// to its siblings, with a file that makes each one.
fn module_graph(dir: &Path, within: &str) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let modules: BTreeSet<String> = std::fs::read_dir(dir)
        .expect("the directory is readable")
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path.file_stem()?.to_str()?.to_string();
            let is_module = path.is_dir() || path.extension().is_some_and(|x| x == "rs");
            (is_module && !["lib", "main", "mod"].contains(&name.as_str())).then_some(name)
        })
        .collect();
    let mut graph = BTreeMap::new();
    for module in &modules {
        let mut edges = BTreeMap::new();
        for file in rust_files(&dir.join(module), &dir.join(format!("{module}.rs"))) {
            if file.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("a source file is readable");
            let code = product_code(&text);
            // `super::` as many times as the file is deep names `dir`.
            let up = "super::".repeat(module_depth(dir, &file));
            let prefixes = [format!("crate::{within}"), up];
            for target in prefixes.iter().flat_map(|p| references(&code, p)) {
                if target != *module && modules.contains(&target) {
                    edges.entry(target).or_insert_with(|| file.clone());
                }
            }
        }
        graph.insert(module.clone(), edges);
    }
    graph
}

/// How many modules deep `file` is under `dir` (`a.rs` and `a/mod.rs`: 1).
fn module_depth(dir: &Path, file: &Path) -> usize {
    let relative = file.strip_prefix(dir).unwrap_or(file);
    let parts = relative.components().count();
    if file.file_name().is_some_and(|n| n == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// A module's files: `file` (`a.rs`) if there is one, and every file
/// under `dir` (`a/mod.rs`, or `a/b.rs` beside `a.rs`).
fn rust_files(dir: &Path, file: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = file
        .is_file()
        .then(|| file.to_path_buf())
        .into_iter()
        .collect();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The text before a file's unit tests, without line comments (a doc
/// link is not a dependency). Unit tests in a file of their own (`mod
/// tests;`) are left out by the callers, which skip `tests.rs`.
fn product_code(text: &str) -> String {
    let code = text
        .split("#[cfg(test)]\nmod tests {")
        .next()
        .unwrap_or(text);
    code.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module names after each `prefix` (`crate::`, `super::super::`),
/// and inside a `prefix{…}` group.
fn references(code: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        (s.trim_start().chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    if prefix.is_empty() {
        return Vec::new();
    }
    code.match_indices(prefix)
        .filter(|(at, _)| {
            // `clawmux_crate::`, `$crate::` or a longer `super::` chain is
            // another path.
            !code[..*at].ends_with(|c: char| c.is_alphanumeric() || "_$:".contains(c))
        })
        .flat_map(|(at, m)| {
            let rest = &code[at + m.len()..];
            match rest.strip_prefix('{') {
                Some(group) => {
                    let group = group.split('}').next().unwrap_or("");
                    group.split(',').map(ident).collect()
                }
                None => vec![ident(rest)],
            }
        })
        .collect()
}

/// A circle through `start`, if any: the modules in order.
fn circle_through(
    graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
    start: &str,
) -> Option<Vec<String>> {
    let mut path = vec![start.to_string()];
    let mut seen = BTreeSet::new();
    fn walk(
        graph: &BTreeMap<String, BTreeMap<String, PathBuf>>,
        start: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        let Some(here) = path.last().cloned() else {
            return false;
        };
        for next in graph.get(&here).into_iter().flat_map(|e| e.keys()) {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(graph, start, &mut path, &mut seen).then_some(path)
}

/// The circles among the modules under `dir`, each as its steps and
/// the file that makes each step.
fn circles(dir: &Path, within: &str) -> Vec<String> {
    let graph = module_graph(dir, within);
    (graph.keys())
        .filter_map(|m| circle_through(&graph, m))
        .map(|circle| {
            let steps: Vec<String> = (circle.iter().zip(circle.iter().cycle().skip(1)))
                .map(|(from, to)| format!("{from} -> {to} ({})", graph[from][to].display()))
                .collect();
            steps.join(", ")
        })
        .collect()
}

#[test]
fn the_root_crates_modules_reach_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src, "");
    assert!(
        graph.get("bridge").is_some_and(|uses| !uses.is_empty()),
        "the reader finds what the bridge uses: {graph:?}"
    );
    let circles = circles(&src, "");
    assert!(circles.is_empty(), "modules in a circle: {circles:#?}");
}

/// The bridge's modules too: the names and texts at the bottom, then the
/// config, the panes, the project actors, the presenter, the channels,
/// the core and the daemon on top.
#[test]
fn the_bridges_modules_reach_each_other_one_way() {
    let bridge = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bridge");
    let graph = module_graph(&bridge, "bridge::");
    // Found through `crate::bridge::` and through `super::`.
    assert!(graph["channels"].contains_key("present"), "{graph:?}");
    assert!(graph["core"].contains_key("config"), "{graph:?}");
    let circles = circles(&bridge, "bridge::");
    assert!(circles.is_empty(), "modules in a circle: {circles:#?}");
}

/// Every crate's modules too.
#[test]
fn each_crates_modules_reach_each_other_one_way() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut found = Vec::new();
    let mut read = 0;
    for entry in std::fs::read_dir(&crates).expect("crates/ is readable") {
        let dir = entry.expect("a crate").path();
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        read += 1;
        for circle in circles(&dir.join("src"), "") {
            found.push(format!("{name}: {circle}"));
        }
    }
    assert!(read > 10, "the crates are found");
    assert!(found.is_empty(), "modules in a circle: {found:#?}");
}

#[test]
fn a_circle_is_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write("a/mod.rs", "use crate::b::X;\n");
    write(
        "b.rs",
        "// crate::c is only named\npub struct X(crate::c::Y);\n",
    );
    write(
        "c.rs",
        "pub struct Y;\n#[cfg(test)]\nmod tests {\n    use crate::a::Z;\n}\n",
    );
    let graph = module_graph(dir.path(), "");
    assert_eq!(circle_through(&graph, "a"), None, "{graph:?}");
    write("c.rs", "pub struct Y(crate::a::Z);\n");
    let graph = module_graph(dir.path(), "");
    assert_eq!(
        circle_through(&graph, "a"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
    // Through `super::` (as deep as the file is) and inside a group.
    write("c.rs", "pub struct Y;\nmod d;\n");
    write("c/d.rs", "use super::{b, Y};\n");
    assert_eq!(circle_through(&module_graph(dir.path(), ""), "a"), None);
    write("c/d.rs", "use super::super::{b, a::Z};\n");
    assert_eq!(
        circle_through(&module_graph(dir.path(), ""), "a"),
        Some(vec!["a".into(), "b".into(), "c".into()])
    );
}

/// The core is sans-IO: its product code names no file system, clock,
/// environment or process call (the shell passes times in and carries its
/// effects out). A name, not a use, would be enough to fail: then rename.
#[test]
fn the_core_touches_no_disk_clock_environment_or_process() {
    const FORBIDDEN: [&str; 11] = [
        "std::fs",
        "tokio::fs",
        "std::env",
        "std::process",
        "tokio::process",
        "Instant::now",
        "SystemTime",
        "clock::now",
        "canonicalize",
        "create_dir",
        "TimeZone::system",
    ];
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bridge/core");
    let files = rust_files(&core, &core.with_extension("rs"));
    assert!(files.len() > 5, "the core's files are found: {files:?}");
    let mut found = Vec::new();
    for file in files {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file is readable");
        let code = product_code(&text);
        for name in FORBIDDEN.iter().filter(|name| code.contains(**name)) {
            found.push(format!("{}: {name}", file.display()));
        }
    }
    assert!(found.is_empty(), "the core does I/O: {found:#?}");
}
