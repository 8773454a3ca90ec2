//! The `Bridges` tag: the bridge list and dashboard, one platform's status and login flows,
//! the login process (start, step, wait) and logout (`/api/bridges`).

use reqwest::Method;
use serde_json::{json, Value};

use super::{Api, ApiResult, Reply};

#[derive(Clone, Copy)]
pub struct BridgesApi<'a>(Api<'a>);

impl<'a> Api<'a> {
    pub fn bridges(&self) -> BridgesApi<'a> {
        BridgesApi(*self)
    }
}

impl BridgesApi<'_> {
    async fn read(self, path: &str) -> ApiResult {
        self.0.get(&format!("/api/bridges{path}")).await.expect(200)
    }

    /// `GET /api/bridges`: `bridges`.
    pub async fn list(self) -> ApiResult {
        self.read("").await
    }

    /// `GET /api/bridges/configured`.
    pub async fn configured(self) -> ApiResult {
        self.read("/configured").await
    }

    /// `GET /api/bridges/dashboard`.
    pub async fn dashboard(self) -> ApiResult {
        self.read("/dashboard").await
    }

    /// `GET /api/bridges/chat-counts`.
    pub async fn chat_counts(self) -> ApiResult {
        self.read("/chat-counts").await
    }

    /// `GET /api/bridges/{platform}`.
    pub async fn platform(self, platform: &str) -> ApiResult {
        self.read(&format!("/{platform}")).await
    }

    /// `GET /api/bridges/{platform}/status`.
    pub async fn status(self, platform: &str) -> ApiResult {
        self.read(&format!("/{platform}/status")).await
    }

    /// `GET /api/bridges/{platform}/flows`.
    pub async fn flows(self, platform: &str) -> ApiResult {
        self.read(&format!("/{platform}/flows")).await
    }

    /// `POST /api/bridges/{platform}/{action}` with `body` (`login/start`, `login/step`,
    /// `login/wait`, `logout`, `connect`, `disconnect`).
    pub async fn post(self, platform: &str, action: &str, body: Value) -> ApiResult {
        let path = format!("/api/bridges/{platform}/{action}");
        self.0.post(&path, body).await.expect(200)
    }

    /// `POST /api/bridges/{platform}/{action}` without a body; the raw answer (for the
    /// deprecated routes' headers).
    pub async fn post_bare(self, platform: &str, action: &str) -> Reply {
        let path = format!("/api/bridges/{platform}/{action}");
        self.0.call(Method::POST, &path, None).await
    }

    /// `DELETE /api/bridges/{platform}`: removes the bridge connection.
    pub async fn remove(self, platform: &str) -> ApiResult {
        let path = format!("/api/bridges/{platform}");
        self.0.delete(&path).await.expect(200)
    }

    /// `POST /api/bridges/{platform}/login/start` with `flowId`.
    pub async fn start(self, platform: &str, flow: &str) -> ApiResult {
        self.post(platform, "login/start", json!({ "flowId": flow }))
            .await
    }

    /// `POST /api/bridges/{platform}/login/wait`: waits up to `secs` for the step.
    pub async fn wait(self, platform: &str, process: &str, step: &str, secs: u64) -> ApiResult {
        let body = json!({"loginProcessId": process, "stepId": step, "timeoutSeconds": secs});
        self.post(platform, "login/wait", body).await
    }

    /// `POST /api/bridges/{platform}/login/step`: answers `step` (a step object of a
    /// previous answer) with `data`.
    pub async fn step(self, platform: &str, process: &str, step: &Value, data: Value) -> ApiResult {
        let body = json!({
            "loginProcessId": process,
            "stepId": step["stepId"],
            "stepType": step["type"],
            "data": data,
        });
        self.post(platform, "login/step", body).await
    }
}
