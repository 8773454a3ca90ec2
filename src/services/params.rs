//! Parameters several routes share, parsed one way: page sizes, points in time, room ids.
//! A bad value is a 400 naming the field.

use crate::error::{AppError, AppResult};

/// `limit`: `default` when absent, else an integer from 1 to `max`.
pub fn parse_limit(limit: Option<i64>, default: i64, max: i64) -> AppResult<i64> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(_) => Err(AppError::invalid(
            "limit",
            format!("must be an integer from 1 to {max}"),
        )),
    }
}

/// A point in time as milliseconds since the Unix epoch or an RFC 3339 date-time
/// (`None` when absent).
pub fn parse_time(field: &str, raw: Option<&str>) -> AppResult<Option<i64>> {
    let Some(raw) = raw.map(str::trim) else {
        return Ok(None);
    };
    let bad = || {
        AppError::invalid(
            field,
            "must be a timestamp in milliseconds or an RFC 3339 date-time",
        )
    };
    if let Ok(ms) = raw.parse::<i64>() {
        return if ms >= 0 { Ok(Some(ms)) } else { Err(bad()) };
    }
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|t| Some(t.timestamp_millis()))
        .map_err(|_| bad())
}

/// Room ids arrive URL-decoded from the path; refuse the obviously unusable.
pub fn validate_room_id(room_id: &str) -> AppResult<String> {
    let id = room_id.trim();
    if id.is_empty() || id.len() > 255 || id.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "roomId",
            "must be a Matrix room ID (URL-encoded in paths)",
        ));
    }
    Ok(id.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_and_times() {
        assert_eq!(parse_limit(None, 50, 100).unwrap(), 50);
        assert_eq!(parse_limit(Some(100), 50, 100).unwrap(), 100);
        assert!(parse_limit(Some(0), 50, 100).is_err());
        assert!(parse_limit(Some(101), 50, 100).is_err());
        assert_eq!(parse_time("t", None).unwrap(), None);
        assert_eq!(parse_time("t", Some(" 5 ")).unwrap(), Some(5));
        assert_eq!(
            parse_time("t", Some("1970-01-01T00:00:01Z")).unwrap(),
            Some(1000)
        );
        assert!(parse_time("t", Some("-1")).is_err());
        assert!(parse_time("t", Some("yesterday")).is_err());
    }
}
