//! Push devices: registration rules, the push configuration, test pushes through a local
//! APNs stand-in (HTTP/2 cleartext, JWT verified with the public half of the throw-away
//! key in tests/support), and removal of tokens APNs reports dead.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

/// A local APNs: `POST /3/device/{token}` over HTTP/2 (prior knowledge), checking the
/// provider JWT (ES256 with the test key, `kid`, `iss`, fresh `iat`), `apns-topic`,
/// `apns-push-type` and the payload; records every request and answers 410 Unregistered
/// for tokens marked dead.
pub mod standin {
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
        let pem =
            std::fs::read_to_string(repo_root().join("tests/support/apns_standin_key.pub.pem"))
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
        let payload_ok = payload["aps"]["alert"]["title"].is_string()
            && payload["aps"]["alert"]["body"].is_string();
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
}

use standin::ApnsStandIn;

/// A random valid APNs-like token (64 hex characters).
pub fn device_token() -> String {
    let a = uuid::Uuid::new_v4().simple().to_string();
    let b = uuid::Uuid::new_v4().simple().to_string();
    format!("{a}{b}")
}

pub async fn register(app: &TestApp, token: &str, device_token: &str) -> String {
    let resp = app
        .post_json(
            "/api/devices/register",
            Some(token),
            json!({"token": device_token, "deviceName": "Test phone", "deviceModel": "iPhone15,2",
                   "osVersion": "17.4", "appVersion": "2.0.0"}),
        )
        .await;
    let body = expect_json(resp, 200).await;
    body["tokenId"].as_str().expect("tokenId").to_owned()
}

async fn devices(app: &TestApp, token: &str) -> Vec<Value> {
    expect_json(app.get_auth("/api/devices", token).await, 200).await["devices"]
        .as_array()
        .expect("devices")
        .clone()
}

#[tokio::test]
async fn registration_is_validated_and_idempotent_and_never_shows_the_token() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("dev-reg").await;
    let t = &user.access_token;

    // Push not configured: the documented status and 503 for a test push.
    let status = expect_json(app.get_auth("/api/devices/status", t).await, 200).await;
    assert_eq!(
        status,
        json!({"configured": false, "environment": null, "bundleId": null})
    );

    let bad = [
        json!({"token": "a".repeat(63)}),
        json!({"token": "a".repeat(201)}),
        json!({"token": format!("{}xyz", "a".repeat(61))}),
        json!({"token": device_token(), "deviceName": "n".repeat(101)}),
        json!({"token": device_token(), "deviceModel": "m".repeat(51)}),
        json!({"token": device_token(), "osVersion": "1".repeat(21)}),
        json!({"token": device_token(), "appVersion": "1".repeat(21)}),
        json!({"token": device_token(), "environment": "staging"}),
        json!({"deviceName": "no token"}),
        json!({"token": 42}),
    ];
    for body in bad {
        let resp = app
            .post_json("/api/devices/register", Some(t), body.clone())
            .await;
        expect_error(resp, 400, "invalid_request").await;
    }
    assert!(devices(&app, t).await.is_empty());

    // Exactly the limits are fine; upper-case hex is the same token.
    let dt = device_token();
    let resp = app
        .post_json(
            "/api/devices/register",
            Some(t),
            json!({"token": dt.to_uppercase(), "deviceName": "n".repeat(100), "deviceModel": "m".repeat(50),
                   "osVersion": "1".repeat(20), "appVersion": "2".repeat(20), "environment": "development"}),
        )
        .await;
    let first = expect_json(resp, 200).await;
    assert!(first["message"].is_string());
    let token_id = first["tokenId"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&token_id).is_ok());

    // Registering again updates the same device.
    let again = register(&app, t, &dt).await;
    assert_eq!(again, token_id);
    let list = devices(&app, t).await;
    assert_eq!(list.len(), 1);
    let d = &list[0];
    assert_eq!(d["tokenId"], token_id);
    assert_eq!(d["deviceName"], "Test phone");
    assert_eq!(d["deviceModel"], "iPhone15,2");
    assert_eq!(d["osVersion"], "17.4");
    assert_eq!(d["appVersion"], "2.0.0");
    assert_eq!(d["environment"], "production", "default without [push]");
    assert_eq!(d["tokenSuffix"], &dt[dt.len() - 6..]);
    assert!(d["createdAt"].is_string());
    assert!(d["lastUsedAt"].is_null());
    assert!(
        !d.to_string().contains(&dt),
        "the raw token is never returned"
    );

    // The token is sealed at rest: not in the database files.
    for name in ["switchboard.db", "switchboard.db-wal"] {
        let bytes = std::fs::read(app.data_dir().join(name)).unwrap_or_default();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(
            !hay.contains(&dt) && !hay.contains(&dt.to_uppercase()),
            "token in {name}"
        );
    }

    // Test push without [push]: 503.
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{token_id}/test"),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 503, "push_not_configured").await;

    // Unregister: 400 malformed, 404 unknown, then gone.
    let resp = app
        .post_json("/api/devices/unregister", Some(t), json!({"token": "zz"}))
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .post_json(
            "/api/devices/unregister",
            Some(t),
            json!({"token": device_token()}),
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let resp = app
        .post_json("/api/devices/unregister", Some(t), json!({"token": dt}))
        .await;
    expect_json(resp, 200).await;
    assert!(devices(&app, t).await.is_empty());
    let resp = app
        .post_json("/api/devices/unregister", Some(t), json!({"token": dt}))
        .await;
    expect_error(resp, 404, "not_found").await;

    // Delete by tokenId: 400 malformed, 404 unknown / other user's, 200.
    let id = register(&app, t, &dt).await;
    assert_ne!(id, token_id, "a new registration after removal");
    let resp = app
        .send(Method::DELETE, "/api/devices/not-a-uuid", Some(t), None)
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/devices/{}", uuid::Uuid::new_v4()),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let other = app.sign_up("dev-other").await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/devices/{id}"),
            Some(&other.access_token),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{id}/test"),
            Some(&other.access_token),
            None,
        )
        .await;
    expect_error(resp, 503, "push_not_configured").await;
    let resp = app
        .send(Method::DELETE, &format!("/api/devices/{id}"), Some(t), None)
        .await;
    expect_json(resp, 200).await;
    assert!(devices(&app, t).await.is_empty());

    // A token registered by another user moves to them.
    let mine = register(&app, t, &dt).await;
    let theirs = register(&app, &other.access_token, &dt).await;
    assert_ne!(mine, theirs);
    assert!(devices(&app, t).await.is_empty());
    assert_eq!(devices(&app, &other.access_token).await.len(), 1);

    // Personal tokens may not touch devices.
    let created = app
        .post_json("/api/developer/tokens", Some(t), json!({"name": "script"}))
        .await;
    let pat = expect_json(created, 201).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    for (method, path) in [
        (Method::GET, "/api/devices".to_owned()),
        (Method::GET, "/api/devices/status".to_owned()),
        (Method::POST, "/api/devices/register".to_owned()),
        (Method::DELETE, format!("/api/devices/{mine}")),
    ] {
        let resp = app
            .send(method, &path, Some(&pat), Some(json!({"token": dt})))
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    // Unauthenticated: 401.
    let resp = app.get("/api/devices").await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn test_pushes_reach_apns_with_a_valid_jwt_and_dead_tokens_are_removed() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("dev-push").await;
    let t = &user.access_token;

    let status = expect_json(app.get_auth("/api/devices/status", t).await, 200).await;
    assert_eq!(
        status,
        json!({"configured": true, "environment": "development", "bundleId": standin::BUNDLE_ID})
    );

    let good = device_token();
    let good_id = register(&app, t, &good).await;
    let list = devices(&app, t).await;
    assert_eq!(
        list[0]["environment"], "development",
        "defaults to the server's environment"
    );

    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{good_id}/test"),
            Some(t),
            None,
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert!(body["message"].is_string());
    let seen = apns.requests_for(&good);
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert!(r.http2, "APNs is spoken to over HTTP/2");
    assert!(r.jwt_ok, "provider JWT verifies (ES256, kid, iss, iat)");
    assert_eq!(r.topic.as_deref(), Some(standin::BUNDLE_ID));
    assert_eq!(r.push_type.as_deref(), Some("alert"));
    assert!(r.payload["aps"]["alert"]["title"].is_string());
    assert_eq!(r.payload["aps"]["sound"], "default");
    assert_eq!(r.status, 200);
    let list = devices(&app, t).await;
    assert!(
        list[0]["lastUsedAt"].is_string(),
        "a delivered push is recorded"
    );

    // A second push reuses the cached provider token and still verifies.
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{good_id}/test"),
            Some(t),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    let seen = apns.requests_for(&good);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|r| r.jwt_ok));

    // A token APNs reports Unregistered: 502 with the reason, and the device is gone.
    let dead = device_token();
    let dead_id = register(&app, t, &dead).await;
    apns.mark_dead(&dead);
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{dead_id}/test"),
            Some(t),
            None,
        )
        .await;
    let err = expect_error(resp, 502, "push_rejected").await;
    assert!(
        err["message"].as_str().unwrap().contains("Unregistered"),
        "{err}"
    );
    let ids: Vec<Value> = devices(&app, t)
        .await
        .iter()
        .map(|d| d["tokenId"].clone())
        .collect();
    assert_eq!(ids, vec![json!(good_id)]);
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{dead_id}/test"),
            Some(t),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let resp = app
        .send(Method::POST, "/api/devices/nope/test", Some(t), None)
        .await;
    expect_error(resp, 400, "invalid_request").await;
}

async fn matrix(method: Method, path: &str, token: &str, body: Value) -> Value {
    let resp = reqwest::Client::new()
        .request(method, format!("{}{path}", synapse().base_url))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let v: Value = resp.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{path}: {status} {v}");
    v
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[tokio::test]
async fn an_important_incoming_message_is_pushed_without_its_text() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let reader = app.sign_up("dev-important").await;
    let sender = app.sign_up("dev-sender").await;
    let device = device_token();
    register(&app, &reader.access_token, &device).await;
    let reader_mx = reader.matrix_access_token.clone().unwrap();
    let sender_mx = sender.matrix_access_token.clone().unwrap();
    let reader_id = reader.user["matrixUserId"].as_str().unwrap().to_owned();

    let room = matrix(
        Method::POST,
        "/_matrix/client/v3/createRoom",
        &sender_mx,
        json!({"preset": "private_chat", "name": "team", "invite": [reader_id]}),
    )
    .await["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    matrix(
        Method::POST,
        &format!("/_matrix/client/v3/join/{}", enc(&room)),
        &reader_mx,
        json!({}),
    )
    .await;

    // Unimportant first (group chat, no mention): no push.
    let send = |body: String| {
        let url = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            enc(&room),
            uuid::Uuid::new_v4()
        );
        let sender_mx = sender_mx.clone();
        async move {
            matrix(
                Method::PUT,
                &url,
                &sender_mx,
                json!({"msgtype": "m.text", "body": body}),
            )
            .await
        }
    };
    send("just saying hi".to_owned()).await;
    // Mention + urgency: 0.10 + 0.35 + 0.30 = 0.75.
    let secret = format!("the vault code is {}", uuid::Uuid::new_v4().simple());
    let event = send(format!("{reader_id} urgent: {secret}")).await;

    let pushes = apns
        .wait_for(&device, "the important-message push", |r| !r.is_empty())
        .await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    // Read again after the pause, so a later (second) push would be seen.
    drop(pushes);
    let pushes = apns.requests_for(&device);
    assert_eq!(
        pushes.len(),
        1,
        "only the important message is pushed: {pushes:?}"
    );
    let p = &pushes[0];
    assert_eq!(p.payload["type"], "message");
    assert_eq!(p.payload["roomId"], room.as_str());
    assert_eq!(p.payload["eventId"], event["event_id"]);
    assert!(
        !p.payload.to_string().contains(&secret),
        "no message text in the push"
    );
    assert!(p.jwt_ok);
}

#[tokio::test]
async fn push_keeps_working_after_the_user_deletes_their_keys() {
    use base64::Engine as _;
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("dev-shred").await;
    let t = &user.access_token;
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let resp = app
        .post_json("/api/keys/register", Some(t), json!({"publicKey": key}))
        .await;
    expect_json(resp, 200).await;
    let token = device_token();
    let id = register(&app, t, &token).await;
    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(t)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    let resp = app
        .send(
            Method::POST,
            &format!("/api/devices/{id}/test"),
            Some(t),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    assert_eq!(
        apns.requests_for(&token).len(),
        1,
        "the push token was re-sealed, not shredded"
    );
    let list = devices(&app, t).await;
    assert!(list[0]["tokenSuffix"].is_string(), "{list:?}");
}
