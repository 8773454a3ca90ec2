//! The `Auth` tag's session routes (refresh, logout, profile, onboarding); sign-in itself
//! is `TestApp::auth`, `GET /api/auth/me` is [`Api::me`].

use reqwest::Method;
use serde_json::{json, Value};

use super::{Api, ApiResult};

#[derive(Clone, Copy)]
pub struct SessionApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn session(&self) -> SessionApi<'a> {
        SessionApi(*self)
    }
}

impl SessionApi<'_> {
    /// `POST /api/auth/refresh` (no bearer token needed): new tokens.
    pub async fn refresh(self, refresh_token: &str) -> ApiResult {
        let body = json!({ "refreshToken": refresh_token });
        self.0.post("/api/auth/refresh", body).await.expect(200)
    }

    /// `POST /api/auth/logout`.
    pub async fn logout(self) -> ApiResult {
        self.0.post("/api/auth/logout", json!({})).await.expect(200)
    }

    /// `PATCH /api/auth/profile`: `success` and `user`.
    pub async fn profile(self, body: Value) -> ApiResult {
        self.0.patch("/api/auth/profile", body).await.expect(200)
    }

    /// `POST /api/auth/complete-onboarding`, with a body or none.
    pub async fn complete_onboarding(self, body: Option<Value>) -> ApiResult {
        let path = "/api/auth/complete-onboarding";
        self.0.call(Method::POST, path, body).await.expect(200)
    }
}
