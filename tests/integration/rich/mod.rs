//! Rich messages (issue #23) against the real Synapse: attachments both ways, reactions,
//! replies, edits and deletion for everyone; encrypted rooms with matrix-nio in
//! [`encrypted`].

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;

mod actions;
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

#[tokio::test]
async fn attachments_from_synapse_download_byte_identical_and_uploads_reach_synapse() {
    let p = plain("[media]\nmax_upload_mb = 1\n").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    let image = png(640, 480, 300_000);
    let thumb = png(64, 48, 2_000);
    let voice = ogg(120_000);
    let image_mxc = bob.upload(image.clone(), "image/png").await;
    let thumb_mxc = bob.upload(thumb.clone(), "image/png").await;
    let voice_mxc = bob.upload(voice.clone(), "audio/ogg").await;
    let image_ev = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.image", "body": "cat.png",
            "url": image_mxc, "info": {"mimetype": "image/png", "size": image.len(),
            "w": 640, "h": 480, "thumbnail_url": thumb_mxc,
            "thumbnail_info": {"mimetype": "image/png"}}}),
        )
        .await;
    let voice_ev = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.audio", "body": "voice.ogg",
            "url": voice_mxc, "info": {"mimetype": "audio/ogg", "size": voice.len(),
            "duration": 3000}}),
        )
        .await;
    let text_ev = bob.send_text(room, "just text").await;

    // Both views describe them (readable here; sealed in `encrypted`).
    let m = wait_event_id(app, token, room, &voice_ev).await;
    assert_eq!(m["msgtype"], "m.audio", "{m}");
    assert_eq!(
        m["media"],
        json!({"mimetype": "audio/ogg", "size": voice.len(), "name": "voice.ogg",
            "durationMs": 3000, "hasThumbnail": false})
    );
    let m = wait_event_id(app, token, room, &image_ev).await;
    assert_eq!(
        m["media"],
        json!({"mimetype": "image/png", "size": image.len(), "name": "cat.png",
            "width": 640, "height": 480, "hasThumbnail": true})
    );
    assert_eq!(
        (m["replyTo"].clone(), m["editedAt"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(m["reactions"], json!([]));
    let t = wait_event_id(app, token, room, &text_ev).await;
    assert_eq!(
        (t["msgtype"].clone(), t["media"].clone()),
        (json!("m.text"), Value::Null)
    );

    // The bytes, byte for byte, with the event's type and safe headers.
    let (status, ctype, disp, nosniff, bytes) = download(app, token, room, &image_ev, false).await;
    assert_eq!(
        (status, ctype.as_str(), nosniff.as_str()),
        (200, "image/png", "nosniff")
    );
    assert!(
        disp.starts_with("attachment; filename=\"cat.png\""),
        "{disp}"
    );
    assert!(bytes == image, "image differs ({} bytes)", bytes.len());
    let (status, ctype, _, _, bytes) = download(app, token, room, &voice_ev, false).await;
    assert_eq!((status, ctype.as_str()), (200, "audio/ogg"));
    assert!(bytes == voice, "voice note differs");
    let (status, _, _, _, bytes) = download(app, token, room, &image_ev, true).await;
    assert_eq!(status, 200);
    assert!(bytes == thumb, "thumbnail differs");

    // Not an attachment, unknown, another user's room: 404.
    let (status, ..) = download(app, token, room, &text_ev, false).await;
    assert_eq!(status, 404);
    let (status, ..) = download(app, token, room, "$unknown:localhost", false).await;
    assert_eq!(status, 404);
    let (status, ..) = download(app, token, room, &voice_ev, true).await;
    assert_eq!(status, 404, "a voice note has no thumbnail");
    let other = app.sign_up("rich-other").await;
    let other_token = personal_token(app, &other).await;
    let (status, _, _, _, bytes) = download(app, &other_token, room, &image_ev, false).await;
    assert_eq!(status, 404);
    assert!(bytes.len() < 1000, "nothing of the image");

    // An upload through Switchboard, a reply with a caption: Synapse's user gets it.
    let mine = png(32, 16, 40_000);
    let fields = [
        ("txnId", "up-1"),
        ("caption", "look"),
        ("replyTo", image_ev.as_str()),
    ];
    let sent = expect_json(
        upload(
            app,
            token,
            room,
            &fields,
            Some(("dot.png", "image/png", &mine)),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(sent["duplicate"], false);
    let ev = sent["eventId"].as_str().unwrap();
    let on_synapse = bob.event(room, ev).await;
    let c = &on_synapse["content"];
    assert_eq!(c["msgtype"], "m.image", "{on_synapse}");
    assert_eq!(
        (c["body"].as_str(), c["filename"].as_str()),
        (Some("look"), Some("dot.png"))
    );
    assert_eq!(
        c["info"],
        json!({"mimetype": "image/png", "size": mine.len(), "w": 32, "h": 16})
    );
    assert_eq!(
        c["m.relates_to"]["m.in_reply_to"]["event_id"],
        image_ev.as_str()
    );
    let (ctype, bytes) = bob.download(c["url"].as_str().unwrap()).await;
    assert_eq!(ctype, "image/png");
    assert!(bytes == mine, "uploaded bytes differ on Synapse");
    // The same txnId again: nothing new.
    let again = expect_json(
        upload(
            app,
            token,
            room,
            &fields,
            Some(("dot.png", "image/png", &mine)),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        (again["eventId"].as_str(), again["duplicate"].as_bool()),
        (Some(ev), Some(true))
    );
    // A voice note without a claimed type: the bytes decide.
    let sent = expect_json(
        upload(
            app,
            token,
            room,
            &[("txnId", "up-2")],
            Some(("v.ogg", "", &voice)),
        )
        .await,
        200,
    )
    .await;
    let c = bob.event(room, sent["eventId"].as_str().unwrap()).await["content"].clone();
    assert_eq!(
        (c["msgtype"].as_str(), c["info"]["mimetype"].as_str()),
        (Some("m.audio"), Some("audio/opus"))
    );

    // Bad input: no file, no txnId, a claim the bytes contradict, over the cap, an empty file.
    let e = expect_error(
        upload(app, token, room, &[("txnId", "up-3")], None).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("file:"), "{e}");
    let e = expect_error(
        upload(app, token, room, &[], Some(("a.png", "image/png", &mine))).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("txnId:"), "{e}");
    let e = expect_error(
        upload(
            app,
            token,
            room,
            &[("txnId", "up-4")],
            Some(("a.jpg", "image/jpeg", &mine)),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("file:"), "{e}");
    let big = png(8, 8, 1_200_000);
    expect_error(
        upload(
            app,
            token,
            room,
            &[("txnId", "up-5")],
            Some(("big.png", "image/png", &big)),
        )
        .await,
        413,
        "payload_too_large",
    )
    .await;
    let e = expect_error(
        upload(
            app,
            token,
            room,
            &[("txnId", "up-6")],
            Some(("e.bin", "", b"")),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("file:"), "{e}");
    let e = expect_error(
        upload(
            app,
            token,
            room,
            &[("txnId", "up-7"), ("replyTo", "$nope:localhost")],
            Some(("a.png", "image/png", &mine)),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().starts_with("replyTo:"),
        "{e}"
    );
}
