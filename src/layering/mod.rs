//! The direction of dependencies between the top-level modules, checked by a unit test
//! that reads every `crate::…` path in `src/`.
//!
//! Higher layers may use lower ones, never the reverse:
//! entry points (`main`, `lib`, `commands`, `http_server`) → `api` → `state` (the
//! composition root) → `workers` → `services` + `error` → `store`, `clients` → `crypto`,
//! `ratelimit` → the leaves `config`, `clock`, `events`. Modules on one layer may use each
//! other as long as no cycle forms. docs/design.md ("Code layout") describes them.
//!
//! One level down and further ([`inner`]): inside every folder, the files and subfolders
//! form no cycle either (`services/email/compose.rs` and `drafts.rs` may not use each
//! other), with no allowed exceptions.

mod inner;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layer of each top-level module; a module may use modules of its own or a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("main", 9),
    ("layering", 9),
    ("lib", 9),
    ("commands", 9),
    ("http_server", 9),
    ("api", 8),
    ("state", 7),
    ("workers", 6),
    ("services", 5),
    ("error", 5),
    ("store", 4),
    ("clients", 4),
    ("crypto", 3),
    ("ratelimit", 3),
    ("config", 2),
    ("clock", 2),
    ("events", 2),
    ("logging", 2),
    ("metrics", 2),
];

/// Upward uses still allowed, each with the reason: none. Services and workers reach the
/// shared resources through `services::Context`, never through `state`.
const KNOWN_UPWARD: &[(&str, &str)] = &[];

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, l)| *l)
        .unwrap_or_else(|| panic!("top-level module `{module}` has no layer in LAYERS"))
}

/// Every `(from, to, file)` use of one top-level module by another.
fn uses(src: &Path) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let from = rel
                .split('/')
                .next()
                .unwrap()
                .trim_end_matches(".rs")
                .to_owned();
            let text = strip_comments(&std::fs::read_to_string(&path).unwrap());
            for to in referenced_modules(&text) {
                if to != from {
                    found.push((from.clone(), to, rel.clone()));
                }
            }
        }
    }
    found
}

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            // A `//` inside a string (a URL) is rare in a `crate::` line; good enough.
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first segment after each `crate::`, including every item of `use crate::{a, b::c}`.
fn referenced_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for ch in group.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if ch == ',' && depth == 1 {
                    items.push(std::mem::take(&mut item));
                } else {
                    item.push(ch);
                }
            }
            items.push(item);
            for item in items {
                let name = ident(item.trim_start());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Top-level names that are items of `lib.rs` rather than modules (`crate::serve`).
fn is_module(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && LAYERS.iter().any(|(m, _)| *m == name)
}

#[test]
fn no_module_uses_a_module_of_a_higher_layer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut upward = BTreeSet::new();
    for (from, to, file) in uses(&src) {
        if !is_module(&to) || KNOWN_UPWARD.contains(&(from.as_str(), to.as_str())) {
            continue;
        }
        if layer(&to) > layer(&from) {
            upward.insert(format!(
                "{file}: `{from}` uses `crate::{to}` (a higher layer)"
            ));
        }
    }
    assert!(upward.is_empty(), "upward uses:\n{}", {
        let v: Vec<_> = upward.into_iter().collect();
        v.join("\n")
    });
}

#[test]
fn top_level_modules_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to, _) in uses(&src) {
        if is_module(&to) && !KNOWN_UPWARD.contains(&(from.as_str(), to.as_str())) {
            graph.entry(from).or_default().insert(to);
        }
    }
    if let Some(cycle) = inner::find_cycle(&graph) {
        panic!("import cycle: {}", cycle.join(" → "));
    }
}

#[test]
fn the_scanner_reads_grouped_and_inline_paths() {
    let text = "use crate::{api::x, store::{a, b}};\nlet y = crate::clock::unix_now();";
    let got: Vec<_> = referenced_modules(text).into_iter().collect();
    assert_eq!(got, ["api", "clock", "store"]);
}
