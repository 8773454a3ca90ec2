//! The `Reminders` tag: `/api/reminders`.

use serde_json::Value;

use super::{field, Api, ApiResult};

#[derive(Clone, Copy)]
pub struct RemindersApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn reminders(&self) -> RemindersApi<'a> {
        RemindersApi(*self)
    }
}

impl RemindersApi<'_> {
    /// `POST /api/reminders` (201): the `reminder`.
    pub async fn create(self, body: Value) -> ApiResult {
        Ok(field(
            self.0.post("/api/reminders", body).await.expect(201)?,
            "reminder",
        ))
    }

    /// `GET /api/reminders?{query}` (`query` without `?`, may be empty): `reminders` and
    /// `pagination`.
    pub async fn list(self, query: &str) -> ApiResult {
        let path = match query {
            "" => "/api/reminders".to_owned(),
            q => format!("/api/reminders?{q}"),
        };
        self.0.get(&path).await.expect(200)
    }

    /// `PUT /api/reminders/{id}` (a partial update): the `reminder`.
    pub async fn update(self, id: &str, body: Value) -> ApiResult {
        Ok(field(
            self.0
                .put(&format!("/api/reminders/{id}"), body)
                .await
                .expect(200)?,
            "reminder",
        ))
    }

    /// `DELETE /api/reminders/{id}`: `deletedId` and `message`.
    pub async fn delete(self, id: &str) -> ApiResult {
        self.0
            .delete(&format!("/api/reminders/{id}"))
            .await
            .expect(200)
    }
}
