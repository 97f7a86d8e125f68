//! The change's `.openspec.yaml` as far as validation needs it: whether the
//! `skip_specs` marker is honoured (OpenSpec 1.13 `readSkipSpecsMarker`) and
//! which workflow schema the change uses. Reads the flat `key: value` form
//! `openspec new change` writes (plus indented continuation lines, kept as
//! opaque values); anything it cannot read is reported, never guessed.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::text::{js_regex, js_trim};

/// The metadata file inside a change folder.
pub const METADATA_FILENAME: &str = ".openspec.yaml";
/// The one workflow schema the OpenSpec package ships.
pub const BUILT_IN_SCHEMA: &str = "spec-driven";

static KEY_LINE: LazyLock<Regex> = LazyLock::new(|| {
    js_regex(r#"^(['"]?)([A-Za-z_][A-Za-z0-9_-]*)(['"]?):(?:[ \t]+(.*?))?[ \t]*$"#)
});
static MENTIONS_SKIP: LazyLock<Regex> =
    LazyLock::new(|| js_regex(r#"(?m)^{WS}*(['"]?)skip_specs['"]?{WS}*:"#));
static DATE: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^\d{4}-\d{2}-\d{2}$"));

/// A scalar as YAML 1.2's core schema types it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Bool(bool),
    Null,
    Number,
    Str(String),
    /// Indented content (a list or a map) we do not interpret.
    Nested,
}

/// What the `skip_specs` marker means for validation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SkipSpecs {
    pub declared: bool,
    /// Set when the marker is present but cannot be honoured, with why.
    pub invalid: Option<String>,
}

fn scalar(raw: &str) -> Value {
    let raw = match raw.find(" #") {
        Some(at) if !raw.starts_with(['"', '\'']) => raw[..at].trim_end(),
        _ => raw,
    };
    match raw {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ if raw.parse::<f64>().is_ok() && !raw.starts_with(['+', '.']) => Value::Number,
        _ if raw.len() >= 2
            && ((raw.starts_with('"') && raw.ends_with('"'))
                || (raw.starts_with('\'') && raw.ends_with('\''))) =>
        {
            Value::Str(raw[1..raw.len() - 1].to_string())
        }
        _ => Value::Str(raw.to_string()),
    }
}

/// Parses the flat metadata; `None` when a line is outside what we read.
fn parse(raw: &str) -> Option<Vec<(String, Value)>> {
    let mut out: Vec<(String, Value)> = Vec::new();
    for line in raw.lines() {
        let trimmed = js_trim(line);
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed == "---" {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            let last = out.last_mut()?;
            if last.1 != Value::Null && last.1 != Value::Nested {
                return None;
            }
            last.1 = Value::Nested;
            continue;
        }
        let c = KEY_LINE.captures(line)?;
        if c[1] != c[3] {
            return None;
        }
        out.push((
            c[2].to_string(),
            scalar(c.get(4).map_or("", |m| m.as_str())),
        ));
    }
    Some(out)
}

fn get<'a>(fields: &'a [(String, Value)], key: &str) -> Option<&'a Value> {
    fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Whether `name` is a schema OpenSpec can resolve for this project: the
/// built-in one or a project-local `openspec/schemas/<name>/schema.yaml`.
fn schema_exists(root: &Path, name: &str) -> bool {
    name == BUILT_IN_SCHEMA
        || root
            .join("openspec/schemas")
            .join(name)
            .join("schema.yaml")
            .is_file()
}

/// The first reason the metadata would fail OpenSpec's schema check.
fn schema_problem(fields: &[(String, Value)]) -> Option<String> {
    match get(fields, "schema") {
        Some(Value::Str(s)) if !s.is_empty() => {}
        Some(Value::Str(_)) => return Some("schema: schema is required".into()),
        _ => return Some("schema: Invalid input: expected string".into()),
    }
    if let Some(v) = get(fields, "created")
        && !matches!(v, Value::Str(s) if DATE.is_match(s))
    {
        return Some("created: created must be YYYY-MM-DD format".into());
    }
    for key in ["skip_specs", "retire_capabilities"] {
        if let Some(v) = get(fields, key)
            && !matches!(v, Value::Bool(_))
        {
            return Some(format!("{key}: Invalid input: expected boolean"));
        }
    }
    None
}

/// Reads the `skip_specs` marker of the change at `change_dir`.
pub fn skip_specs(change_dir: &Path, root: &Path) -> SkipSpecs {
    let raw = match std::fs::read(change_dir.join(METADATA_FILENAME)) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return SkipSpecs::default(),
        Err(e) => return unhonorable(&format!("the metadata file cannot be read ({e})")),
    };
    let Some(fields) = parse(&raw) else {
        return if MENTIONS_SKIP.is_match(&raw) {
            unhonorable(
                "clawmux reads flat `key: value` metadata only; this file is not in that form",
            )
        } else {
            SkipSpecs::default()
        };
    };
    let marker = get(&fields, "skip_specs");
    match schema_problem(&fields) {
        None if marker == Some(&Value::Bool(true)) => {
            let Some(Value::Str(schema)) = get(&fields, "schema") else {
                return SkipSpecs::default();
            };
            if schema_exists(root, schema) {
                SkipSpecs {
                    declared: true,
                    invalid: None,
                }
            } else {
                unhonorable(&format!("schema: unknown schema '{schema}'"))
            }
        }
        None => SkipSpecs::default(),
        Some(problem) if marker.is_some() && marker != Some(&Value::Bool(false)) => {
            unhonorable(&problem)
        }
        Some(_) => SkipSpecs::default(),
    }
}

fn unhonorable(reason: &str) -> SkipSpecs {
    let safe: String = reason
        .chars()
        .map(|c| {
            if c.is_control() && (c as u32) < 0x80 {
                '?'
            } else {
                c
            }
        })
        .collect();
    SkipSpecs {
        declared: false,
        invalid: Some(safe),
    }
}

/// The workflow schema of the change (metadata, then `openspec/config.yaml`,
/// then the default), or `None` when the metadata is unreadable (OpenSpec
/// then skips its schema-specific task checks).
pub fn change_schema(change_dir: &Path, root: &Path) -> Option<String> {
    let read = |p: &Path| {
        std::fs::read(p)
            .ok()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    if let Some(raw) = read(&change_dir.join(METADATA_FILENAME)) {
        let fields = parse(&raw)?;
        if schema_problem(&fields).is_some() {
            return None;
        }
        let Some(Value::Str(schema)) = get(&fields, "schema") else {
            return None;
        };
        return schema_exists(root, schema).then(|| schema.clone());
    }
    let config = read(&root.join("openspec/config.yaml")).and_then(|raw| parse(&raw));
    match config.as_deref().and_then(|f| get(f, "schema")) {
        Some(Value::Str(s)) if !s.is_empty() => Some(s.clone()),
        _ => Some(BUILT_IN_SCHEMA.to_string()),
    }
}

/// Whether the change runs OpenSpec's own `spec-driven` schema (not a
/// project-local copy under the same name), whose `tasks.md` template the
/// numbering check is written for.
pub fn uses_built_in_schema(change_dir: &Path, root: &Path) -> bool {
    change_schema(change_dir, root).as_deref() == Some(BUILT_IN_SCHEMA)
        && !root.join("openspec/schemas").join(BUILT_IN_SCHEMA).is_dir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_generated_metadata() {
        let fields = parse("schema: spec-driven\ncreated: 2026-11-29\nskip_specs: true\n");
        let fields = fields.unwrap_or_default();
        assert_eq!(get(&fields, "skip_specs"), Some(&Value::Bool(true)));
        assert_eq!(schema_problem(&fields), None);
    }

    #[test]
    fn a_non_boolean_marker_is_a_problem() {
        let fields = parse("schema: spec-driven\nskip_specs: yes\n").unwrap_or_default();
        assert!(schema_problem(&fields).is_some_and(|p| p.starts_with("skip_specs")));
    }

    #[test]
    fn lists_are_kept_opaque() {
        let fields = parse("schema: x\naffected_areas:\n  - a\n").unwrap_or_default();
        assert_eq!(get(&fields, "affected_areas"), Some(&Value::Nested));
    }
}
