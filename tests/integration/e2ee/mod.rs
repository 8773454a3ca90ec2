//! Encrypted rooms against the real Synapse, with an independent E2EE client
//! (matrix-nio + vodozemac, `tests/e2ee/nio_client.py`) on the other side.

pub mod sync;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::matrix;
use crate::common::*;

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// The nio client process, one JSON command per line.
pub(crate) struct Nio {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _store: tempfile::TempDir,
}

impl Nio {
    /// A new Matrix user, logged in with nio as an E2EE device.
    pub(crate) async fn start() -> Self {
        let user = matrix::register("nio").await;
        Self::login_as(&user.user_id).await
    }

    /// Another nio device of `user_id` (registered by [`Nio::start`] or `matrix::register`).
    pub(crate) async fn login_as(user_id: &str) -> Self {
        let localpart = user_id[1..].split(':').next().unwrap().to_owned();
        Self::login_with(user_id, &format!("pw-{localpart}")).await
    }

    /// A nio device of `user_id` logged in with `password` (e.g. a Switchboard user's
    /// own Matrix account, whose password derives from the master key).
    pub(crate) async fn login_with(user_id: &str, password: &str) -> Self {
        let mut nio = Self::spawn();
        let store_path = nio._store.path().to_str().unwrap().to_owned();
        nio.call(json!({
            "op": "login",
            "base": crate::common::synapse::synapse().base_url,
            "user_id": user_id,
            "password": password,
            "store": store_path,
        }));
        nio
    }

    /// A nio process, not logged in yet.
    fn spawn() -> Self {
        let store = tempfile::tempdir().unwrap();
        let mut child = Command::new(python())
            .arg(repo_root().join("tests/e2ee/nio_client.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the nio client");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            _store: store,
        }
    }

    pub(crate) fn call(&mut self, cmd: Value) -> Value {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("nio answers");
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("nio answered {line:?} to {cmd}"));
        assert_eq!(answer["ok"], true, "nio: {cmd} -> {answer}");
        answer
    }

    pub(crate) fn text(&mut self, room: &str, text: &str) -> String {
        let a = self.call(json!({"op": "send", "room": room, "text": text}));
        a["event_id"].as_str().unwrap().to_owned()
    }

    /// Waits until nio has `text` in `room`; asserts it arrived encrypted and returns
    /// its sender.
    pub(crate) fn wait_encrypted_text(&mut self, room: &str, text: &str) -> String {
        let a = self.call(json!({"op": "wait_text", "room": room, "text": text, "timeout": 30}));
        assert_eq!(a["decrypted"], true, "{text:?} was not sent encrypted: {a}");
        a["sender"].as_str().unwrap().to_owned()
    }
}

impl Drop for Nio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Switchboard user in an encrypted direct room the nio user created and invited it to.
pub(crate) struct Setup {
    pub(crate) app: TestApp,
    pub(crate) session: Session,
    pub(crate) me: String,
    pub(crate) token: String,
    pub(crate) nio: Nio,
    pub(crate) room: String,
}

async fn setup() -> Setup {
    setup_with(json!({})).await
}

/// [`setup`] with more of the room's `m.room.encryption` content (e.g. its rotation).
pub(crate) async fn setup_with(encryption: Value) -> Setup {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("e2ee").await;
    let me = session.user["matrixUserId"].as_str().unwrap().to_owned();
    let mut nio = Nio::start().await;
    let room = nio.call(json!({"op": "create_room", "invite": [me], "encryption": encryption}))
        ["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    accept_invite(&app, &session.access_token, &room).await;
    nio.call(json!({"op": "wait_joined", "room": room, "user_id": me, "timeout": 30}));
    let token = personal_token(&app, &session).await;
    Setup {
        app,
        session,
        me,
        token,
        nio,
        room,
    }
}

pub(crate) fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

/// Polls the readable history (personal token) until a message with `text` appears.
pub(crate) async fn wait_readable(app: &TestApp, token: &str, room: &str, text: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let page = expect_json(
            app.get_auth(&format!("/api/messages?roomId={}", enc(room)), token)
                .await,
            200,
        )
        .await;
        if let Some(m) = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["text"] == text)
        {
            return m.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{text:?} not in readable history within {WAIT:?}: {page}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_encrypted_dm_is_decrypted_into_both_history_views_and_after_kill_9() {
    let mut s = setup().await;
    let secret = "the launch code is 0451 (nio)";
    let event_id = s.nio.text(&s.room, secret);
    let m = wait_readable(&s.app, &s.token, &s.room, secret).await;
    assert_eq!(m["eventId"], event_id.as_str(), "{m}");

    // Native sealed envelope: the same plaintext, sealed to the app's key.
    let key = crate::messages::register_key(&s.app, &s.session).await;
    let native = expect_json(
        s.app
            .get_auth(
                &format!("/api/messages?roomId={}", enc(&s.room)),
                &s.session.access_token,
            )
            .await,
        200,
    )
    .await;
    let opened: Vec<Value> = native["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| crate::messages::decrypt(&key, m))
        .collect();
    assert!(
        opened.iter().any(|p| p["body"] == secret),
        "native envelopes: {opened:?}"
    );
    // At rest: sealed, no plaintext in the database or its WAL.
    assert!(
        !contains(&database_bytes(&s.app), secret),
        "plaintext in the db"
    );
    // The room says it is encrypted.
    let room = expect_json(
        s.app
            .get_auth(&format!("/api/rooms/{}", enc(&s.room)), &s.token)
            .await,
        200,
    )
    .await;
    assert_eq!(room["room"]["encrypted"], true, "{room}");
    // The crypto store exists and is private.
    let store = s
        .app
        .data_dir()
        .join("e2ee")
        .join(s.session.user["id"].as_str().unwrap());
    assert!(store.is_dir(), "{store:?}");

    // kill -9, restart: sessions and keys survive; new messages still decrypt.
    s.app.kill9();
    let after = "sent after the crash";
    s.nio.text(&s.room, after);
    s.app.spawn().await;
    wait_readable(&s.app, &s.token, &s.room, after).await;
    let later = "sent after the restart";
    s.nio.text(&s.room, later);
    wait_readable(&s.app, &s.token, &s.room, later).await;

    // Sent by Switchboard into the encrypted room: nio decrypts it.
    let reply = "a reply from Switchboard, encrypted";
    let resp = s
        .app
        .post_json(
            &format!("/api/rooms/{}/messages", enc(&s.room)),
            Some(&s.token),
            json!({"content": reply, "txnId": "e2ee-1"}),
        )
        .await;
    assert!(resp.status().is_success(), "{:?}", resp.text().await);
    assert_eq!(s.nio.wait_encrypted_text(&s.room, reply), s.me);

    // A scheduled message into the encrypted room: nio decrypts it too.
    let key = crate::scheduled::server_key(&s.app).await;
    let text = "a scheduled message, encrypted";
    let body = crate::scheduled::body(&key, &s.room, text, &crate::scheduled::at(1.0));
    crate::scheduled::schedule(&s.app, &s.session.access_token, body).await;
    assert_eq!(s.nio.wait_encrypted_text(&s.room, text), s.me);
}

#[tokio::test]
async fn a_late_room_key_turns_an_undecryptable_message_readable() {
    let mut s = setup().await;
    // A first message sets up the Olm session both ways.
    s.nio.text(&s.room, "hello");
    wait_readable(&s.app, &s.token, &s.room, "hello").await;
    let late = "this one's key comes later";
    let event_id = s
        .nio
        .call(json!({"op": "send_late", "room": s.room, "text": late}))["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Positive marker: the event is stored, visibly undecryptable.
    let deadline = Instant::now() + WAIT;
    loop {
        let page = expect_json(
            s.app
                .get_auth(&format!("/api/messages?roomId={}", enc(&s.room)), &s.token)
                .await,
            200,
        )
        .await;
        let found = page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["eventId"] == event_id.as_str())
            .cloned();
        if let Some(m) = found {
            assert!(m["content"]["ciphertext"].is_string(), "{m}");
            assert!(
                m["text"].as_str().unwrap().contains("Unable to decrypt"),
                "{m}"
            );
            assert!(!m.to_string().contains(late), "{m}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "undecryptable row not stored: {page}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s.nio.call(json!({"op": "share_late", "room": s.room}));
    let m = wait_readable(&s.app, &s.token, &s.room, late).await;
    assert_eq!(m["eventId"], event_id.as_str());
    assert_eq!(m["content"]["msgtype"], "m.text", "{m}");
}

#[tokio::test]
async fn key_deletion_destroys_the_crypto_store_and_another_user_sees_nothing() {
    let mut s = setup().await;
    let secret = "only for the invited user";
    s.nio.text(&s.room, secret);
    wait_readable(&s.app, &s.token, &s.room, secret).await;
    // Another Switchboard user is not in the room and gets nothing of it.
    let other = s.app.sign_up("e2ee-other").await;
    let other_token = personal_token(&s.app, &other).await;
    let resp = s
        .app
        .get_auth(
            &format!("/api/messages?roomId={}", enc(&s.room)),
            &other_token,
        )
        .await;
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap();
    assert!(!body.contains(secret), "{status} {body}");

    let store = s
        .app
        .data_dir()
        .join("e2ee")
        .join(s.session.user["id"].as_str().unwrap());
    assert!(store.is_dir());
    crate::messages::register_key(&s.app, &s.session).await;
    let resp = reqwest::Client::new()
        .delete(s.app.url("/api/keys"))
        .bearer_auth(&s.session.access_token)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    // Gone now: destroyed, and the worker moves to a new sync device with a new store
    // (the old device's keys cannot be replaced on the homeserver).
    let uid = s.session.user["id"].as_str().unwrap().to_owned();
    let device = |app: &TestApp| -> Option<String> {
        let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
        conn.query_row(
            "SELECT matrix_device_id FROM users WHERE id = ?1",
            [&uid],
            |r| r.get(0),
        )
        .unwrap()
    };
    let before = device(&s.app);
    assert!(
        s.app.log().contains("crypto store destroyed"),
        "{}",
        s.app.log()
    );
    let deadline = Instant::now() + WAIT;
    while device(&s.app) == before {
        assert!(
            Instant::now() < deadline,
            "sync device not replaced after key deletion"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // nio learns the new device (and starts a new room key, shared with it).
    let new_device = device(&s.app).unwrap();
    let (room, me) = (s.room.clone(), s.me.clone());
    s.nio
        .call(json!({"op": "wait_device", "room": room, "user_id": me,
                      "device_id": new_device, "timeout": 30}));
    // New messages decrypt again on the new device (readable again with new keys).
    crate::messages::register_key(&s.app, &s.session).await;
    let again = "after the key deletion";
    s.nio.text(&s.room, again);
    wait_readable(&s.app, &s.token, &s.room, again).await;
}

/// Encrypted messages sent while the server was down, more than one timeline holds: the
/// gap is fetched when paging back and decrypted on the way in (the room keys came as
/// to-device events), in order, each once.
#[tokio::test]
async fn an_encrypted_gap_after_downtime_is_fetched_and_decrypted_when_paging() {
    let mut s = setup().await;
    let first = "before the downtime";
    s.nio.text(&s.room, first);
    wait_readable(&s.app, &s.token, &s.room, first).await;
    s.app.kill9();
    let mut sent = vec![first.to_owned()];
    for i in 0..130 {
        let text = format!("encrypted {i}");
        s.nio.text(&s.room, &text);
        sent.push(text);
    }
    s.app.spawn().await;
    wait_readable(&s.app, &s.token, &s.room, sent.last().unwrap()).await;
    let mut read = Vec::new();
    let mut query = format!("?roomId={}&limit=50", enc(&s.room));
    loop {
        let page = expect_json(
            s.app
                .get_auth(&format!("/api/messages{query}"), &s.token)
                .await,
            200,
        )
        .await;
        for m in page["messages"].as_array().unwrap() {
            read.push(m["text"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(c) => query = format!("?roomId={}&limit=50&cursor={c}", enc(&s.room)),
            None => break,
        }
    }
    sent.reverse();
    assert_eq!(read, sent, "{}", s.app.log());
    assert!(s
        .app
        .log()
        .contains("fetched older history from the homeserver"));
    assert!(
        !contains(&database_bytes(&s.app), "encrypted 7"),
        "plaintext in the db"
    );
}
