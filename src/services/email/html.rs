//! Sanitising the HTML body of a mail before any client sees it (ammonia: an allowlist
//! of tags, attributes and URL schemes over html5ever, the parser browsers' rules follow).
//!
//! Clients may render `html`, so what a sender wrote must not run there: scripts, event
//! handlers, `javascript:`/`data:` URLs, forms, frames, objects and `<style>` blocks are
//! removed, and inline styles keep only typographic and box properties (no positioning,
//! nothing that loads a URL). Links get `rel="noopener noreferrer"`. Remote images stay
//! (`<img src="https://…">`): loading them tells the sender that the mail was opened, so
//! clients should load them only when the user asks. Done when a message is read, so mail
//! cached before this rule came in is served sanitised too.

use std::collections::HashSet;
use std::sync::LazyLock;

/// CSS properties an inline `style` may keep.
const STYLE_PROPERTIES: &[&str] = &[
    "color",
    "background-color",
    "font",
    "font-family",
    "font-size",
    "font-style",
    "font-weight",
    "line-height",
    "letter-spacing",
    "text-align",
    "text-decoration",
    "text-indent",
    "text-transform",
    "vertical-align",
    "white-space",
    "width",
    "max-width",
    "min-width",
    "height",
    "margin",
    "margin-top",
    "margin-right",
    "margin-bottom",
    "margin-left",
    "padding",
    "padding-top",
    "padding-right",
    "padding-bottom",
    "padding-left",
    "border",
    "border-top",
    "border-right",
    "border-bottom",
    "border-left",
    "border-color",
    "border-style",
    "border-width",
    "border-collapse",
    "border-spacing",
    "border-radius",
];

static CLEANER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    let mut b = ammonia::Builder::default();
    b.add_generic_attributes([
        "style",
        "dir",
        "align",
        "valign",
        "bgcolor",
        "width",
        "height",
        "border",
        "cellpadding",
        "cellspacing",
    ])
    .filter_style_properties(STYLE_PROPERTIES.iter().copied().collect::<HashSet<_>>())
    .url_schemes(["http", "https", "mailto", "tel"].into_iter().collect())
    .link_rel(Some("noopener noreferrer"))
    // A relative URL resolves against wherever the client shows the mail (the app's own
    // origin, its API): denied, links and images keep only absolute URLs.
    .url_relative(ammonia::UrlRelative::Deny);
    b
});

/// The mail's HTML with everything that could run or phone home removed (see above).
pub fn sanitize(html: &str) -> String {
    CLEANER.clean(html).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_handlers_and_dangerous_urls_are_removed() {
        let out = sanitize(
            r#"<p onclick="x()" style="color: red; position: fixed">Hi <b>you</b></p>
<script>alert(1)</script><a href="javascript:alert(2)">a</a><a href="https://e.org/">b</a>
<img src="https://e.org/i.png" onerror="alert(3)"><img src="data:image/png;base64,AAAA">
<form><input></form><iframe src="https://e.org"></iframe><style>p{}</style>"#,
        );
        for gone in [
            "onclick",
            "position",
            "<script",
            "alert",
            "javascript",
            "data:",
            "<form",
            "<input",
            "<iframe",
            "<style",
        ] {
            assert!(!out.contains(gone), "{gone}: {out}");
        }
        for kept in [
            "color:red",
            "Hi <b>you</b>",
            r#"href="https://e.org/""#,
            r#"src="https://e.org/i.png""#,
            "noopener",
        ] {
            assert!(
                out.replace("color: red", "color:red").contains(kept),
                "{kept}: {out}"
            );
        }
    }

    #[test]
    fn relative_urls_are_removed() {
        let out = sanitize(
            r#"<a href="/api/keys">k</a><a href="../x">x</a><img src="//evil.example/i.png"><a href="https://e.org/ok">ok</a>"#,
        );
        assert!(!out.contains("/api/keys"), "{out}");
        assert!(!out.contains("../x"), "{out}");
        assert!(!out.contains("//evil.example"), "{out}");
        assert!(out.contains("https://e.org/ok"), "{out}");
    }
}
