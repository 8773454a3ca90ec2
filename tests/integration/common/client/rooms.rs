//! The `Rooms` tag: the room list, one room, its flags and client fields, reading,
//! invitations and deletion (`/api/rooms`).

use reqwest::Method;
use serde_json::Value;

use super::{field, seg, Api, ApiResult};

#[derive(Clone, Copy)]
pub struct RoomsApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn rooms(&self) -> RoomsApi<'a> {
        RoomsApi(*self)
    }
}

/// The room ids of a list answer, in order.
pub fn room_ids(list: &Value) -> Vec<String> {
    list["rooms"]
        .as_array()
        .expect("rooms")
        .iter()
        .map(|r| r["roomId"].as_str().unwrap().to_owned())
        .collect()
}

impl RoomsApi<'_> {
    /// `GET /api/rooms{query}` (`query` empty or starting with `?`): `rooms` and
    /// `pagination`.
    pub async fn list(self, query: &str) -> ApiResult {
        self.0.get(&format!("/api/rooms{query}")).await.expect(200)
    }

    /// The listed entry of `room_id` in `GET /api/rooms{query}`, if listed.
    pub async fn listed(self, query: &str, room_id: &str) -> Option<Value> {
        let list = self.list(query).await.expect("room list");
        list["rooms"]
            .as_array()
            .expect("rooms")
            .iter()
            .find(|r| r["roomId"] == room_id)
            .cloned()
    }

    /// `GET /api/rooms/{roomId}`: the `room`.
    pub async fn get(self, room_id: &str) -> ApiResult {
        let path = format!("/api/rooms/{}", seg(room_id));
        Ok(field(self.0.get(&path).await.expect(200)?, "room"))
    }

    /// `PUT /api/rooms/{roomId}` (the native client's sealed fields).
    pub async fn put(self, room_id: &str, body: Value) -> ApiResult {
        let path = format!("/api/rooms/{}", seg(room_id));
        self.0.put(&path, body).await.expect(200)
    }

    /// `DELETE /api/rooms/{roomId}{query}` (`query` empty or `?deleteMessages=…`).
    pub async fn delete(self, room_id: &str, query: &str) -> ApiResult {
        let path = format!("/api/rooms/{}{query}", seg(room_id));
        self.0.delete(&path).await.expect(200)
    }

    /// `POST /api/rooms/{roomId}/{action}` without a body: `archive`, `unarchive`, `mute`,
    /// `unmute`, `favorite`, `unfavorite`, `pin`, `unpin`, `read`, `accept`, `decline`.
    pub async fn act(self, room_id: &str, action: &str) -> ApiResult {
        let path = format!("/api/rooms/{}/{action}", seg(room_id));
        self.0.call(Method::POST, &path, None).await.expect(200)
    }

    /// `GET /api/rooms/filter/{name}`: `rooms`.
    pub async fn filter(self, name: &str) -> ApiResult {
        let path = format!("/api/rooms/filter/{name}");
        self.0.get(&path).await.expect(200)
    }
}
