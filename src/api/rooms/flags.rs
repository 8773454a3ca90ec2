//! `POST /api/rooms/{roomId}/…` for the room flags: archive, mute, favorite and pin, each
//! with its opposite. Every one sets one flag of one of the caller's rooms and answers
//! with the room and the flag's new value, so the routes are generated from one table;
//! each row keeps its own documentation, path, operation id, scheme and result object.

use super::*;

/// Emits the whole `#[OpenApi] impl` (the attribute macro expands only after this macro).
macro_rules! flag_routes {
    ($(
        $(#[doc = $doc:tt])*
        #[oai($($oai:tt)*)]
        $name:ident($auth:ident: $scheme:ident): $flag:ident = $value:literal, $message:literal
            -> $result:ident { $field:ident $(, $extra:ident: $extra_value:expr)* };
    )*) => {
        pub struct RoomFlagsApi;

        #[OpenApi(prefix_path = "/api/rooms", tag = "ApiTags::Rooms")]
        impl RoomFlagsApi {
            $(
                $(#[doc = $doc])*
                #[oai($($oai)*)]
                async fn $name(
                    &self,
                    state: Data<&AppState>,
                    $auth: $scheme,
                    /// Matrix room ID, URL-encoded.
                    #[oai(name = "roomId")]
                    room_id: Path<String>,
                ) -> Result<Json<$result>, AppError> {
                    let flag = RoomFlag::$flag;
                    let room_id = rooms::set_flag(&state, &$auth.0, &room_id.0, flag, $value).await?;
                    Ok(Json($result {
                        message: $message.into(),
                        room_id,
                        $field: $value,
                        $($extra: $extra_value,)*
                    }))
                }
            )*
        }
    };
}

flag_routes! {
    /// Archive a room
    ///
    /// Hides the room from the active room list (it is listed with `archived=true` or
    /// `all`); nothing is deleted. It becomes active again with `POST …/unarchive`, or
    /// automatically when a new incoming message arrives in it. Publishes `room.updated`.
    #[oai(path = "/:roomId/archive", method = "post", operation_id = "rooms_archive")]
    archive(auth: TokenAuth): Archived = true, "room archived"
        -> RoomArchiveResult { archived, note: ARCHIVE_NOTE.into() };

    /// Unarchive a room
    ///
    /// Returns the room to the active room list.
    #[oai(path = "/:roomId/unarchive", method = "post", operation_id = "rooms_unarchive")]
    unarchive(auth: TokenAuth): Archived = false, "room unarchived"
        -> RoomUnarchiveResult { archived };

    /// Mute a room
    ///
    /// Marks the room muted (`muted: true`) for clients and notifications; it stays in the
    /// room list.
    #[oai(path = "/:roomId/mute", method = "post", operation_id = "rooms_mute")]
    mute(auth: TokenAuth): Muted = true, "room muted" -> RoomMuteResult { muted };

    /// Unmute a room
    #[oai(path = "/:roomId/unmute", method = "post", operation_id = "rooms_unmute")]
    unmute(auth: TokenAuth): Muted = false, "room unmuted" -> RoomMuteResult { muted };

    /// Mark a room as favorite
    #[oai(path = "/:roomId/favorite", method = "post", operation_id = "rooms_favorite")]
    favorite(auth: TokenAuth): Favorite = true, "room added to the favorites"
        -> RoomFavoriteResult { favorite };

    /// Remove a room from the favorites
    #[oai(path = "/:roomId/unfavorite", method = "post", operation_id = "rooms_unfavorite")]
    unfavorite(auth: TokenAuth): Favorite = false, "room removed from the favorites"
        -> RoomFavoriteResult { favorite };

    /// Pin a room
    ///
    /// Pinned rooms come first in every room list order.
    #[oai(path = "/:roomId/pin", method = "post", operation_id = "rooms_pin")]
    pin(auth: TokenAuth): Pinned = true, "room pinned" -> RoomPinResult { pinned };

    /// Unpin a room
    #[oai(path = "/:roomId/unpin", method = "post", operation_id = "rooms_unpin")]
    unpin(auth: TokenAuth): Pinned = false, "room unpinned" -> RoomPinResult { pinned };
}
