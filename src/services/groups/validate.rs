//! The limits of group management input, checked before anything reaches the homeserver.

use crate::error::{AppError, AppResult};
use crate::services::chats::identifier;

/// Longest topic, in characters: WhatsApp's limit for a group description; a network with
/// a lower one (Telegram: 255) may shorten or refuse it on its side.
pub const MAX_TOPIC_CHARS: usize = 2048;
/// Longest reason given when removing a member, in characters.
pub const MAX_REASON_CHARS: usize = 512;
/// Largest room avatar, in bytes (5 MiB).
pub const MAX_AVATAR_BYTES: u64 = 5 * 1024 * 1024;

/// A name: trimmed, at most [`crate::services::chats::MAX_GROUP_NAME_CHARS`], no control characters; may be empty.
pub fn check_name(raw: &str) -> AppResult<String> {
    Ok(crate::services::chats::group_name(Some(raw))?.unwrap_or_default())
}

/// A topic: trimmed, at most [`MAX_TOPIC_CHARS`], line breaks and tabs allowed but no
/// other control characters; may be empty.
pub fn check_topic(raw: &str) -> AppResult<String> {
    let topic = raw.trim();
    if topic.chars().count() > MAX_TOPIC_CHARS {
        return Err(AppError::invalid(
            "topic",
            format!("must be at most {MAX_TOPIC_CHARS} characters"),
        ));
    }
    if topic
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return Err(AppError::invalid(
            "topic",
            "must not contain control characters other than line breaks and tabs",
        ));
    }
    Ok(topic.to_owned())
}

/// A Matrix user ID by the grammar, named `userId`.
pub fn check_user_id(raw: &str) -> AppResult<String> {
    identifier::matrix_user_id(raw.trim()).map_err(|e| {
        let why = e.to_string();
        AppError::invalid("userId", why.strip_prefix("identifier: ").unwrap_or(&why))
    })
}

/// An optional reason: trimmed, blank is none, at most [`MAX_REASON_CHARS`], no control
/// characters.
pub fn check_reason(raw: Option<&str>) -> AppResult<Option<String>> {
    let Some(reason) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if reason.chars().count() > MAX_REASON_CHARS {
        return Err(AppError::invalid(
            "reason",
            format!("must be at most {MAX_REASON_CHARS} characters"),
        ));
    }
    if reason.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "reason",
            "must not contain control characters",
        ));
    }
    Ok(Some(reason.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_name_their_fields() {
        assert_eq!(check_name("  Climbing club ").unwrap(), "Climbing club");
        assert_eq!(check_name("   ").unwrap(), "");
        let e = check_name(&"n".repeat(256)).unwrap_err();
        assert!(e.to_string().starts_with("name: "), "{e}");
        assert!(check_name("a\u{7}b").is_err());
        assert_eq!(
            check_topic("line one\nline two").unwrap(),
            "line one\nline two"
        );
        assert!(check_topic(&"t".repeat(MAX_TOPIC_CHARS)).is_ok());
        let e = check_topic(&"t".repeat(MAX_TOPIC_CHARS + 1)).unwrap_err();
        assert!(e.to_string().starts_with("topic: "), "{e}");
        assert!(check_topic("a\u{1b}[31m").is_err());
        assert_eq!(
            check_user_id(" @bob:example.org ").unwrap(),
            "@bob:example.org"
        );
        for bad in ["bob", "@bob", "@bo b:x.org", "@bob:x.org/../y", ""] {
            let e = check_user_id(bad).unwrap_err();
            assert!(e.to_string().starts_with("userId: "), "{bad}: {e}");
        }
        assert_eq!(check_reason(None).unwrap(), None);
        assert_eq!(check_reason(Some(" ")).unwrap(), None);
        assert_eq!(check_reason(Some("spam")).unwrap().as_deref(), Some("spam"));
        let e = check_reason(Some(&"r".repeat(513))).unwrap_err();
        assert!(e.to_string().starts_with("reason: "), "{e}");
    }
}
