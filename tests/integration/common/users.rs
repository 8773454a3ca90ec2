//! Users as the tests make them: fresh addresses, sign-up and sign-in through the mailed
//! code, accounts added to a group, personal tokens, and invitations accepted.

use std::time::{Duration, Instant};

use super::{expect_json, mail, MatrixMode, TestApp, TestConfig};

/// A signed-in user as the tests see it.
#[derive(Debug, Clone)]
pub struct Session {
    pub email: String,
    pub access_token: String,
    pub refresh_token: String,
    pub matrix_access_token: Option<String>,
    pub user: serde_json::Value,
}

static EMAIL_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A fresh address no other test uses.
pub fn unique_email(prefix: &str) -> String {
    let n = EMAIL_COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}.{}.{n}.{nanos}@example.test", std::process::id())
}

impl TestApp {
    /// A server that sends mail to the run's SMTP sink and talks to the real Synapse.
    pub async fn start_with_mail() -> Self {
        Self::start_with_mail_and(String::new()).await
    }

    pub async fn start_with_mail_and(extra: String) -> Self {
        Self::start_with(TestConfig {
            matrix: MatrixMode::Real,
            extra: format!("{}{extra}", mail::smtp_config()),
        })
        .await
    }

    /// Requests a code for `email`, reads it from the delivered mail and verifies it.
    pub async fn sign_in(&self, email: &str, public_key: Option<&str>) -> Session {
        let before = mail::messages_to(email).len();
        let code = self.auth().mailed_code(email, before).await;
        let mut body = serde_json::json!({"email": email, "code": code});
        if let Some(key) = public_key {
            body["publicKey"] = serde_json::json!(key);
        }
        let signed = expect_json(self.post_json("/api/auth/verify", None, body).await, 200).await;
        Session {
            email: email.to_owned(),
            access_token: signed["accessToken"]
                .as_str()
                .expect("accessToken")
                .to_owned(),
            refresh_token: signed["refreshToken"]
                .as_str()
                .expect("refreshToken")
                .to_owned(),
            matrix_access_token: signed["matrixAccessToken"].as_str().map(str::to_owned),
            user: signed["user"].clone(),
        }
    }

    /// Signs up a brand-new user.
    pub async fn sign_up(&self, prefix: &str) -> Session {
        self.sign_in(&unique_email(prefix), None).await
    }
}

/// Waits until the sync worker lists `room_id` as an invitation of the user of the native
/// `access_token`, then accepts it with `POST /api/rooms/{roomId}/accept` (only invites
/// from the configured bridges are joined automatically); returns the accepted room.
pub async fn accept_invite(app: &TestApp, access_token: &str, room_id: &str) -> serde_json::Value {
    let path = format!(
        "/api/rooms/{}",
        switchboard::clients::matrix::encode(room_id)
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = app.get_auth(&path, access_token).await;
        if resp.status() == 200 {
            let room = resp.json::<serde_json::Value>().await.expect("JSON")["room"].clone();
            assert_eq!(room["membership"], "invite", "{room}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "invitation to {room_id} not listed within 20 s (sync worker)"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let resp = app
        .send(
            reqwest::Method::POST,
            &format!("{path}/accept"),
            Some(access_token),
            None,
        )
        .await;
    expect_json(resp, 200).await["room"].clone()
}

/// Adds `email` to the group of `session` by code, as a client would; returns the account.
pub async fn add_account(app: &TestApp, session: &Session, email: &str) -> serde_json::Value {
    let before = mail::messages_to(email).len();
    let accounts = app.user(session).accounts();
    accounts.add_code(email).await.expect("add code");
    let code = mail::wait_for_code(email, before).await;
    let body = serde_json::json!({"email": email, "code": code});
    accounts.add_verify(body).await.expect("account added")["account"].clone()
}

/// A new personal API token (`csk_…`) of `session`'s user.
pub async fn personal_token(app: &TestApp, session: &Session) -> String {
    app.user(session)
        .tokens()
        .create_named("test script")
        .await
        .token
}
