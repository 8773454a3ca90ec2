//! Ending Matrix sessions: one's own (`/logout`) and other devices of the same user
//! (`/delete_devices`, confirmed with the account password).

use serde_json::json;

use super::{unreachable, MatrixClient, MatrixError};

impl MatrixClient {
    /// `POST /logout`: ends the session (device and token) of `token`.
    pub async fn logout(&self, token: &str) -> Result<(), MatrixError> {
        self.post_empty(token, "logout").await
    }

    /// `POST /delete_devices`: logs `devices` of `user_id` out (their access tokens die),
    /// acting with `token` (another device of the same user) and confirming with the
    /// account password (user-interactive auth, `m.login.password`). Unknown device ids are
    /// ignored by the homeserver.
    pub async fn delete_devices(
        &self,
        token: &str,
        user_id: &str,
        password: &str,
        devices: &[String],
    ) -> Result<(), MatrixError> {
        let mut auth = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user_id},
            "password": password,
        });
        // Synapse accepts the password on the first request; a homeserver that insists on
        // a UIA session first answers 401 with one, and gets the same auth inside it.
        for _ in 0..2 {
            let resp = self
                .client_api(reqwest::Method::POST, token, "delete_devices")?
                .json(&json!({"devices": devices, "auth": auth}))
                .send()
                .await
                .map_err(unreachable)?;
            let status = resp.status();
            let bytes = resp.bytes().await.map_err(unreachable)?;
            if status.is_success() {
                return Ok(());
            }
            let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            let session = body["session"].as_str();
            let fresh_session = session.is_some() && auth.get("session").is_none();
            if status.as_u16() == 401 && body.get("errcode").is_none() && fresh_session {
                auth["session"] = json!(session);
                continue;
            }
            return Err(MatrixError::Http {
                status: status.as_u16(),
                errcode: body["errcode"].as_str().unwrap_or("M_UNKNOWN").to_owned(),
                message: body["error"].as_str().unwrap_or_default().to_owned(),
            });
        }
        Err(MatrixError::Decode(
            "delete_devices: the homeserver kept asking for authentication".to_owned(),
        ))
    }
}
