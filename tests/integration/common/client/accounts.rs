//! The `Accounts` tag: the account group of a user (`/api/accounts`), and `GET
//! /api/auth/me` of the `Auth` tag (the signed-in user; sign-in itself is
//! `TestApp::auth`).

use reqwest::Method;
use serde_json::{json, Value};

use super::{Api, ApiResult};

#[derive(Clone, Copy)]
pub struct AccountsApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn accounts(&self) -> AccountsApi<'a> {
        AccountsApi(*self)
    }

    /// `GET /api/auth/me`: the signed-in user.
    pub async fn me(self) -> ApiResult {
        self.get("/api/auth/me").await.expect(200)
    }
}

impl AccountsApi<'_> {
    /// `GET /api/accounts`: `accounts` and `activeAccount`.
    pub async fn list(self) -> ApiResult {
        self.0.get("/api/accounts").await.expect(200)
    }

    /// The ids of the listed accounts, primary first.
    pub async fn ids(self) -> Vec<String> {
        let list = self.list().await.expect("account list");
        list["accounts"]
            .as_array()
            .expect("accounts")
            .iter()
            .map(|a| a["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// `GET /api/accounts/active`.
    pub async fn active(self) -> ApiResult {
        self.0.get("/api/accounts/active").await.expect(200)
    }

    /// `POST /api/accounts/add/code` for `email`.
    pub async fn add_code(self, email: &str) -> ApiResult {
        self.0
            .post("/api/accounts/add/code", json!({ "email": email }))
            .await
            .expect(200)
    }

    /// `POST /api/accounts/add/verify` with `body` (`email`, `code`): the `account`.
    pub async fn add_verify(self, body: Value) -> ApiResult {
        self.0
            .post("/api/accounts/add/verify", body)
            .await
            .expect(200)
    }

    /// `POST /api/accounts/{id}/switch`: the new session's tokens and `account`.
    pub async fn switch(self, id: &str) -> ApiResult {
        let path = format!("/api/accounts/{id}/switch");
        self.0.post(&path, json!({})).await.expect(200)
    }

    /// `PATCH /api/accounts/{id}`: the `account`.
    pub async fn update(self, id: &str, body: Value) -> ApiResult {
        let path = format!("/api/accounts/{id}");
        self.0.patch(&path, body).await.expect(200)
    }

    /// `DELETE /api/accounts/{id}`.
    pub async fn remove(self, id: &str) -> ApiResult {
        let path = format!("/api/accounts/{id}");
        self.0.call(Method::DELETE, &path, None).await.expect(200)
    }
}
