//! No cycle inside any folder: for every module folder (`services/`, `services/email/`,
//! `workers/sync/`, …), the uses between its children (files and subfolders) form no
//! cycle. A use is every `crate::…`, `super::…` path a file names (groups expanded),
//! resolved to the module it points into; a child using its own parent or a parent using
//! its own child is ownership, not a sibling dependency, and is not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Segments = Vec<String>;

/// The module path of a file under `src/`: `services/push/queue.rs` → `services::push::queue`,
/// a `mod.rs` → its folder's module, `lib.rs`/`main.rs` → the crate root.
fn module_path(rel: &Path) -> Segments {
    let mut segs: Segments = rel
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        segs.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        segs.pop();
    }
    segs
}

fn ident_at(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// Expands one use tree (`a::b`, `a::{b, c::{d}}`, `a::b as c`) after its base, returning
/// each full path and the rest of the text.
fn tree<'a>(base: &Segments, mut s: &'a str, out: &mut Vec<Segments>) -> &'a str {
    let mut path = base.clone();
    loop {
        s = s.trim_start();
        if let Some(group) = s.strip_prefix('{') {
            s = group;
            loop {
                s = tree(&path, s, out).trim_start();
                match s.chars().next() {
                    Some(',') => s = &s[1..],
                    Some('}') => return &s[1..],
                    _ => return s,
                }
                if s.trim_start().starts_with('}') {
                    return &s.trim_start()[1..];
                }
            }
        }
        let (id, rest) = ident_at(s);
        if id.is_empty() || id == "self" {
            out.push(path);
            return if id == "self" { rest } else { s };
        }
        path.push(id.to_owned());
        match rest.strip_prefix("::") {
            Some(more) => s = more,
            None => {
                out.push(path);
                return rest;
            }
        }
    }
}

/// Every absolute path a file of module `own` names through `crate::` or `super::`.
fn referenced_paths(text: &str, own: &Segments) -> Vec<Segments> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let at_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        let rest = &text[i..];
        if at_word && rest.starts_with("crate::") {
            let after = tree(&Vec::new(), &rest["crate::".len()..], &mut out);
            i = text.len() - after.len();
        } else if at_word && rest.starts_with("super::") {
            let mut base = own.clone();
            let mut r = rest;
            while let Some(more) = r.strip_prefix("super::") {
                base.pop();
                r = more;
            }
            let after = tree(&base, r, &mut out);
            i = text.len() - after.len();
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

fn is_module(src: &Path, segs: &[String]) -> bool {
    let mut p: PathBuf = src.to_path_buf();
    p.extend(segs);
    segs.is_empty() || p.with_extension("rs").is_file() || p.join("mod.rs").is_file()
}

/// Sibling uses by folder: `folder → {child → {children it uses}}`.
fn sibling_uses(src: &Path) -> BTreeMap<Segments, BTreeMap<String, BTreeSet<String>>> {
    let mut graphs: BTreeMap<Segments, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
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
            let own = module_path(path.strip_prefix(src).unwrap());
            let text = super::strip_comments(&std::fs::read_to_string(&path).unwrap());
            for mut target in referenced_paths(&text, &own) {
                while !is_module(src, &target) {
                    target.pop();
                }
                let common = own.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if common == own.len() || common == target.len() {
                    continue; // the file's own module, an ancestor or a descendant
                }
                graphs
                    .entry(own[..common].to_vec())
                    .or_default()
                    .entry(own[common].clone())
                    .or_default()
                    .insert(target[common].clone());
            }
        }
    }
    graphs
}

/// A cycle of `graph` (depth-first: a node met again while still on the path closes one).
pub(super) fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_folder_has_a_cycle_among_its_children() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let cycles: Vec<String> = sibling_uses(&src)
        .iter()
        .filter_map(|(folder, graph)| {
            find_cycle(graph).map(|c| format!("inside `{}`: {}", folder.join("/"), c.join(" → ")))
        })
        .collect();
    assert!(cycles.is_empty(), "cycles:\n{}", cycles.join("\n"));
}

#[test]
fn paths_resolve_through_groups_and_super() {
    let own: Segments = ["services", "email", "compose"].map(String::from).to_vec();
    let text = "use super::{drafts::draft_id, outbox};\nuse crate::{store::{a, b::c}, clock};\nlet x = super::super::keys::f();";
    let got: BTreeSet<String> = referenced_paths(text, &own)
        .into_iter()
        .map(|p| p.join("::"))
        .collect();
    let want: BTreeSet<String> = [
        "services::email::drafts::draft_id",
        "services::email::outbox",
        "store::a",
        "store::b::c",
        "clock",
        "services::keys::f",
    ]
    .map(String::from)
    .into();
    assert_eq!(got, want);
}

#[test]
fn a_sibling_cycle_is_found_and_ownership_is_not_one() {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&g), None);
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(find_cycle(&g).unwrap().len(), 4);
    let own: Segments = ["services", "push", "queue"].map(String::from).to_vec();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert!(
        is_module(&src, &own)
            && !is_module(&src, &["services".into(), "push".into(), "now_ms".into()])
    );
}
