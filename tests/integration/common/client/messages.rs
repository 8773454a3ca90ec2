//! The `Messages` tag: history pages, sending, statistics and deletion
//! (`/api/messages`, `/api/rooms/{roomId}/messages`).

use serde_json::Value;

use super::{seg, Api, ApiResult, Reply};

/// The `X-Confirm-Delete` value that deletes messages.
pub const CONFIRM_DELETE: &str = "DELETE_MESSAGES";

#[derive(Clone, Copy)]
pub struct MessagesApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn messages(&self) -> MessagesApi<'a> {
        MessagesApi(*self)
    }
}

impl MessagesApi<'_> {
    /// `GET /api/messages{query}` (`query` empty or starting with `?`): one page.
    pub async fn page(self, query: &str) -> ApiResult {
        self.0
            .get(&format!("/api/messages{query}"))
            .await
            .expect(200)
    }

    /// `GET /api/messages/stats`: the whole body (`{"stats": …}`).
    pub async fn stats(self) -> ApiResult {
        self.0.get("/api/messages/stats").await.expect(200)
    }

    /// `POST /api/rooms/{roomId}/messages`: `eventId`, `roomId`, `txnId`, `duplicate`.
    pub async fn send(self, room_id: &str, body: Value) -> ApiResult {
        let path = format!("/api/rooms/{}/messages", seg(room_id));
        self.0.post(&path, body).await.expect(200)
    }

    /// `POST /api/messages/send-multi`; the raw answer (200, 207 or 500 by design).
    pub async fn send_multi(self, body: Value) -> Reply {
        self.0.post("/api/messages/send-multi", body).await
    }

    /// `DELETE /api/messages{query}` with the confirmation header when given.
    pub async fn delete_all(self, query: &str, confirm: Option<&str>) -> ApiResult {
        let api = &self.0;
        let mut req = api
            .app
            .http
            .delete(api.app.url(&format!("/api/messages{query}")));
        if let Some(t) = api.token {
            req = req.bearer_auth(t);
        }
        if let Some(c) = confirm {
            req = req.header("X-Confirm-Delete", c);
        }
        Reply::read(req.send().await.expect("request"))
            .await
            .expect(200)
    }

    /// `DELETE /api/messages/{messageId}`.
    pub async fn delete(self, message_id: &str) -> ApiResult {
        let path = format!("/api/messages/{}", seg(message_id));
        self.0.delete(&path).await.expect(200)
    }
}
