//! The `Keys` tag: the user's public key, rotation, lookup, recovery material and
//! deletion (`/api/keys`).

use serde_json::Value;

use super::{seg, Api, ApiResult, Reply};

/// The `X-Confirm-Key-Deletion` value that deletes the keys.
pub const CONFIRM_KEY_DELETION: &str = "PERMANENTLY_DELETE_ALL_MY_MESSAGES";

#[derive(Clone, Copy)]
pub struct KeysApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn keys(&self) -> KeysApi<'a> {
        KeysApi(*self)
    }
}

impl KeysApi<'_> {
    /// `POST /api/keys/register`.
    pub async fn register(self, body: Value) -> ApiResult {
        self.0.post("/api/keys/register", body).await.expect(200)
    }

    /// `PUT /api/keys` (rotation, recovery material).
    pub async fn rotate(self, body: Value) -> ApiResult {
        self.0.put("/api/keys", body).await.expect(200)
    }

    /// `GET /api/keys/info`.
    pub async fn info(self) -> ApiResult {
        self.0.get("/api/keys/info").await.expect(200)
    }

    /// `GET /api/keys/recovery`.
    pub async fn recovery(self) -> ApiResult {
        self.0.get("/api/keys/recovery").await.expect(200)
    }

    /// `GET /api/keys/public/{id}` (a user id or a Matrix id, encoded here).
    pub async fn public(self, id: &str) -> ApiResult {
        self.0
            .get(&format!("/api/keys/public/{}", seg(id)))
            .await
            .expect(200)
    }

    /// `DELETE /api/keys` with the confirmation header when given.
    pub async fn delete(self, confirmation: Option<&str>) -> ApiResult {
        let mut req = self.0.app.http.delete(self.0.app.url("/api/keys"));
        if let Some(t) = self.0.token {
            req = req.bearer_auth(t);
        }
        if let Some(value) = confirmation {
            req = req.header("X-Confirm-Key-Deletion", value);
        }
        let resp = req.send().await.expect("request");
        Reply::read(resp).await.expect(200)
    }
}
