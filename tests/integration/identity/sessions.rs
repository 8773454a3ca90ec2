//! Each sign-in's Matrix device: its own token, logged out on the real Synapse by logout,
//! account removal and key deletion (retried when the homeserver was down), while
//! Switchboard's own sync device keeps syncing.

use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::common::matrix;
use crate::common::*;
use crate::sync::{is_message_created, open_sse, WAIT};

/// `GET /_matrix/client/v3/account/whoami` with `token`: status and body.
async fn whoami(token: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .get(format!(
            "{}/_matrix/client/v3/account/whoami",
            synapse().base_url
        ))
        .bearer_auth(token)
        .send()
        .await
        .expect("whoami");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or_default())
}

/// The token works on the homeserver: returns its device id.
async fn assert_alive(token: &str, mxid: &Value) -> String {
    let (status, body) = whoami(token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(&body["user_id"], mxid);
    body["device_id"].as_str().expect("device_id").to_owned()
}

async fn assert_logged_out(token: &str) {
    let (status, body) = whoami(token).await;
    assert_eq!(status, 401, "the token still works: {body}");
    assert_eq!(body["errcode"], "M_UNKNOWN_TOKEN", "{body}");
}

fn db(app: &TestApp) -> Connection {
    let conn = Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open the app's database");
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

fn sync_device(app: &TestApp, user_id: &Value) -> String {
    db(app)
        .query_row(
            "SELECT matrix_device_id FROM users WHERE id = ?1",
            [user_id.as_str().unwrap()],
            |r| r.get(0),
        )
        .expect("sync device")
}

fn queued_logouts(app: &TestApp) -> i64 {
    db(app)
        .query_row("SELECT COUNT(*) FROM matrix_logouts", [], |r| r.get(0))
        .unwrap()
}

async fn active(app: &TestApp, access_token: &str) -> Value {
    let accounts = app.api(access_token).accounts();
    accounts.active().await.expect("active account")
}

#[tokio::test]
async fn each_sign_in_has_its_own_matrix_device_and_logout_logs_them_out_while_sync_goes_on() {
    let app = TestApp::start_with_mail().await;
    let first = app.sign_up("devices").await;
    let second = app.sign_in(&first.email, None).await;
    let mxid = first.user["matrixUserId"].clone();
    let m1 = first
        .matrix_access_token
        .clone()
        .expect("matrixAccessToken");
    let m2 = second
        .matrix_access_token
        .clone()
        .expect("matrixAccessToken");
    let d1 = assert_alive(&m1, &mxid).await;
    let d2 = assert_alive(&m2, &mxid).await;
    let own = sync_device(&app, &first.user["id"]);
    assert_ne!(d1, d2, "each sign-in is a device of its own");
    assert!(own != d1 && own != d2, "never Switchboard's own device");

    // Refresh keeps the session and its device: same Matrix token from /active.
    let refresh = app.anonymous().session();
    let refreshed = refresh.refresh(&first.refresh_token).await.unwrap();
    let access = refreshed["accessToken"].as_str().unwrap().to_owned();
    assert_eq!(
        active(&app, &access).await["matrixAccessToken"],
        m1.as_str()
    );
    assert_eq!(
        active(&app, &second.access_token).await["matrixAccessToken"],
        m2.as_str()
    );

    // A room, accepted through the API (bob is no bridge bot), and a stream on the
    // still-valid access token.
    let bob = matrix::register("bob").await;
    let room = bob
        .create_room(Some("After logout"), &[mxid.as_str().unwrap()], false)
        .await;
    accept_invite(&app, &access, &room).await;
    bob.wait_for_member(&room, mxid.as_str().unwrap(), WAIT)
        .await;
    let mut sse = open_sse(&app, &access, None).await;

    app.api(&access).session().logout().await.unwrap();
    assert_logged_out(&m1).await;
    assert_logged_out(&m2).await;
    assert_eq!(queued_logouts(&app), 0, "nothing left to retry");
    // The access token lives on until it expires, but hands out no Matrix token any more.
    assert!(active(&app, &access).await["matrixAccessToken"].is_null());

    // Switchboard's own device still syncs: a message sent now arrives through the API.
    let after = bob.send_text(&room, "still there?").await;
    sse.wait_for("a message sent after the logout", |e| {
        is_message_created(e, &after)
    })
    .await;
}

#[tokio::test]
async fn removing_an_account_logs_out_the_matrix_devices_of_its_sessions() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("remover").await;
    let added = add_account(&app, &primary, &unique_email("removed")).await;
    let id = added["id"].as_str().unwrap().to_owned();
    let accounts = app.user(&primary).accounts();
    let switched = accounts.switch(&id).await.unwrap();
    let token = switched["matrixAccessToken"].as_str().unwrap().to_owned();
    let me = app.api(switched["accessToken"].as_str().unwrap()).me();
    let me = me.await.unwrap();
    assert_alive(&token, &me["matrixUserId"]).await;

    accounts.remove(&id).await.unwrap();
    assert_logged_out(&token).await;
    // The primary's own session is untouched.
    let primary_token = primary.matrix_access_token.as_deref().unwrap();
    assert_alive(primary_token, &primary.user["matrixUserId"]).await;
}

#[tokio::test]
async fn deleting_the_keys_logs_out_the_app_devices_and_the_session_gets_a_new_one() {
    let app = TestApp::start_with_mail().await;
    let key = STANDARD.encode([7u8; 32]);
    let s = app.sign_in(&unique_email("shredder"), Some(&key)).await;
    let mxid = s.user["matrixUserId"].clone();
    let before = s.matrix_access_token.clone().unwrap();
    assert_alive(&before, &mxid).await;

    let keys = app.user(&s).keys();
    keys.delete(Some(CONFIRM_KEY_DELETION)).await.unwrap();
    assert_logged_out(&before).await;

    // Still signed in: the session gets a fresh device, which works.
    let now = active(&app, &s.access_token).await["matrixAccessToken"]
        .as_str()
        .expect("a new Matrix token")
        .to_owned();
    assert_ne!(now, before);
    assert_alive(&now, &mxid).await;
    assert_eq!(
        active(&app, &s.access_token).await["matrixAccessToken"],
        now.as_str(),
        "the session keeps its new device"
    );
}

/// Points the app's `[matrix]` at `url` and restarts it.
async fn restart_with_homeserver(app: &mut TestApp, url: &str) {
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    let config = config
        .lines()
        .map(|l| {
            if l.starts_with("homeserver_url") {
                format!("homeserver_url = \"{url}\"")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    app.signal("TERM");
    std::fs::write(&app.config_path, config).unwrap();
    app.spawn().await;
}

#[tokio::test]
async fn a_logout_while_the_homeserver_is_down_succeeds_and_the_device_is_logged_out_later() {
    let mut app = TestApp::start_with_mail().await;
    let s = app.sign_up("outage").await;
    let mxid = s.user["matrixUserId"].clone();
    let token = s.matrix_access_token.clone().unwrap();
    assert_alive(&token, &mxid).await;

    restart_with_homeserver(&mut app, &format!("http://127.0.0.1:{}", free_port())).await;
    app.user(&s).session().logout().await.unwrap();
    // The homeserver never heard of the logout; the device waits for it in the queue.
    assert_alive(&token, &mxid).await;

    restart_with_homeserver(&mut app, &synapse().base_url).await;
    let deadline = Instant::now() + WAIT;
    while whoami(&token).await.0 == 200 {
        assert!(
            Instant::now() < deadline,
            "the queued device was not logged out within {WAIT:?} of the homeserver's return"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_logged_out(&token).await;
    let deadline = Instant::now() + WAIT;
    while queued_logouts(&app) != 0 {
        assert!(Instant::now() < deadline, "the queue was not emptied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
