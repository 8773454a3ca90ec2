//! A local APNs: `POST /3/device/{token}` over HTTP/2 (prior knowledge), checking the
//! provider JWT (ES256 with the test key, `kid`, `iss`, fresh `iat`), `apns-topic`,
//! `apns-push-type` and the payload; records every request and answers 410 Unregistered
//! for tokens marked dead.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use poem::http::{StatusCode, Version};
use poem::listener::{Acceptor, Listener, TcpListener};
use poem::web::{Data, Path};
use poem::{handler, post, EndpointExt, Request, Response, Route, Server};
use serde_json::{json, Value};

use crate::common::repo_root;

pub const KEY_ID: &str = "TESTKEY123";
pub const TEAM_ID: &str = "TESTTEAM12";
pub const BUNDLE_ID: &str = "org.example.switchboard.test";

#[derive(Debug, Clone)]
pub struct Recorded {
    pub token: String,
    pub http2: bool,
    /// The JWT verified with the test public key and carried the expected kid/iss/iat.
    pub jwt_ok: bool,
    pub topic: Option<String>,
    pub push_type: Option<String>,
    pub payload: Value,
    pub status: u16,
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    dead: Mutex<HashSet<String>>,
}

pub struct ApnsStandIn {
    pub url: String,
    shared: Arc<Shared>,
}

fn decoding_key() -> DecodingKey {
    use base64::Engine as _;
    let pem = std::fs::read_to_string(repo_root().join("tests/support/apns_standin_key.pub.pem"))
        .unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    // A P-256 SubjectPublicKeyInfo ends with the 65-byte uncompressed point.
    DecodingKey::from_ec_der(&der[der.len() - 65..])
}

fn jwt_ok(req: &Request) -> bool {
    let Some(auth) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let Some(jwt) = auth.strip_prefix("bearer ") else {
        return false;
    };
    let Ok(header) = jsonwebtoken::decode_header(jwt) else {
        return false;
    };
    let mut validation = Validation::new(Algorithm::ES256);
    validation.validate_exp = false;
    validation.set_required_spec_claims(&["iss", "iat"]);
    validation.set_issuer(&[TEAM_ID]);
    let Ok(data) = jsonwebtoken::decode::<Value>(jwt, &decoding_key(), &validation) else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let iat = data.claims["iat"].as_u64().unwrap_or(0);
    header.kid.as_deref() == Some(KEY_ID) && iat <= now + 5 && now < iat + 3600
}

#[handler]
async fn device(
    req: &Request,
    Path(token): Path<String>,
    body: String,
    shared: Data<&Arc<Shared>>,
) -> Response {
    let header = |n: &str| {
        req.headers()
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let payload: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let jwt_ok = jwt_ok(req);
    let dead = shared.dead.lock().unwrap().contains(&token);
    let payload_ok =
        payload["aps"]["alert"]["title"].is_string() && payload["aps"]["alert"]["body"].is_string();
    let (status, reason) = if !jwt_ok {
        (StatusCode::FORBIDDEN, Some("InvalidProviderToken"))
    } else if header("apns-topic").as_deref() != Some(BUNDLE_ID) {
        (StatusCode::BAD_REQUEST, Some("BadTopic"))
    } else if !payload_ok {
        (StatusCode::BAD_REQUEST, Some("PayloadEmpty"))
    } else if dead {
        (StatusCode::GONE, Some("Unregistered"))
    } else {
        (StatusCode::OK, None)
    };
    shared.requests.lock().unwrap().push(Recorded {
        token,
        http2: req.version() == Version::HTTP_2,
        jwt_ok,
        topic: header("apns-topic"),
        push_type: header("apns-push-type"),
        payload,
        status: status.as_u16(),
    });
    let builder = Response::builder()
        .status(status)
        .header("apns-id", uuid::Uuid::new_v4().to_string());
    match reason {
        None => builder.finish(),
        Some(r) => builder
            .content_type("application/json")
            .body(json!({"reason": r, "timestamp": 1_700_000_000_000u64}).to_string()),
    }
}

impl ApnsStandIn {
    pub async fn start() -> Self {
        let acceptor = TcpListener::bind("127.0.0.1:0")
            .into_acceptor()
            .await
            .unwrap();
        let addr = acceptor.local_addr()[0].as_socket_addr().cloned().unwrap();
        let shared = Arc::new(Shared::default());
        let app = Route::new()
            .at("/3/device/:token", post(device))
            .data(shared.clone());
        tokio::spawn(Server::new_with_acceptor(acceptor).run(app));
        Self {
            url: format!("http://{addr}"),
            shared,
        }
    }

    /// The `[push]` section pointing a server at this stand-in.
    pub fn config(&self) -> String {
        format!(
            "[push]\nkey_file = \"{}\"\nkey_id = \"{KEY_ID}\"\nteam_id = \"{TEAM_ID}\"\nbundle_id = \"{BUNDLE_ID}\"\nenvironment = \"development\"\nendpoint = \"{}\"\n\n",
            repo_root().join("tests/support/apns_standin_key.p8").display(),
            self.url
        )
    }

    pub fn mark_dead(&self, token: &str) {
        self.shared.dead.lock().unwrap().insert(token.to_owned());
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    pub fn requests_for(&self, token: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.token == token)
            .collect()
    }

    /// Waits until `pred` holds for the requests to `token`.
    pub async fn wait_for(
        &self,
        token: &str,
        what: &str,
        pred: impl Fn(&[Recorded]) -> bool,
    ) -> Vec<Recorded> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.requests_for(token);
            if pred(&got) {
                return got;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "stand-in never saw {what}; got {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
