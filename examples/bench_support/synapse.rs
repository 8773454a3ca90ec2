//! The real Synapse of `scripts/bench.sh`: shared-secret registration, rooms, messages.
//!
//! Used by `bench_messages` for Synapse's own `/messages` row and the many-users mode.

use futures_util::StreamExt as _;
use hmac::{KeyInit as _, Mac as _};
use serde_json::{json, Value};

/// A running Synapse, named by `BENCH_MATRIX_URL` and `BENCH_MATRIX_SHARED_SECRET`
/// (`scripts/bench.sh` sets both after starting one with `scripts/synapse.sh`).
#[derive(Clone)]
pub struct Homeserver {
    pub base: String,
    pub server_name: String,
    pub secret: String,
    pub client: reqwest::Client,
}

/// A Matrix account on it.
#[derive(Clone)]
pub struct Account {
    pub user_id: String,
    pub token: String,
    /// The device the registration created: the seeded Switchboard user's sync device (its
    /// end-to-end encryption identity), as sign-in leaves it.
    pub device_id: String,
}

impl Homeserver {
    pub fn from_env() -> Option<Self> {
        let base = std::env::var("BENCH_MATRIX_URL").ok()?;
        let secret = std::env::var("BENCH_MATRIX_SHARED_SECRET").ok()?;
        let server_name =
            std::env::var("BENCH_MATRIX_SERVER_NAME").unwrap_or_else(|_| "localhost".into());
        let client = reqwest::Client::builder()
            .http1_only()
            .build()
            .expect("client");
        Some(Self {
            base: base.trim_end_matches('/').to_owned(),
            server_name,
            secret,
            client,
        })
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Value {
        // Synapse may still answer 429 on a busy 2-core machine: retry a few times.
        for attempt in 0..20 {
            let mut req = self
                .client
                .request(method.clone(), format!("{}{path}", self.base));
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            if let Some(b) = &body {
                req = req.json(b);
            }
            let resp = req.send().await.expect("synapse request");
            let status = resp.status();
            let v: Value = resp.json().await.unwrap_or(Value::Null);
            if status.is_success() {
                return v;
            }
            if status.as_u16() == 429 && attempt < 19 {
                let ms = v["retry_after_ms"].as_u64().unwrap_or(200);
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                continue;
            }
            panic!("{method} {path}: {status} {v}");
        }
        unreachable!()
    }

    /// Registers `localpart` through `/_synapse/admin/v1/register` (HMAC-SHA1 over nonce,
    /// user, password and the admin flag).
    pub async fn register(&self, localpart: &str, password: &str) -> Account {
        let path = "/_synapse/admin/v1/register";
        let nonce = self.call(reqwest::Method::GET, path, None, None).await["nonce"]
            .as_str()
            .expect("nonce")
            .to_owned();
        let mut mac =
            hmac::Hmac::<sha1::Sha1>::new_from_slice(self.secret.as_bytes()).expect("key");
        mac.update(format!("{nonce}\0{localpart}\0{password}\0notadmin").as_bytes());
        let body = json!({
            "nonce": nonce, "username": localpart, "password": password, "admin": false,
            "mac": hex::encode(mac.finalize().into_bytes()),
        });
        let v = self
            .call(reqwest::Method::POST, path, None, Some(body))
            .await;
        Account {
            user_id: v["user_id"].as_str().expect("user_id").to_owned(),
            token: v["access_token"].as_str().expect("access_token").to_owned(),
            device_id: v["device_id"].as_str().expect("device_id").to_owned(),
        }
    }

    pub async fn create_room(&self, who: &Account, name: &str) -> String {
        self.create_room_with(who, name, false).await
    }

    /// A private room; `encrypted` starts it with `m.room.encryption` (Megolm), as a
    /// bridge's portal room or an Element chat with encryption on is.
    pub async fn create_room_with(&self, who: &Account, name: &str, encrypted: bool) -> String {
        let mut body = json!({"preset": "private_chat", "name": name});
        if encrypted {
            body["initial_state"] = json!([{
                "type": "m.room.encryption", "state_key": "",
                "content": {"algorithm": "m.megolm.v1.aes-sha2"},
            }]);
        }
        let v = self
            .call(
                reqwest::Method::POST,
                "/_matrix/client/v3/createRoom",
                Some(&who.token),
                Some(body),
            )
            .await;
        v["room_id"].as_str().expect("room_id").to_owned()
    }

    /// `who` invites `user_id` into `room`, and `guest` (that user) joins it.
    pub async fn invite_and_join(&self, who: &Account, room: &str, guest: &Account) {
        let room_path = switchboard::clients::matrix::encode(room);
        let invite = format!("/_matrix/client/v3/rooms/{room_path}/invite");
        let body = json!({"user_id": guest.user_id});
        self.call(reqwest::Method::POST, &invite, Some(&who.token), Some(body))
            .await;
        let join = format!("/_matrix/client/v3/join/{room_path}");
        self.call(
            reqwest::Method::POST,
            &join,
            Some(&guest.token),
            Some(json!({})),
        )
        .await;
    }

    /// `who` starts (`typing`) or stops typing in `room`: one `m.typing` change for every
    /// member's sync.
    pub async fn typing(&self, who: &Account, room: &str, typing: bool) {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/typing/{}",
            switchboard::clients::matrix::encode(room),
            switchboard::clients::matrix::encode(&who.user_id)
        );
        let body = json!({"typing": typing, "timeout": 30_000});
        self.call(reqwest::Method::PUT, &path, Some(&who.token), Some(body))
            .await;
    }

    /// Sends `count` text messages into `room`, `parallel` at a time.
    pub async fn fill(&self, who: &Account, room: &str, count: u64, parallel: usize) {
        let run = uuid::Uuid::new_v4().simple().to_string();
        futures_util::stream::iter(0..count)
            .map(|i| {
                let body = format!(
                    "Message {i}: are we still meeting at the usual place tomorrow around noon?"
                );
                let txn = format!("{run}{i}");
                async move { self.send_text(who, room, &txn, &body).await }
            })
            .buffer_unordered(parallel)
            .collect::<Vec<()>>()
            .await;
    }

    /// Sends one text message into `room` with the transaction id `txn`.
    pub async fn send_text(&self, who: &Account, room: &str, txn: &str, body: &str) {
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{txn}",
            switchboard::clients::matrix::encode(room)
        );
        let body = json!({"msgtype": "m.text", "body": body});
        self.call(reqwest::Method::PUT, &path, Some(&who.token), Some(body))
            .await;
    }

    /// Synapse's own history page: `GET /rooms/{roomId}/messages?dir=b&limit=N`.
    pub fn messages_url(&self, room: &str, limit: u64) -> String {
        format!(
            "{}/_matrix/client/v3/rooms/{}/messages?dir=b&limit={limit}",
            self.base,
            switchboard::clients::matrix::encode(room)
        )
    }
}
