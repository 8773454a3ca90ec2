//! The `Tokens` tag: personal API tokens (`/api/developer/tokens`).

use serde_json::{json, Value};

use super::{Api, ApiResult};

/// A token as `POST /api/developer/tokens` answers it (the secret is shown only here).
#[derive(Debug, Clone)]
pub struct NewToken {
    pub id: String,
    pub token: String,
    pub body: Value,
}

#[derive(Clone, Copy)]
pub struct TokensApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn tokens(&self) -> TokensApi<'a> {
        TokensApi(*self)
    }
}

impl TokensApi<'_> {
    /// `POST /api/developer/tokens` (201).
    pub async fn create(self, body: Value) -> ApiResult<NewToken> {
        let body = self
            .0
            .post("/api/developer/tokens", body)
            .await
            .expect(201)?;
        Ok(NewToken {
            id: body["id"].as_str().expect("id").to_owned(),
            token: body["token"].as_str().expect("token").to_owned(),
            body,
        })
    }

    /// A token named `name` that never expires.
    pub async fn create_named(self, name: &str) -> NewToken {
        self.create(json!({ "name": name }))
            .await
            .expect("token created")
    }

    /// `GET /api/developer/tokens`: the whole body (`tokens`, `currentAllowlistVersion`).
    pub async fn list(self) -> ApiResult {
        self.0.get("/api/developer/tokens").await.expect(200)
    }

    /// The listed entry of token `id`.
    pub async fn listed(self, id: &str) -> Value {
        let list = self.list().await.expect("token list");
        list["tokens"]
            .as_array()
            .expect("tokens")
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("token {id} not listed: {list}"))
            .clone()
    }

    /// `DELETE /api/developer/tokens/{id}`.
    pub async fn revoke(self, id: &str) -> ApiResult {
        self.0
            .delete(&format!("/api/developer/tokens/{id}"))
            .await
            .expect(200)
    }

    /// `PATCH /api/developer/tokens/{id}`.
    pub async fn update(self, id: &str, body: Value) -> ApiResult {
        self.0
            .patch(&format!("/api/developer/tokens/{id}"), body)
            .await
            .expect(200)
    }
}
