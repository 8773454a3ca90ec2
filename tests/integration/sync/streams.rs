//! `GET /api/sync` streams end with their credential (revocation, expiry, lapsed
//! subscription), at most 8 are open per user, and each user's replay window is their own.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::matrix;
use crate::common::*;
use crate::server::admin::{admin_app, put_subscription, user_id};
use crate::sync::{is_message_created, open_sse, Sse, WAIT};
use crate::tokens::create_token;

/// docs/security.md: a stream ends within this long of its credential ending.
const ENDS_WITHIN: Duration = Duration::from_secs(5);

/// The stream stays open while its credential is good: long enough for the server's
/// periodic re-check (every second) to have run at least once.
async fn assert_stays_open(sse: &mut Sse) {
    assert!(
        !sse.ends_within(Duration::from_millis(2500)).await,
        "the stream ended while its credential was still good"
    );
}

#[tokio::test]
async fn a_stream_ends_within_five_seconds_of_its_personal_token_being_revoked() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sse-revoke").await;
    let token = create_token(&app, &user, json!({"name": "streamer"})).await;
    let mut sse = open_sse(&app, &token.token, None).await;
    assert_stays_open(&mut sse).await;

    app.user(&user).tokens().revoke(&token.id).await.unwrap();
    let started = Instant::now();
    assert!(
        sse.ends_within(ENDS_WITHIN).await,
        "the stream of a revoked token is still open after {ENDS_WITHIN:?}"
    );
    eprintln!("stream ended {:?} after the revocation", started.elapsed());
    // Reconnecting is refused by the gate.
    let resp = app.get_auth("/api/sync", &token.token).await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_stream_ends_within_five_seconds_of_its_access_token_expiring() {
    let ttl = Duration::from_secs(4);
    let app = TestApp::start_with_mail_and("[auth]\naccess_token_ttl = \"4s\"\n\n".into()).await;
    let user = app.sign_up("sse-expiry").await;
    let issued = Instant::now();
    let mut sse = open_sse(&app, &user.access_token, None).await;
    assert!(
        sse.ends_within(ttl + ENDS_WITHIN).await,
        "the stream of an expired access token is still open {:?} after it was issued",
        issued.elapsed()
    );
    let ended = issued.elapsed();
    eprintln!("stream ended {ended:?} after the {ttl:?} token was issued");
    // It ended because the token expired, not before (exp has one-second granularity).
    assert!(
        ended >= ttl - Duration::from_secs(1),
        "ended after {ended:?}"
    );
    let resp = app.get_auth("/api/sync", &user.access_token).await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_stream_ends_within_five_seconds_of_the_subscription_lapsing() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("sse-lapse").await;
    let uid = user_id(&user);
    let token = create_token(&app, &user, json!({"name": "streamer"})).await;
    let mut sse = open_sse(&app, &token.token, None).await;
    assert_stays_open(&mut sse).await;

    put_subscription(&app, &admin, &uid, json!({"active": false}))
        .await
        .unwrap();
    assert!(
        sse.ends_within(ENDS_WITHIN).await,
        "the stream is still open {ENDS_WITHIN:?} after the subscription lapsed"
    );
    let resp = app.get_auth("/api/sync", &token.token).await;
    expect_error(resp, 403, "subscription_expired").await;

    // Renewed, the same token streams again, and a lapse set by the CLI (another
    // process) ends the stream too.
    put_subscription(&app, &admin, &uid, json!({"active": true}))
        .await
        .unwrap();
    let mut sse = open_sse(&app, &token.token, None).await;
    assert_stays_open(&mut sse).await;
    crate::server::admin::user_cli(&app, &["subscription", &uid, "--lapse"]);
    assert!(
        sse.ends_within(ENDS_WITHIN).await,
        "the stream is still open {ENDS_WITHIN:?} after the CLI lapsed the subscription"
    );
}

/// Opens `GET /api/sync` and returns the response (the open stream while it is held).
async fn raw_stream(http: &reqwest::Client, app: &TestApp, token: &str) -> reqwest::Response {
    http.get(app.url("/api/sync"))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET /api/sync")
}

#[tokio::test]
async fn a_user_may_hold_eight_streams_and_the_ninth_is_refused_with_429() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sse-cap").await;
    let other = app.sign_up("sse-cap-other").await;
    let script = create_token(&app, &user, json!({"name": "streamer"})).await;
    let http = reqwest::Client::new();
    let mut open = Vec::new();
    // One stream on a plain socket, so that the test controls when it closes.
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", app.port))
        .await
        .unwrap();
    let request = format!(
        "GET /api/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n",
        user.access_token
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    socket.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));
    for i in 1..8 {
        // Native and personal-token streams count together: they are the same user's.
        let token = if i % 2 == 0 {
            &user.access_token
        } else {
            &script.token
        };
        let resp = raw_stream(&http, &app, token).await;
        assert_eq!(resp.status(), 200, "stream {i}");
        open.push(resp);
    }
    for token in [&user.access_token, &script.token] {
        let resp = raw_stream(&http, &app, token).await;
        // Checked before reading the body: an admitted stream's body never ends.
        assert_eq!(resp.status(), 429, "a ninth stream was opened");
        let body = expect_error(resp, 429, "too_many_streams").await;
        assert!(body["message"].as_str().unwrap().contains('8'), "{body}");
    }
    // Another user is not affected.
    let resp = raw_stream(&http, &app, &other.access_token).await;
    assert_eq!(resp.status(), 200);

    // Closing one frees its slot at once.
    drop(socket);
    let closed = Instant::now();
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = raw_stream(&http, &app, &user.access_token).await;
        if resp.status() == 200 {
            eprintln!("slot back after {:?}", closed.elapsed());
            break;
        }
        assert_eq!(resp.status(), 429);
        assert!(
            Instant::now() < deadline,
            "the closed stream's slot was not given back within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn another_users_traffic_does_not_push_a_users_events_out_of_the_replay_window() {
    // A budget for the flood.
    let app = TestApp::start_with_mail_and("[rate_limit]\nrequests = 100000\n\n".into()).await;
    let alice = app.sign_up("sse-quiet").await;
    let mallory = app.sign_up("sse-busy").await;
    let mxid = |s: &Session| s.user["matrixUserId"].as_str().unwrap().to_owned();
    let bob = matrix::register("bob").await;
    let room = bob
        .create_room(Some("Shared"), &[&mxid(&alice), &mxid(&mallory)], false)
        .await;
    accept_invite(&app, &alice.access_token, &room).await;
    accept_invite(&app, &mallory.access_token, &room).await;
    bob.wait_for_member(&room, &mxid(&alice), WAIT).await;
    bob.wait_for_member(&room, &mxid(&mallory), WAIT).await;

    let mut sse = open_sse(&app, &alice.access_token, None).await;
    // Mallory's stream shows when her copy of the room is stored.
    let mut busy = open_sse(&app, &mallory.access_token, None).await;
    let first = bob.send_text(&room, "one").await;
    let seen = sse
        .wait_for("first message", |e| is_message_created(e, &first))
        .await;
    drop(sse);
    busy.wait_for("first message", |e| is_message_created(e, &first))
        .await;

    // More events for Mallory than the whole window used to hold (4096, shared by all).
    let path = crate::rooms::room_path(&room);
    let flood = 4200;
    let http = reqwest::Client::new();
    let started = Instant::now();
    futures_util::stream::iter(0..flood)
        .for_each_concurrent(8, |_| {
            let req = http
                .put(app.url(&path))
                .bearer_auth(&mallory.access_token)
                .json(&json!({"nonce": "AAAA"}));
            async move {
                let resp = req.send().await.expect("PUT room");
                assert_eq!(resp.status(), 200);
            }
        })
        .await;
    eprintln!("{flood} events for another user in {:?}", started.elapsed());

    let second = bob.send_text(&room, "two").await;
    busy.wait_for("second message", |e| is_message_created(e, &second))
        .await;
    // Alice resumes from her last event: she gets what she missed, not a rescan, and
    // nothing of Mallory's.
    let mut resumed = open_sse(&app, &alice.access_token, seen.id.as_deref()).await;
    let e = resumed
        .wait_for("the missed message", |e| {
            assert_ne!(e.event, "resync", "Alice was told to rescan: {e:?}");
            is_message_created(e, &second)
        })
        .await;
    assert_eq!(e.data["roomId"], room.as_str());
}
