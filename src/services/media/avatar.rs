//! `GET /api/rooms/{roomId}/members/{userId}/avatar`: a room member's avatar (the
//! `avatar_url` of their stored `m.room.member` state, see `services::senders`) as a
//! thumbnail from the homeserver's authenticated media API, fetched as the caller and
//! streamed; nothing is stored. The message objects' `senderAvatarUrl` points here.

use super::{capped, media_error, safe_content_type, too_large, Download};
use crate::clients::matrix::media::Mxc;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::messages::parse_room_id;
use crate::services::messages::send::matrix_token;
use crate::services::users::load_row;
use crate::services::{conversations, senders, users, Context};

/// Longest accepted member id (Matrix user ids are at most 255 bytes).
const MAX_USER_ID: usize = 255;

fn parse_user_id(user_id: &str) -> AppResult<String> {
    let id = user_id.trim();
    let well_formed = id.len() <= MAX_USER_ID
        && id.starts_with('@')
        && id
            .split_once(':')
            .is_some_and(|(l, s)| l.len() > 1 && !s.is_empty())
        && !id.chars().any(char::is_control);
    if !well_formed {
        return Err(AppError::invalid(
            "userId",
            "must be a Matrix user ID such as @anna:example.org (URL-encoded in the path)",
        ));
    }
    Ok(id.to_owned())
}

/// The member's avatar thumbnail. 404 when the room is not one of the caller's, the member
/// is unknown in it or has no avatar, or the homeserver no longer has the image.
pub async fn member_avatar(
    state: &Context,
    user_id: &str,
    room_id: &str,
    member_id: &str,
) -> AppResult<Download> {
    let room_id = parse_room_id("roomId", room_id)?;
    let member_id = parse_user_id(member_id)?;
    let matrix = state.matrix.clone().ok_or_else(|| AppError::Unavailable {
        retry_after_secs: None,
        code: ErrorCode::HomeserverUnavailable,
        message: "no Matrix homeserver is configured on this server".into(),
    })?;
    let (uid, st) = (user_id.to_owned(), state.clone());
    let (avatar, token) = state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            conversations::require_readable(&user)?;
            if crate::store::rooms::find(c, &uid, &room_id)?.is_none() {
                return Err(AppError::not_found("room"));
            }
            let dek = users::data_key(&st.master, &user)?;
            let avatar = senders::member_profile(c, &dek, &uid, &room_id, &member_id)?
                .and_then(|p| p.avatar)
                .and_then(|a| Mxc::parse(&a))
                .ok_or_else(|| AppError::not_found("avatar"))?;
            Ok((avatar, matrix_token(&st, &user)?))
        })
        .await?;
    let stream = matrix
        .media_download(&token, &avatar, true)
        .await
        .map_err(media_error)?;
    let max = state.config.media.max_download_bytes();
    if stream.length.is_some_and(|n| n > max) {
        return Err(too_large(
            max,
            "the avatar is larger than this server serves",
        ));
    }
    Ok(Download {
        content_type: safe_content_type(stream.content_type.as_deref()),
        filename: "avatar".to_owned(),
        length: stream.length,
        body: Box::pin(capped(stream.into_stream(), max)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_must_look_like_matrix_ids() {
        assert!(parse_user_id("@anna:example.org").is_ok());
        for bad in ["", "anna", "@:x", "@anna", "@anna:", "@a\n:x"] {
            assert!(parse_user_id(bad).is_err(), "{bad:?}");
        }
        assert!(parse_user_id(&format!("@{}:x", "a".repeat(300))).is_err());
    }
}
