//! The repository explains itself: checks that its documents stay usable by someone who has
//! only the repository. No reference to a design document outside it remains, the README
//! stays short, and every relative link of the README and `docs/` (and its `#anchor`) leads
//! somewhere.

use std::path::{Path, PathBuf};

/// Trees and files searched for references to the outside design document.
const SEARCHED: &[&str] = &[
    "src",
    "assets",
    "tests",
    "scripts",
    "examples",
    "migrations",
    "packaging",
    "systemd",
    "docs",
    ".ci",
    "Cargo.toml",
    "README.md",
    "config.example.toml",
];

/// Documents written on other branches of this session that the README and `docs/design.md`
/// already link to; remove each entry once its file is on `main`.
const PENDING: &[&str] = &["docs/notifications.md", "docs/names.md"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .canonicalize()
        .unwrap()
}

/// Every file under `path` (or `path` itself), with its text; files that are not UTF-8
/// (images) are skipped.
fn texts(path: &Path, out: &mut Vec<(PathBuf, String)>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            texts(&entry.unwrap().path(), out);
        }
    } else if let Ok(text) = std::fs::read_to_string(path) {
        out.push((path.to_path_buf(), text));
    }
}

#[test]
fn no_reference_to_the_outside_design_document_remains() {
    // Spelled in two pieces so this file does not match itself.
    let needle = format!("{} {}", "DESIGN", "§");
    let mut files = Vec::new();
    for name in SEARCHED {
        texts(&root().join(name), &mut files);
    }
    assert!(files.len() > 100, "only {} files searched", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| {
            text.lines()
                .enumerate()
                .filter(|(_, line)| line.contains(&needle))
                .map(move |(n, _)| format!("{}:{}", path.display(), n + 1))
        })
        .collect();
    assert!(
        found.is_empty(),
        "refer to docs/ instead of \"{needle}\":\n{}",
        found.join("\n")
    );
}

#[test]
fn the_readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(lines <= 300, "README.md has {lines} lines; move detail into docs/");
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of the Markdown links `](target)` in `text`.
fn links(text: &str) -> Vec<String> {
    text.split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.to_owned()))
        .collect()
}

#[test]
fn relative_links_of_the_documents_lead_somewhere() {
    let mut documents = vec![root().join("README.md")];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            documents.push(path);
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in &documents {
        let text = std::fs::read_to_string(doc).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            let relative = target
                .canonicalize()
                .ok()
                .and_then(|t| t.strip_prefix(root()).ok().map(Path::to_path_buf));
            checked += 1;
            let pending = |t: &Path| PENDING.iter().any(|p| root().join(p) == t);
            match relative {
                None if pending(&doc.parent().unwrap().join(file)) => {}
                None => broken.push(format!("{}: {link} (no such file)", doc.display())),
                Some(_) if fragment.is_empty() || target.is_dir() => {}
                Some(_) => {
                    let text = std::fs::read_to_string(&target).unwrap_or_default();
                    if !anchors(&text).iter().any(|a| a == fragment) {
                        broken.push(format!("{}: {link} (no such heading)", doc.display()));
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}
