//! Matrix users driven directly on the test Synapse (client-server API with reqwest):
//! a second party that creates rooms, invites, sends, edits and redacts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hmac::{KeyInit, Mac};
use serde_json::{json, Value};

use super::synapse;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A Matrix account and its access token.
#[derive(Debug, Clone)]
pub struct MatrixUser {
    pub user_id: String,
    pub access_token: String,
    http: reqwest::Client,
    base: String,
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Registers a fresh user through Synapse's shared-secret admin API
/// (HMAC-SHA1 over `nonce\0user\0password\0notadmin`).
pub async fn register(prefix: &str) -> MatrixUser {
    let s = synapse();
    let http = client();
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let localpart = format!(
        "{}_{}_{n}_{nanos}",
        prefix.to_lowercase(),
        std::process::id()
    );
    let password = format!("pw-{localpart}");
    let url = format!("{}/_synapse/admin/v1/register", s.base_url);
    let nonce: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
    let nonce = nonce["nonce"].as_str().expect("nonce").to_owned();
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(s.shared_secret.as_bytes()).unwrap();
    mac.update(format!("{nonce}\0{localpart}\0{password}\0notadmin").as_bytes());
    let body = json!({
        "nonce": nonce,
        "username": localpart,
        "password": password,
        "admin": false,
        "mac": hex::encode(mac.finalize().into_bytes()),
    });
    let resp = http.post(&url).json(&body).send().await.unwrap();
    let status = resp.status();
    let session: Value = resp.json().await.unwrap();
    assert!(status.is_success(), "registration failed: {session}");
    MatrixUser {
        user_id: session["user_id"].as_str().unwrap().to_owned(),
        access_token: session["access_token"].as_str().unwrap().to_owned(),
        http,
        base: s.base_url.clone(),
    }
}

/// The account `@localpart:<server>` with password `pw-<localpart>`: registered the first
/// time (shared-secret registration), logged in afterwards (the test Synapse outlives
/// runs). Fixed names such as the bridge emulator's bot use it.
pub async fn register_or_login(localpart: &str) -> MatrixUser {
    let s = synapse();
    let http = client();
    let password = format!("pw-{localpart}");
    let url = format!("{}/_synapse/admin/v1/register", s.base_url);
    let nonce: Value = http.get(&url).send().await.unwrap().json().await.unwrap();
    let nonce = nonce["nonce"].as_str().expect("nonce").to_owned();
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(s.shared_secret.as_bytes()).unwrap();
    mac.update(format!("{nonce}\0{localpart}\0{password}\0notadmin").as_bytes());
    let body = json!({
        "nonce": nonce, "username": localpart, "password": password, "admin": false,
        "mac": hex::encode(mac.finalize().into_bytes()),
    });
    let resp = http.post(&url).json(&body).send().await.unwrap();
    let mut session: Value = resp.json().await.unwrap();
    if session["errcode"] == "M_USER_IN_USE" {
        let login = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": localpart},
            "password": password,
        });
        let url = format!("{}/_matrix/client/v3/login", s.base_url);
        session = http
            .post(&url)
            .json(&login)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    }
    let token = session["access_token"]
        .as_str()
        .unwrap_or_else(|| panic!("{localpart}: {session}"));
    MatrixUser {
        user_id: session["user_id"].as_str().unwrap().to_owned(),
        access_token: token.to_owned(),
        http,
        base: s.base_url.clone(),
    }
}

fn enc(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

impl MatrixUser {
    /// Acts as an existing account (e.g. a switchboard user's own Matrix account).
    pub fn from_token(user_id: &str, access_token: &str) -> Self {
        Self {
            user_id: user_id.to_owned(),
            access_token: access_token.to_owned(),
            http: client(),
            base: synapse().base_url.clone(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/_matrix/client/v3/{path}", self.base);
        let mut req = self
            .http
            .request(method.clone(), url)
            .bearer_auth(&self.access_token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("homeserver request");
        let status = resp.status();
        let value: Value = resp.json().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "{method} {path} answered {status}: {value}"
        );
        value
    }

    /// Creates a private room inviting `invite`; returns its id.
    pub async fn create_room(
        &self,
        name: Option<&str>,
        invite: &[&str],
        is_direct: bool,
    ) -> String {
        let mut body = json!({"preset": "private_chat", "invite": invite, "is_direct": is_direct});
        if let Some(n) = name {
            body["name"] = json!(n);
        }
        let created = self
            .call(reqwest::Method::POST, "createRoom", Some(body))
            .await;
        created["room_id"].as_str().expect("room_id").to_owned()
    }

    /// `POST /createRoom` with `body` as given (e.g. with `initial_state`); returns its id.
    pub async fn create_room_with(&self, body: Value) -> String {
        let created = self
            .call(reqwest::Method::POST, "createRoom", Some(body))
            .await;
        created["room_id"].as_str().expect("room_id").to_owned()
    }

    /// Sets a state event; returns its id.
    pub async fn send_state(
        &self,
        room_id: &str,
        event_type: &str,
        state_key: &str,
        content: Value,
    ) -> String {
        let path = format!(
            "rooms/{}/state/{}/{}",
            enc(room_id),
            enc(event_type),
            enc(state_key)
        );
        let sent = self.call(reqwest::Method::PUT, &path, Some(content)).await;
        sent["event_id"].as_str().expect("event_id").to_owned()
    }

    /// `user_id`'s membership in `room_id` as this user sees it (`None`: never a member).
    pub async fn membership_of(&self, room_id: &str, user_id: &str) -> Option<String> {
        let url = format!(
            "{}/_matrix/client/v3/rooms/{}/state/m.room.member/{}",
            self.base,
            enc(room_id),
            enc(user_id)
        );
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.access_token)
            .send()
            .await
            .expect("homeserver request");
        if resp.status() == 404 {
            return None;
        }
        assert!(
            resp.status().is_success(),
            "member state: {}",
            resp.status()
        );
        let content: Value = resp.json().await.expect("JSON");
        content["membership"].as_str().map(str::to_owned)
    }

    /// Who has a read receipt (`m.read` or `m.read.private`) in `room_id`, as this user's
    /// initial `/sync` shows them.
    pub async fn receipt_readers(&self, room_id: &str) -> Vec<String> {
        let filter = json!({
            "presence": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
            "room": {"rooms": [room_id], "timeline": {"limit": 1}, "state": {"types": []},
                     "ephemeral": {"types": ["m.receipt"]}},
        });
        let url = reqwest::Url::parse_with_params(
            &format!("{}/_matrix/client/v3/sync", self.base),
            &[("timeout", "0"), ("filter", filter.to_string().as_str())],
        )
        .expect("sync URL");
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.access_token)
            .send()
            .await
            .expect("homeserver request");
        assert!(resp.status().is_success(), "sync: {}", resp.status());
        let body: Value = resp.json().await.expect("JSON");
        let mut readers = Vec::new();
        let events = &body["rooms"]["join"][room_id]["ephemeral"]["events"];
        for ev in events.as_array().into_iter().flatten() {
            for receipts in ev["content"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(_, r)| r)
            {
                for kind in ["m.read", "m.read.private"] {
                    readers.extend(
                        receipts[kind]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(u, _)| u.clone()),
                    );
                }
            }
        }
        readers
    }

    pub async fn invite(&self, room_id: &str, user_id: &str) {
        let path = format!("rooms/{}/invite", enc(room_id));
        self.call(
            reqwest::Method::POST,
            &path,
            Some(json!({"user_id": user_id})),
        )
        .await;
    }

    pub async fn join(&self, room_id: &str) {
        let path = format!("join/{}", enc(room_id));
        self.call(reqwest::Method::POST, &path, Some(json!({})))
            .await;
    }

    /// Sends an event; returns its id.
    pub async fn send(&self, room_id: &str, event_type: &str, content: Value) -> String {
        let txn = format!("t{}", COUNTER.fetch_add(1, Ordering::SeqCst));
        let path = format!("rooms/{}/send/{}/{txn}", enc(room_id), enc(event_type));
        let sent = self.call(reqwest::Method::PUT, &path, Some(content)).await;
        sent["event_id"].as_str().expect("event_id").to_owned()
    }

    pub async fn send_text(&self, room_id: &str, body: &str) -> String {
        self.send(
            room_id,
            "m.room.message",
            json!({"msgtype": "m.text", "body": body}),
        )
        .await
    }

    /// Replaces the text of `event_id` (an `m.replace` edit); returns the edit's id.
    pub async fn edit(&self, room_id: &str, event_id: &str, body: &str) -> String {
        let content = json!({
            "msgtype": "m.text",
            "body": format!("* {body}"),
            "m.new_content": {"msgtype": "m.text", "body": body},
            "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
        });
        self.send(room_id, "m.room.message", content).await
    }

    /// Uploads `bytes` (`POST /_matrix/media/v3/upload`); returns the `mxc://` URI.
    pub async fn upload(&self, bytes: Vec<u8>, content_type: &str) -> String {
        let url = format!("{}/_matrix/media/v3/upload", self.base);
        let resp = self
            .http
            .post(url)
            .bearer_auth(&self.access_token)
            .header("Content-Type", content_type)
            .body(bytes)
            .send()
            .await
            .expect("upload");
        let status = resp.status();
        let v: Value = resp.json().await.unwrap_or_default();
        assert!(status.is_success(), "upload answered {status}: {v}");
        v["content_uri"].as_str().expect("content_uri").to_owned()
    }

    /// Downloads `mxc` through the authenticated media API: (content type, bytes).
    pub async fn download(&self, mxc: &str) -> (String, Vec<u8>) {
        let rest = mxc.strip_prefix("mxc://").expect("mxc URI");
        let url = format!("{}/_matrix/client/v1/media/download/{rest}", self.base);
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.access_token)
            .send()
            .await
            .expect("download");
        assert!(resp.status().is_success(), "download: {}", resp.status());
        let ctype = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (ctype, resp.bytes().await.unwrap().to_vec())
    }

    /// `GET /rooms/{roomId}/event/{eventId}` as this user.
    pub async fn event(&self, room_id: &str, event_id: &str) -> Value {
        let path = format!("rooms/{}/event/{}", enc(room_id), enc(event_id));
        self.call(reqwest::Method::GET, &path, None).await
    }

    /// Redacts `event_id`; returns the redaction's id.
    pub async fn redact(&self, room_id: &str, event_id: &str) -> String {
        let txn = format!("r{}", COUNTER.fetch_add(1, Ordering::SeqCst));
        let path = format!("rooms/{}/redact/{}/{txn}", enc(room_id), enc(event_id));
        let sent = self
            .call(reqwest::Method::PUT, &path, Some(json!({"reason": "test"})))
            .await;
        sent["event_id"].as_str().expect("event_id").to_owned()
    }

    pub async fn set_display_name(&self, name: &str) {
        let path = format!("profile/{}/displayname", enc(&self.user_id));
        self.call(
            reqwest::Method::PUT,
            &path,
            Some(json!({"displayname": name})),
        )
        .await;
    }

    /// Sets the profile's avatar (Synapse updates the member state of every joined room).
    pub async fn set_avatar_url(&self, mxc: &str) {
        let path = format!("profile/{}/avatar_url", enc(&self.user_id));
        self.call(
            reqwest::Method::PUT,
            &path,
            Some(json!({"avatar_url": mxc})),
        )
        .await;
    }

    /// `displayname` of `user_id`'s member state in `room_id` as this user sees it.
    pub async fn member_display_name(&self, room_id: &str, user_id: &str) -> Option<String> {
        let path = format!(
            "rooms/{}/state/m.room.member/{}",
            enc(room_id),
            enc(user_id)
        );
        let state = self.call(reqwest::Method::GET, &path, None).await;
        state["displayname"].as_str().map(str::to_owned)
    }

    /// The homeserver's own thumbnail of `mxc` at `width`×`height` (`method=scale`), as this
    /// user: (status, bytes).
    pub async fn thumbnail(&self, mxc: &str, width: u32, height: u32) -> (u16, Vec<u8>) {
        let rest = mxc.strip_prefix("mxc://").expect("mxc URI");
        let url = format!(
            "{}/_matrix/client/v1/media/thumbnail/{rest}?width={width}&height={height}&method=scale",
            self.base
        );
        let resp = self
            .http
            .get(url)
            .bearer_auth(&self.access_token)
            .send()
            .await
            .expect("thumbnail");
        let status = resp.status().as_u16();
        (status, resp.bytes().await.unwrap_or_default().to_vec())
    }

    /// The content of a state event of `room_id` (panics when there is none).
    pub async fn state(&self, room_id: &str, event_type: &str, state_key: &str) -> Value {
        let path = format!(
            "rooms/{}/state/{}/{}",
            enc(room_id),
            enc(event_type),
            enc(state_key)
        );
        self.call(reqwest::Method::GET, &path, None).await
    }

    /// Every current state event of `room_id`.
    pub async fn room_state(&self, room_id: &str) -> Vec<Value> {
        let path = format!("rooms/{}/state", enc(room_id));
        let all = self.call(reqwest::Method::GET, &path, None).await;
        all.as_array().cloned().unwrap_or_default()
    }

    pub async fn joined_members(&self, room_id: &str) -> Vec<String> {
        let path = format!("rooms/{}/joined_members", enc(room_id));
        let joined = self.call(reqwest::Method::GET, &path, None).await;
        joined["joined"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Waits until `user_id` has joined `room_id` (as this user sees it).
    pub async fn wait_for_member(&self, room_id: &str, user_id: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            if self
                .joined_members(room_id)
                .await
                .iter()
                .any(|m| m == user_id)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{user_id} did not join {room_id} in {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
