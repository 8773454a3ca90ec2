//! Who a new chat is with, checked before anything reaches a bridge or the homeserver.
//!
//! The identifier ends up in a bridge's URL path (`/v3/resolve_identifier/{identifier}`),
//! so beyond each platform's grammar it never contains a path separator, `%`, `?`, `#`,
//! whitespace or control characters, nor is it made of dots only (`.` and `..` are path
//! segments URL parsers resolve), and it is percent-encoded as one segment on the way.
//!
//! - Phone numbers (WhatsApp; Telegram when written with `+`) are normalised to E.164:
//!   separators (spaces, `-`, `.`, `(`, `)`) dropped, a leading `00` read as `+`, 7 to 15
//!   digits. A WhatsApp number without `+` is read as international (that is how its
//!   contact ids look: `4915123456789`).
//! - Other bridge identifiers (usernames, contact ids, JIDs): 1 to 128 characters of
//!   `A-Z a-z 0-9 . _ - @ : + =`.
//! - `matrix`: a user ID by the grammar (`@localpart:server`, at most 255 bytes; the
//!   localpart of printable ASCII without `:`, the server a host name, IPv4 or `[IPv6]`
//!   literal with an optional port).

use crate::clients::provisioning::Platform;
use crate::error::{AppError, AppResult};

/// Longest identifier accepted, in characters, before normalisation.
pub const MAX_IDENTIFIER_CHARS: usize = 256;
/// Longest bridge identifier that is not a phone number.
const MAX_TOKEN_CHARS: usize = 128;
/// Longest Matrix user ID, in bytes (the spec's limit).
const MAX_MATRIX_ID_BYTES: usize = 255;

/// Where a chat is started: a bridge platform or plain Matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Bridge(Platform),
    Matrix,
}

impl Target {
    /// `whatsapp`, `telegram`, `discord` or `matrix` (field `platform`).
    pub fn parse(value: &str) -> AppResult<Self> {
        if value == "matrix" {
            return Ok(Self::Matrix);
        }
        Platform::parse(value).map(Self::Bridge).ok_or_else(|| {
            AppError::bad_request(
                crate::error::ErrorCode::InvalidPlatform,
                format!("platform: {value:?} is not one of whatsapp, telegram, discord, matrix"),
            )
        })
    }

    pub fn id(self) -> &'static str {
        match self {
            Self::Bridge(p) => p.id(),
            Self::Matrix => "matrix",
        }
    }
}

fn invalid(why: impl std::fmt::Display) -> AppError {
    AppError::invalid("identifier", why)
}

/// The identifier as it is sent on: checked for `target`, phone numbers in E.164.
pub fn normalise(target: Target, raw: &str) -> AppResult<String> {
    let value = raw.trim();
    if value.is_empty() {
        return Err(invalid("must not be empty"));
    }
    if value.chars().count() > MAX_IDENTIFIER_CHARS {
        return Err(invalid(format!(
            "must be at most {MAX_IDENTIFIER_CHARS} characters"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid("must not contain control characters"));
    }
    match target {
        Target::Matrix => matrix_user_id(value),
        Target::Bridge(Platform::Whatsapp) if is_phone_like(value) => e164(value),
        Target::Bridge(Platform::Telegram)
            if value.starts_with('+') || (value.starts_with("00") && is_phone_like(value)) =>
        {
            e164(value)
        }
        Target::Bridge(_) => token(value),
    }
}

/// Digits with the separators people write phone numbers with, and at least one digit.
fn is_phone_like(value: &str) -> bool {
    value.chars().any(|c| c.is_ascii_digit())
        && value
            .chars()
            .all(|c| c.is_ascii_digit() || " +-.()".contains(c))
}

/// `+` and 7 to 15 digits.
fn e164(value: &str) -> AppResult<String> {
    if !is_phone_like(value) || value.chars().skip(1).any(|c| c == '+') {
        return Err(invalid(
            "a phone number has digits, an optional leading + and separators only",
        ));
    }
    let digits: String = value.chars().filter(char::is_ascii_digit).collect();
    let digits = match digits.strip_prefix("00") {
        Some(rest) if !value.starts_with('+') => rest.to_owned(),
        _ => digits,
    };
    if !(7..=15).contains(&digits.len()) || digits.starts_with('0') {
        return Err(invalid(
            "a phone number needs its country code and 7 to 15 digits (E.164), e.g. +4915123456789",
        ));
    }
    Ok(format!("+{digits}"))
}

/// A username, contact id or JID.
fn token(value: &str) -> AppResult<String> {
    let ok_chars = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-@:+=".contains(c));
    if !ok_chars {
        return Err(invalid(
            "must be a phone number, or a username or contact id of A-Z a-z 0-9 . _ - @ : + =",
        ));
    }
    if value.chars().count() > MAX_TOKEN_CHARS {
        return Err(invalid(format!(
            "a username or contact id has at most {MAX_TOKEN_CHARS} characters"
        )));
    }
    if value.chars().all(|c| c == '.') {
        return Err(invalid("must not be made of dots only"));
    }
    Ok(value.to_owned())
}

/// A Matrix user ID by the grammar.
pub fn matrix_user_id(value: &str) -> AppResult<String> {
    let grammar = "must be a Matrix user ID like @alice:example.org";
    if value.len() > MAX_MATRIX_ID_BYTES {
        return Err(invalid(format!(
            "a Matrix user ID has at most {MAX_MATRIX_ID_BYTES} bytes"
        )));
    }
    let Some((local, server)) = value.strip_prefix('@').and_then(|v| v.split_once(':')) else {
        return Err(invalid(grammar));
    };
    let local_ok = !local.is_empty()
        && local
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b':');
    if !local_ok || !is_server_name(server) {
        return Err(invalid(grammar));
    }
    Ok(value.to_owned())
}

/// `host[:port]` where host is a DNS name, an IPv4 address or an `[IPv6]` literal.
fn is_server_name(server: &str) -> bool {
    // The last colon starts the port unless it is inside a bare `[IPv6]` literal.
    let (host, port) = match server.rsplit_once(':') {
        Some((h, p)) if !(h.starts_with('[') && !h.ends_with(']')) => (h, Some(p)),
        _ => (server, None),
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        !host.is_empty()
            && host.len() <= 255
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !host.starts_with('.')
            && !host.ends_with('.')
    };
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const WA: Target = Target::Bridge(Platform::Whatsapp);
    const TG: Target = Target::Bridge(Platform::Telegram);
    const DC: Target = Target::Bridge(Platform::Discord);

    #[test]
    fn phone_numbers_become_e164() {
        assert_eq!(
            normalise(WA, " +49 (151) 234-567.89 ").unwrap(),
            "+4915123456789"
        );
        assert_eq!(normalise(WA, "004915123456789").unwrap(), "+4915123456789");
        assert_eq!(normalise(WA, "4915123456789").unwrap(), "+4915123456789");
        assert_eq!(normalise(TG, "+1 555 0100 123").unwrap(), "+15550100123");
        for bad in [
            "+12",
            "+1234567890123456",
            "+49+151",
            "0151234567",
            "+0151234567",
        ] {
            assert!(normalise(WA, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn usernames_and_contact_ids_pass_unchanged() {
        assert_eq!(normalise(TG, "@durov").unwrap(), "@durov");
        assert_eq!(normalise(TG, "12345").unwrap(), "12345");
        assert_eq!(
            normalise(DC, "80351110224678912").unwrap(),
            "80351110224678912"
        );
        assert_eq!(normalise(DC, "nelly.b").unwrap(), "nelly.b");
        assert_eq!(
            normalise(WA, "4915123456789@s.whatsapp.net").unwrap(),
            "4915123456789@s.whatsapp.net"
        );
    }

    #[test]
    fn path_tricks_and_junk_are_refused_naming_the_field() {
        for bad in [
            "",
            "   ",
            "..",
            ".",
            "a/b",
            "../whoami",
            "a%2Fb",
            "a?b",
            "a#b",
            "a b",
            "a\\b",
            "a\u{0}b",
            "ä",
            "x\ny",
        ] {
            let e = normalise(DC, bad).unwrap_err();
            assert!(e.to_string().starts_with("identifier: "), "{bad:?}: {e}");
        }
        assert!(normalise(TG, &"a".repeat(129)).is_err());
        assert!(normalise(TG, &"a".repeat(300)).is_err());
    }

    #[test]
    fn matrix_ids_follow_the_grammar() {
        for good in [
            "@alice:example.org",
            "@a.b_c=d-e/f+g:matrix.example.org:8448",
            "@bob:127.0.0.1",
            "@carol:[::1]:8448",
            "@Dave:localhost",
        ] {
            assert_eq!(normalise(Target::Matrix, good).unwrap(), good);
        }
        for bad in [
            "alice:example.org",
            "@alice",
            "@:example.org",
            "@alice:",
            "@alice:exa mple.org",
            "@alice:example.org:port",
            "@alice:[::1",
            "@al ice:example.org",
            "@alice:example.org/../x",
        ] {
            assert!(normalise(Target::Matrix, bad).is_err(), "{bad}");
        }
        let long = format!("@{}:example.org", "a".repeat(250));
        assert!(normalise(Target::Matrix, &long).is_err());
    }

    #[test]
    fn platforms_parse() {
        assert_eq!(Target::parse("matrix").unwrap(), Target::Matrix);
        assert_eq!(Target::parse("telegram").unwrap(), TG);
        assert_eq!(
            Target::parse("signal").unwrap_err().code(),
            "invalid_platform"
        );
    }
}
