//! Rich messages (issue #23) against the real Synapse: attachments both ways, reactions,
//! replies, edits and deletion for everyone; encrypted rooms with matrix-nio in
//! [`encrypted`].

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;

mod actions;
mod attachments;
mod encrypted;
mod hostile;
mod mcp;
mod refusals;
mod upload_limits;

pub(crate) const WAIT: Duration = Duration::from_secs(30);

pub(crate) fn enc(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

pub(crate) fn me_on_matrix(s: &Session) -> MatrixUser {
    crate::search::me_on_matrix(s)
}

/// A PNG of `w`×`h` (signature and IHDR, then `extra` bytes of filler): the type and the
/// size are in its header, which is all the server reads.
pub(crate) fn png(w: u32, h: u32, extra: usize) -> Vec<u8> {
    let mut b = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    b.extend_from_slice(b"IHDR");
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    b.extend((0..extra).map(|i| (i * 31 % 251) as u8));
    b
}

/// An Ogg voice note (Opus head at its place), `extra` bytes of filler after it.
pub(crate) fn ogg(extra: usize) -> Vec<u8> {
    let mut b = b"OggS".to_vec();
    b.resize(28, 0);
    b.extend_from_slice(b"OpusHead");
    b.extend((0..extra).map(|i| (i * 17 % 253) as u8));
    b
}

/// A multipart/form-data body: text fields, then the file part (when given).
pub(crate) fn form(
    fields: &[(&str, &str)],
    file: Option<(&str, &str, &[u8])>,
) -> (String, Vec<u8>) {
    let boundary = "sbBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    if let Some((name, ctype, bytes)) = file {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {ctype}\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) async fn upload(
    app: &TestApp,
    token: &str,
    room: &str,
    fields: &[(&str, &str)],
    file: Option<(&str, &str, &[u8])>,
) -> reqwest::Response {
    let (ctype, body) = form(fields, file);
    app.http
        .post(app.url(&format!("/api/rooms/{}/media", enc(room))))
        .bearer_auth(token)
        .header("Content-Type", ctype)
        .body(body)
        .send()
        .await
        .expect("upload request")
}

/// `GET …/media/{eventId}`: (status, content type, disposition, nosniff, bytes).
pub(crate) async fn download(
    app: &TestApp,
    token: &str,
    room: &str,
    event: &str,
    thumbnail: bool,
) -> (u16, String, String, String, Vec<u8>) {
    let q = if thumbnail { "?thumbnail=true" } else { "" };
    let resp = app
        .get_auth(
            &format!("/api/rooms/{}/media/{}{q}", enc(room), enc(event)),
            token,
        )
        .await;
    let h = |n: &str| {
        resp.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (ctype, disp, nosniff) = (
        h("content-type"),
        h("content-disposition"),
        h("x-content-type-options"),
    );
    let status = resp.status().as_u16();
    (
        status,
        ctype,
        disp,
        nosniff,
        resp.bytes().await.unwrap().to_vec(),
    )
}

/// Polls the readable history until `pick` finds a message it accepts; returns it.
pub(crate) async fn wait_message(
    app: &TestApp,
    token: &str,
    room: &str,
    what: &str,
    pick: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = app
            .get_auth(
                &format!("/api/messages?roomId={}&limit=100", enc(room)),
                token,
            )
            .await;
        let page: Value = resp.json().await.unwrap_or_default();
        if let Some(m) = page["messages"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| pick(m)))
        {
            return m.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{what} not seen within {WAIT:?}: {page}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) async fn wait_event_id(app: &TestApp, token: &str, room: &str, event: &str) -> Value {
    wait_message(app, token, room, event, |m| m["eventId"] == event).await
}

/// A Switchboard user (personal token) and a Synapse user in a plain room the former made.
pub(crate) struct Plain {
    pub(crate) app: TestApp,
    pub(crate) token: String,
    /// The Switchboard user's own Matrix account.
    pub(crate) me: MatrixUser,
    pub(crate) bob: MatrixUser,
    pub(crate) room: String,
}

pub(crate) async fn plain(extra: &str) -> Plain {
    let app = TestApp::start_with_mail_and(extra.to_owned()).await;
    let session = app.sign_up("rich").await;
    let (token_id, token) = crate::search::token_with_id(&app, &session).await;
    // The MCP test calls acting tools (send_file, react, …): they need the token's opt-in.
    crate::mcp::actions::enable(&app, &session, &token_id, true).await;
    let me = me_on_matrix(&session);
    let bob = mx::register("richbob").await;
    let room = me.create_room(Some("rich"), &[&bob.user_id], false).await;
    bob.join(&room).await;
    Plain {
        app,
        token,
        me,
        bob,
        room,
    }
}
