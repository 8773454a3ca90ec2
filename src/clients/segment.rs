//! Path segments of outgoing calls, in one place for every client (the bridges'
//! provisioning APIs, the homeserver's media repository and client API).
//!
//! A value put into a URL path is percent-encoded, but encoding cannot make `.` or `..`
//! harmless: URL parsers (reqwest's `url`, the WHATWG rules) resolve those segments, and
//! their encoded forms `%2e`/`%2E` too, so `loginId: ".."` would turn
//! `/v3/logout/{loginId}` into `/v3/logout/..` → `/v3/`, and `mxc://../config` the media
//! download into `/_matrix/client/v1/media/config`. [`segment`] therefore refuses such a
//! value (and an empty one, an overlong one, or one with control characters) before any
//! call is made, naming the field; services report it as 400 `invalid_request`.

/// A value that cannot be one path segment; the message is `"<field>: <reason>"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct InvalidSegment {
    pub field: String,
    pub reason: &'static str,
}

/// Longest value accepted as one segment (Matrix ids are at most 255 bytes; bridge login
/// and step ids are short).
pub const MAX_SEGMENT_BYTES: usize = 1024;

/// Checks that `value` (the API field `field`) can be one path segment: not empty, not
/// `.` or `..`, at most [`MAX_SEGMENT_BYTES`], no control characters.
pub fn check(field: &str, value: &str) -> Result<(), InvalidSegment> {
    let refuse = |reason| {
        Err(InvalidSegment {
            field: field.to_owned(),
            reason,
        })
    };
    if value.is_empty() {
        return refuse("must not be empty");
    }
    if value == "." || value == ".." {
        return refuse("must not be \".\" or \"..\" (a dot path segment)");
    }
    if value.len() > MAX_SEGMENT_BYTES {
        return refuse("too long (at most 1024 bytes)");
    }
    if value.chars().any(char::is_control) {
        return refuse("must not contain control characters");
    }
    Ok(())
}

/// `value` checked by [`check`] and percent-encoded as one path segment.
pub fn segment(field: &str, value: &str) -> Result<String, InvalidSegment> {
    check(field, value)?;
    Ok(encode(value))
}

/// Percent-encodes one path segment (room ids contain `!` and `:`). Only unreserved
/// characters stay; `%` itself is encoded, so the result never holds `%2e`. The caller
/// makes sure the value is not `.` or `..` ([`segment`] does); values with a sigil (room,
/// event and user ids) cannot be.
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Backstop for a path already assembled from segments: refuses one that still holds a
/// dot segment (`.`, `..`, in any `%2e` spelling), so no call built without [`segment`]
/// can be steered either. Empty segments pass: a state event's empty state key is one
/// (`rooms/{roomId}/state/m.room.encryption/`).
pub fn check_path(path: &str) -> Result<(), InvalidSegment> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let inner = path.strip_prefix('/').unwrap_or(path);
    for seg in inner.split('/') {
        let dots = seg.to_ascii_lowercase().replace("%2e", ".");
        if dots == "." || dots == ".." {
            return Err(InvalidSegment {
                field: "path".to_owned(),
                reason: "holds a dot segment",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_and_other_non_segments_are_refused_naming_the_field() {
        for bad in ["", ".", "..", "a\u{0}b", "line\nbreak", &"x".repeat(1025)] {
            let err = segment("loginId", bad).unwrap_err();
            assert_eq!(err.field, "loginId", "{bad:?}");
            assert!(err.to_string().starts_with("loginId: "), "{err}");
        }
        for good in [
            "...",
            ".a",
            "a.",
            "fi.mau.qr",
            "+1 555",
            "!room:example.org",
            "ü",
        ] {
            let enc = segment("stepId", good).unwrap();
            assert!(
                check_path(&format!("/v3/login/step/{enc}")).is_ok(),
                "{good:?}"
            );
        }
        assert_eq!(segment("id", "a/b?c%2e").unwrap(), "a%2Fb%3Fc%252e");
    }

    #[test]
    fn the_backstop_finds_dot_segments_in_any_spelling() {
        for bad in [
            "/v3/logout/..",
            "/v3/logout/./x",
            "download/%2e%2E/config",
            "download/.%2e/config",
        ] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        for good in [
            "/v3/logout/all",
            "download/example.org/AbC",
            "login?user_id=..",
            "a/.../b",
        ] {
            assert!(check_path(good).is_ok(), "{good}");
        }
    }
}
