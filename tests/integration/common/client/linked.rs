//! The `Linked` tag: linked room groups (`/api/rooms/link`, `/api/rooms/linked/*`,
//! `/api/rooms/{roomId}/linked-group`; native sessions only).

use serde_json::Value;

use super::{field, seg, Api, ApiResult};

#[derive(Clone, Copy)]
pub struct LinkedApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn linked(&self) -> LinkedApi<'a> {
        LinkedApi(*self)
    }
}

fn group_path(id: &str) -> String {
    format!("/api/rooms/linked/{id}")
}

impl LinkedApi<'_> {
    /// `POST /api/rooms/link` (201): `message` and `group`.
    pub async fn link(self, body: Value) -> ApiResult {
        self.0.post("/api/rooms/link", body).await.expect(201)
    }

    /// Links `body` and returns the new group's id.
    pub async fn link_id(self, body: Value) -> String {
        let created = self.link(body).await.expect("group created");
        created["group"]["groupId"].as_str().unwrap().to_owned()
    }

    /// `GET /api/rooms/linked`: `groups`.
    pub async fn list(self) -> ApiResult {
        self.0.get("/api/rooms/linked").await.expect(200)
    }

    /// `GET /api/rooms/linked/{groupId}`: the `group`.
    pub async fn get(self, id: &str) -> ApiResult {
        Ok(field(
            self.0.get(&group_path(id)).await.expect(200)?,
            "group",
        ))
    }

    /// `PUT /api/rooms/linked/{groupId}` (rename).
    pub async fn update(self, id: &str, body: Value) -> ApiResult {
        self.0.put(&group_path(id), body).await.expect(200)
    }

    /// `DELETE /api/rooms/linked/{groupId}`.
    pub async fn delete(self, id: &str) -> ApiResult {
        self.0.delete(&group_path(id)).await.expect(200)
    }

    /// `POST /api/rooms/linked/{groupId}/rooms`: `addedRoomIds`.
    pub async fn add_rooms(self, id: &str, body: Value) -> ApiResult {
        let path = format!("{}/rooms", group_path(id));
        self.0.post(&path, body).await.expect(200)
    }

    /// `DELETE /api/rooms/linked/{groupId}/rooms/{roomId}`: `roomId`, `groupDeleted`.
    pub async fn remove_room(self, id: &str, room_id: &str) -> ApiResult {
        let path = format!("{}/rooms/{}", group_path(id), seg(room_id));
        self.0.delete(&path).await.expect(200)
    }

    /// `GET /api/rooms/{roomId}/linked-group`: `linkedGroup` (null when none).
    pub async fn of_room(self, room_id: &str) -> ApiResult {
        let path = format!("/api/rooms/{}/linked-group", seg(room_id));
        self.0.get(&path).await.expect(200)
    }
}
