//! What a linked-group request may say: group ids, names and room id lists.

use std::collections::HashSet;

use crate::error::{AppError, AppResult};
use crate::services::rooms::validate_room_id;

/// Longest readable group name (characters).
pub const MAX_NAME: usize = 255;
/// Most room ids accepted in one request.
pub const MAX_ROOM_IDS: usize = 100;

/// Normalizes a path group id (lower-case hyphenated UUID); 400 when it is not a UUID.
pub fn parse_group_id(id: &str) -> AppResult<String> {
    crate::services::scheduled::parse_id("groupId", id)
}

/// Trimmed, at most [`MAX_NAME`] characters, no control characters; empty means no name.
pub fn validate_name(name: &str) -> AppResult<Option<String>> {
    let trimmed = name.trim();
    if trimmed.chars().count() > MAX_NAME {
        return Err(AppError::invalid(
            "name",
            format!("must be at most {MAX_NAME} characters"),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(AppError::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok((!trimmed.is_empty()).then(|| trimmed.to_owned()))
}

/// At least `min` distinct room ids, at most [`MAX_ROOM_IDS`]; duplicates are 400.
pub fn validate_room_ids(ids: &[String], min: usize) -> AppResult<Vec<String>> {
    if ids.len() < min {
        return Err(AppError::invalid(
            "roomIds",
            format!("at least {min} room ID(s) required"),
        ));
    }
    if ids.len() > MAX_ROOM_IDS {
        return Err(AppError::invalid(
            "roomIds",
            format!("at most {MAX_ROOM_IDS} room IDs per request"),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let id = validate_room_id(id)
            .map_err(|_| AppError::invalid("roomIds", "every entry must be a Matrix room ID"))?;
        if !seen.insert(id.clone()) {
            return Err(AppError::invalid(
                "roomIds",
                format!("{id} is listed more than once"),
            ));
        }
        out.push(id);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_id_lists_need_enough_distinct_entries() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(validate_room_ids(&ids(&["!a:hs"]), 2).is_err());
        assert!(validate_room_ids(&ids(&["!a:hs", " !a:hs "]), 2).is_err());
        assert!(validate_room_ids(&ids(&["!a:hs", ""]), 2).is_err());
        assert_eq!(
            validate_room_ids(&ids(&["!a:hs", "!b:hs"]), 2).unwrap(),
            ids(&["!a:hs", "!b:hs"])
        );
        assert!(validate_room_ids(&[], 1).is_err());
    }

    #[test]
    fn names_are_bounded_and_group_ids_are_uuids() {
        assert_eq!(validate_name("  Alice  ").unwrap(), Some("Alice".into()));
        assert_eq!(validate_name("   ").unwrap(), None);
        assert!(validate_name(&"x".repeat(256)).is_err());
        assert!(validate_name(&"é".repeat(255)).is_ok());
        assert!(validate_name("a\u{0}b").is_err());
        assert!(parse_group_id("not-a-uuid").is_err());
        let id = uuid::Uuid::new_v4();
        assert_eq!(
            parse_group_id(&id.to_string().to_uppercase()).unwrap(),
            id.to_string()
        );
    }
}
