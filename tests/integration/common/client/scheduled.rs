//! The `Scheduled` tag: scheduled messages under `/api/messages/schedule(d)` (native
//! sessions only).

use serde_json::Value;

use super::{field, seg, Api, ApiResult};

#[derive(Clone, Copy)]
pub struct ScheduledApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn scheduled(&self) -> ScheduledApi<'a> {
        ScheduledApi(*self)
    }
}

impl ScheduledApi<'_> {
    /// `POST /api/messages/schedule` (201): the `scheduledMessage` (the answer's `message`
    /// is checked to be there).
    pub async fn create(self, body: Value) -> ApiResult {
        let created = self
            .0
            .post("/api/messages/schedule", body)
            .await
            .expect(201)?;
        assert!(created["message"].is_string(), "{created}");
        Ok(field(created, "scheduledMessage"))
    }

    /// `GET /api/messages/scheduled/{id}`: the `scheduledMessage`.
    pub async fn get(self, id: &str) -> ApiResult {
        let path = format!("/api/messages/scheduled/{}", seg(id));
        Ok(field(
            self.0.get(&path).await.expect(200)?,
            "scheduledMessage",
        ))
    }

    /// `GET /api/messages/scheduled?{query}` (may be empty): `scheduledMessages` and
    /// `pagination`.
    pub async fn list(self, query: &str) -> ApiResult {
        let path = match query {
            "" => "/api/messages/scheduled".to_owned(),
            q => format!("/api/messages/scheduled?{q}"),
        };
        self.0.get(&path).await.expect(200)
    }

    /// `GET /api/messages/scheduled/stats`: the whole body (`{"stats": …}`).
    pub async fn stats(self) -> ApiResult {
        self.0
            .get("/api/messages/scheduled/stats")
            .await
            .expect(200)
    }

    /// `PATCH /api/messages/scheduled/{id}`: `message` and `scheduledMessage`.
    pub async fn update(self, id: &str, body: Value) -> ApiResult {
        let path = format!("/api/messages/scheduled/{}", seg(id));
        self.0.patch(&path, body).await.expect(200)
    }

    /// `DELETE /api/messages/scheduled/{id}` (cancel): `cancelledId` and `message`.
    pub async fn cancel(self, id: &str) -> ApiResult {
        let path = format!("/api/messages/scheduled/{}", seg(id));
        self.0.delete(&path).await.expect(200)
    }
}
