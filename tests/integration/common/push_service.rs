//! The Web Push service stand-in (`tests/support/push_service.py`, Python `cryptography`):
//! RFC 8030 endpoints that check the VAPID JWT and decrypt each push with the
//! subscription's private key, independently of the server's code. One per test.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{free_port, python, repo_root};

pub struct PushService {
    pub url: String,
    child: Child,
    http: reqwest::Client,
}

impl Drop for PushService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl PushService {
    pub fn start() -> Self {
        let port = free_port();
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/support/push_service.py"))
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the push service stand-in (python with cryptography)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("push service output");
        assert_eq!(line.trim(), "ready", "push service did not start");
        Self {
            url: format!("http://127.0.0.1:{port}"),
            child,
            http: reqwest::Client::new(),
        }
    }

    /// The `[push]` section a server needs to send here (a loopback endpoint).
    pub fn config() -> String {
        "[push]\nallow_private_endpoints = true\ncontact = \"mailto:ops@switchboard.test\"\ntimeout = \"3s\"\n\n".to_owned()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let resp = self
            .http
            .post(format!("{}{path}", self.url))
            .json(&body)
            .send()
            .await
            .expect("push service control");
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().await.unwrap_or(Value::Null)
    }

    /// A browser's subscription: `{id, endpoint, keys: {p256dh, auth}}`.
    pub async fn subscription(&self) -> Value {
        self.post("/_control/subscriptions", json!({})).await
    }

    /// The key VAPID JWTs must verify with.
    pub async fn expect_vapid(&self, public_key: &str) {
        self.post("/_control/vapid", json!({"publicKey": public_key}))
            .await;
    }

    /// What pushes to `sub` are answered from now on.
    pub async fn answer(&self, sub: &str, status: u16, retry_after: Option<u64>) {
        let mut body = json!({"status": status});
        if let Some(r) = retry_after {
            body["retryAfter"] = json!(r);
        }
        self.post(&format!("/_control/answer/{sub}"), body).await;
    }

    /// Every push received so far, oldest first.
    pub async fn requests(&self) -> Vec<Value> {
        self.http
            .get(format!("{}/_control/requests", self.url))
            .send()
            .await
            .expect("push service requests")
            .json()
            .await
            .expect("JSON")
    }

    /// The pushes to `sub`.
    pub async fn requests_for(&self, sub: &str) -> Vec<Value> {
        self.requests()
            .await
            .into_iter()
            .filter(|r| r["sub"] == sub)
            .collect()
    }

    /// Waits (at most 20 s) until the pushes to `sub` satisfy `done`; returns them.
    pub async fn wait_for(
        &self,
        sub: &str,
        what: &str,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.requests_for(sub).await;
            if done(&got) {
                return got;
            }
            assert!(Instant::now() < deadline, "{what}: pushes so far {got:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
