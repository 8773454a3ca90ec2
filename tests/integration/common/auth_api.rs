//! The `Auth` tag's sign-in routes as typed calls, so tests say what they do
//! (`app.auth().verify(email, code)`) instead of spelling out paths and bodies.

use serde_json::json;

use super::{expect_error, expect_json, mail, TestApp};

/// The sign-in routes of one running app.
pub struct AuthApi<'a> {
    app: &'a TestApp,
}

impl TestApp {
    pub fn auth(&self) -> AuthApi<'_> {
        AuthApi { app: self }
    }
}

impl AuthApi<'_> {
    /// `POST /api/auth/code`.
    pub async fn request_code(&self, email: &str) -> reqwest::Response {
        self.app
            .post_json("/api/auth/code", None, json!({"email": email}))
            .await
    }

    /// Requests a code (expecting 200) and returns it as mailed; `seen` is how many mails
    /// the address had before.
    pub async fn mailed_code(&self, email: &str, seen: usize) -> String {
        expect_json(self.request_code(email).await, 200).await;
        mail::wait_for_code(email, seen).await
    }

    /// `POST /api/auth/verify` with an e-mail address and a code.
    pub async fn verify(&self, email: &str, code: &str) -> reqwest::Response {
        self.app
            .post_json(
                "/api/auth/verify",
                None,
                json!({"email": email, "code": code}),
            )
            .await
    }

    /// Verifying `code` fails with 400 `invalid_code`.
    pub async fn verify_refused(&self, email: &str, code: &str) {
        expect_error(self.verify(email, code).await, 400, "invalid_code").await;
    }
}

/// A six-digit code that is not `code`.
pub fn wrong_code(code: &str) -> &'static str {
    if code == "000000" {
        "111111"
    } else {
        "000000"
    }
}
