//! The repository explains itself: checks that its documents stay usable by someone who has
//! only the repository. No citation of a document outside it (the design notes and the
//! contract the project started from) remains, the README stays short, and every relative
//! link of the README and `docs/` (and its `#anchor`) leads somewhere.

use std::path::{Path, PathBuf};

/// Trees and files searched for citations of documents outside the repository.
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

/// Where `text` cites a numbered section ("§N") of the design document or the contract,
/// neither of which is in the repository, also when a comment wraps between the name and
/// the section: the 1-based line numbers.
fn outside_citations(text: &str) -> Vec<usize> {
    // Spelled in pieces so this file does not match itself.
    let names = [["DESIGN", " "].concat(), ["contract", " "].concat()];
    let section = "\u{a7}";
    let lines: Vec<&str> = text.lines().collect();
    let continued = |i: usize| {
        lines.get(i + 1).is_some_and(|next| {
            next.trim_start_matches(|c: char| c.is_whitespace() || "/!*#-".contains(c))
                .starts_with(section)
        })
    };
    (0..lines.len())
        .filter(|&i| {
            names.iter().any(|name| {
                lines[i].contains(&format!("{name}{section}"))
                    || (lines[i].trim_end().ends_with(name.trim_end()) && continued(i))
            })
        })
        .map(|i| i + 1)
        .collect()
}

#[test]
fn no_citation_of_a_document_outside_the_repository_remains() {
    let mut files = Vec::new();
    for name in SEARCHED {
        texts(&root().join(name), &mut files);
    }
    assert!(files.len() > 100, "only {} files searched", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|(path, text)| {
            outside_citations(text)
                .into_iter()
                .map(move |n| format!("{}:{n}", path.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "these cite sections of documents that are not in the repository; point to docs/ \
         instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn citations_are_found_across_a_wrapped_comment() {
    let design = ["DESIGN", " \u{a7}"].concat();
    assert_eq!(outside_citations(&format!("x // {design}13: y")), [1]);
    assert_eq!(
        outside_citations("//! costs: DESIGN\n//! \u{a7}17 wants it\n"),
        [1]
    );
    assert_eq!(outside_citations("a\n/// AI (contract \u{a7}5)"), [2]);
    assert!(outside_citations("RFC 8291 \u{a7}3.4; see docs/design.md").is_empty());
}

#[test]
fn the_readme_stays_short() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; move detail into docs/"
    );
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
            match relative {
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
