//! The `Devices` tag: push devices under `/api/devices` (native sessions only).

use serde_json::{json, Value};

use super::{Api, ApiResult};

#[derive(Clone, Copy)]
pub struct DevicesApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn devices(&self) -> DevicesApi<'a> {
        DevicesApi(*self)
    }
}

impl DevicesApi<'_> {
    /// `POST /api/devices/register` with `body`: `tokenId` and `message`.
    pub async fn register_with(self, body: Value) -> ApiResult {
        self.0.post("/api/devices/register", body).await.expect(200)
    }

    /// Registers `device_token` as the test phone; its `tokenId`.
    pub async fn register(self, device_token: &str) -> String {
        let body = self
            .register_with(json!({"token": device_token, "deviceName": "Test phone",
                "deviceModel": "iPhone15,2", "osVersion": "17.4", "appVersion": "2.0.0"}))
            .await
            .expect("device registered");
        body["tokenId"].as_str().expect("tokenId").to_owned()
    }

    /// `GET /api/devices`: the `devices`.
    pub async fn list(self) -> ApiResult<Vec<Value>> {
        let body = self.0.get("/api/devices").await.expect(200)?;
        Ok(body["devices"].as_array().expect("devices").clone())
    }

    /// `GET /api/devices/status`.
    pub async fn status(self) -> ApiResult {
        self.0.get("/api/devices/status").await.expect(200)
    }

    /// `POST /api/devices/{tokenId}/test`.
    pub async fn test_push(self, token_id: &str) -> ApiResult {
        self.0
            .call(
                reqwest::Method::POST,
                &format!("/api/devices/{token_id}/test"),
                None,
            )
            .await
            .expect(200)
    }

    /// `POST /api/devices/unregister` with the raw device token.
    pub async fn unregister(self, device_token: &str) -> ApiResult {
        self.0
            .post("/api/devices/unregister", json!({ "token": device_token }))
            .await
            .expect(200)
    }

    /// `DELETE /api/devices/{tokenId}`.
    pub async fn delete(self, token_id: &str) -> ApiResult {
        self.0
            .delete(&format!("/api/devices/{token_id}"))
            .await
            .expect(200)
    }
}
