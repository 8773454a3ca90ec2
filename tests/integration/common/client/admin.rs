//! The `Admin` tag: operator routes under `/api/admin` (administrators only).

use serde_json::Value;

use super::{Api, ApiResult};

#[derive(Clone, Copy)]
pub struct AdminApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn admin(&self) -> AdminApi<'a> {
        AdminApi(*self)
    }
}

impl AdminApi<'_> {
    /// `GET /api/admin/users?{query}` (`query` without `?`, may be empty): `users` and
    /// `pagination`.
    pub async fn users(self, query: &str) -> ApiResult {
        let path = match query {
            "" => "/api/admin/users".to_owned(),
            q => format!("/api/admin/users?{q}"),
        };
        self.0.get(&path).await.expect(200)
    }

    /// `GET /api/admin/users/{id}`.
    pub async fn user(self, id: &str) -> ApiResult {
        self.0
            .get(&format!("/api/admin/users/{id}"))
            .await
            .expect(200)
    }

    /// `PUT /api/admin/users/{id}/subscription`: the user as changed.
    pub async fn set_subscription(self, id: &str, body: Value) -> ApiResult {
        self.0
            .put(&format!("/api/admin/users/{id}/subscription"), body)
            .await
            .expect(200)
    }
}
