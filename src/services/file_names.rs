//! The name an uploaded file is kept and sent under (chat media and mail attachments), made
//! from whatever name the client gave: never a path, never a control character.

/// Longest file name kept, in characters.
pub const MAX_CHARS: usize = 255;

/// The last path segment of `name` (after a `/` or a `\`), control characters dropped, at
/// most [`MAX_CHARS`], trimmed; `fallback` when nothing usable is left (nothing, `.`, `..`).
pub fn clean(name: Option<&str>, fallback: &str) -> String {
    let base = name
        .unwrap_or_default()
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CHARS)
        .collect();
    match cleaned.trim() {
        "" | "." | ".." => fallback.to_owned(),
        t => t.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_control_characters_go() {
        assert_eq!(clean(Some("../../etc/passwd"), "file"), "passwd");
        assert_eq!(clean(Some("C:\\docs\\a\r\nb.pdf"), "file"), "ab.pdf");
        assert_eq!(clean(Some("dir/.."), "file"), "file");
        assert_eq!(clean(Some(" \u{0} "), "attachment"), "attachment");
        assert_eq!(clean(None, "attachment"), "attachment");
        assert_eq!(
            clean(Some(&"x".repeat(300)), "file").chars().count(),
            MAX_CHARS
        );
    }
}
