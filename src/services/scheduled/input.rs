//! What a request to the scheduled-message routes carries, checked: pages, ids, room ids,
//! times, the target platform, and the sealed body (it must open with the server key to
//! acceptable text). Also the time helpers the scheduler and other services share.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::clients::provisioning::Platform;
use crate::crypto::{open_envelope, Envelope};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;

/// Largest accepted plaintext, bytes.
pub const MAX_BODY_BYTES: usize = 65_536;
/// Statuses the list filter accepts.
pub const STATUSES: [&str; 4] = ["pending", "sent", "cancelled", "failed"];

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

pub fn to_time(ms: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default()
}

/// `limit` 1–100 (default 50) and `offset` ≥ 0 (default 0), both from query text; anything
/// else is 400 (not clamped).
pub fn parse_page(limit: Option<&str>, offset: Option<&str>) -> AppResult<(i64, i64)> {
    let limit = match limit.map(str::trim) {
        None => 50,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=100).contains(n))
            .ok_or_else(|| AppError::invalid("limit", "must be an integer from 1 to 100"))?,
    };
    let offset = match offset.map(str::trim) {
        None => 0,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| AppError::invalid("offset", "must be an integer of at least 0"))?,
    };
    Ok((limit, offset))
}

/// A UUID path parameter, canonical lowercase; 400 otherwise.
pub fn parse_id(field: &str, id: &str) -> AppResult<String> {
    uuid::Uuid::parse_str(id.trim())
        .map(|u| u.to_string())
        .map_err(|_| AppError::invalid(field, "must be a UUID"))
}

/// A Matrix room id (`!opaque[:server]`).
pub fn validate_room_id(field: &str, room_id: &str) -> AppResult<String> {
    let r = room_id.trim();
    if !r.starts_with('!') || r.len() < 2 || r.len() > 255 {
        return Err(AppError::invalid(
            field,
            "must be a Matrix room id such as !abc:example.org",
        ));
    }
    if r.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AppError::invalid(field, "must not contain spaces"));
    }
    Ok(r.to_owned())
}

fn invalid_time(message: impl Into<String>) -> AppError {
    AppError::bad_request(ErrorCode::InvalidScheduleTime, message)
}

/// `scheduledFor`: an RFC 3339 date-time strictly in the future.
pub fn parse_schedule_time(value: &str, now: i64) -> AppResult<i64> {
    let at = DateTime::parse_from_rfc3339(value.trim())
        .map_err(|_| {
            invalid_time("scheduledFor: must be an RFC 3339 date-time such as 2030-01-01T09:00:00Z")
        })?
        .timestamp_millis();
    if at <= now {
        return Err(invalid_time("scheduledFor: must be in the future"));
    }
    Ok(at)
}

pub(super) fn validate_platform(value: Option<&str>) -> AppResult<Option<String>> {
    match value.map(|v| v.trim().to_ascii_lowercase()) {
        None => Ok(None),
        Some(p) if p.is_empty() => Ok(None),
        Some(p) => match Platform::parse(&p) {
            Some(platform) => Ok(Some(platform.id().to_owned())),
            None => Err(AppError::invalid(
                "targetPlatform",
                format!(
                    "must be one of {}",
                    Platform::ALL.map(Platform::id).join(", ")
                ),
            )),
        },
    }
}

fn invalid_encryption(why: impl std::fmt::Display) -> AppError {
    AppError::bad_request(
        ErrorCode::InvalidEncryption,
        format!(
            "encryptedBody: cannot be opened with the server key ({why}); seal it to \
             serverPublicKey of GET /api/attestation"
        ),
    )
}

/// Opens a stored or submitted envelope with the server's X25519 secret.
pub fn open_body(
    state: &Context,
    encrypted_body: &str,
    nonce: &str,
    eph: &str,
) -> AppResult<Vec<u8>> {
    if encrypted_body.len() > (MAX_BODY_BYTES + 16) * 4 / 3 + 8 {
        return Err(AppError::invalid(
            "encryptedBody",
            format!("the message may be at most {MAX_BODY_BYTES} bytes"),
        ));
    }
    let env = Envelope::from_base64(eph, nonce, encrypted_body).map_err(invalid_encryption)?;
    open_envelope(state.server_keys.x25519_secret(), &env)
        .map_err(|_| invalid_encryption("decryption failed"))
}

/// The Matrix event content for a decrypted body (see the module docs).
pub fn message_content(plaintext: &str) -> Value {
    if plaintext.trim_start().starts_with('{') {
        if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(plaintext) {
            if obj.get("msgtype").is_some_and(Value::is_string)
                && obj.get("body").is_some_and(Value::is_string)
            {
                return Value::Object(obj);
            }
        }
    }
    json!({"msgtype": "m.text", "body": plaintext})
}

/// Checks a submitted envelope opens to an acceptable body.
pub(super) fn check_body(
    state: &Context,
    encrypted_body: &str,
    nonce: &str,
    eph: &str,
) -> AppResult<()> {
    let plain = open_body(state, encrypted_body, nonce, eph)?;
    if plain.len() > MAX_BODY_BYTES {
        return Err(AppError::invalid(
            "encryptedBody",
            format!("the message may be at most {MAX_BODY_BYTES} bytes"),
        ));
    }
    let text = String::from_utf8(plain).map_err(|_| {
        AppError::invalid("encryptedBody", "the decrypted message is not UTF-8 text")
    })?;
    if text.trim().is_empty() {
        return Err(AppError::invalid(
            "encryptedBody",
            "the decrypted message is empty",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_validated_not_clamped() {
        assert_eq!(parse_page(None, None).unwrap(), (50, 0));
        assert_eq!(parse_page(Some("100"), Some("7")).unwrap(), (100, 7));
        for (l, o) in [
            (Some("0"), None),
            (Some("101"), None),
            (Some("x"), None),
            (None, Some("-1")),
            (None, Some("1.5")),
        ] {
            assert_eq!(parse_page(l, o).unwrap_err().code(), "invalid_request");
        }
    }

    #[test]
    fn schedule_times_must_parse_and_be_in_the_future() {
        let now = DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z")
            .unwrap()
            .timestamp_millis();
        assert_eq!(
            parse_schedule_time("2030-01-01T00:00:01.5+00:00", now).unwrap(),
            now + 1_500
        );
        for bad in [
            "2029-12-31T23:59:59Z",
            "2030-01-01T00:00:00Z",
            "tomorrow",
            "",
            "2030-01-01",
        ] {
            assert_eq!(
                parse_schedule_time(bad, now).unwrap_err().code(),
                "invalid_schedule_time",
                "{bad}"
            );
        }
    }

    #[test]
    fn plaintext_becomes_text_or_given_content() {
        assert_eq!(
            message_content("hi"),
            json!({"msgtype": "m.text", "body": "hi"})
        );
        let notice = r#"{"msgtype":"m.notice","body":"b","format":"org.matrix.custom.html","formatted_body":"<b>b</b>"}"#;
        assert_eq!(message_content(notice)["msgtype"], "m.notice");
        assert_eq!(message_content(r#"{"a":1}"#)["body"], r#"{"a":1}"#);
    }

    #[test]
    fn room_ids_and_platforms_are_checked() {
        assert!(validate_room_id("roomId", "!abc:hs").is_ok());
        assert!(validate_room_id("roomId", "abc:hs").is_err());
        assert!(validate_room_id("roomId", "!a b:hs").is_err());
        assert_eq!(
            validate_platform(Some("Discord")).unwrap().as_deref(),
            Some("discord")
        );
        assert!(validate_platform(Some("signal")).is_err());
        assert!(parse_id("id", "nope").is_err());
    }
}
