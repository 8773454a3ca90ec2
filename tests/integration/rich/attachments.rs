//! Attachments both ways: Synapse's media download byte-identical through Switchboard, and
//! uploads through Switchboard reach Synapse's user.

use serde_json::{json, Value};

use super::*;

/// Bob's three messages in the room and the bytes behind them.
struct Sent {
    image: Vec<u8>,
    thumb: Vec<u8>,
    voice: Vec<u8>,
    image_ev: String,
    voice_ev: String,
    text_ev: String,
}

#[tokio::test]
async fn attachments_from_synapse_download_byte_identical_and_uploads_reach_synapse() {
    let p = plain("[media]\nmax_upload_mb = 1\n").await;
    let s = bob_sends_an_image_a_voice_note_and_text(&p).await;
    both_views_describe_the_media(&p, &s).await;
    downloads_are_byte_identical_with_safe_headers(&p, &s).await;
    downloads_of_no_attachment_or_others_rooms_are_404(&p, &s).await;
    let mine = uploads_reach_synapse_once_per_txn_id(&p, &s).await;
    bad_uploads_are_refused(&p, &mine).await;
}

async fn bob_sends_an_image_a_voice_note_and_text(p: &Plain) -> Sent {
    let (room, bob) = (p.room.as_str(), &p.bob);
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
    Sent {
        image,
        thumb,
        voice,
        image_ev,
        voice_ev,
        text_ev,
    }
}

/// Both views describe them (readable here; sealed in `encrypted`).
async fn both_views_describe_the_media(p: &Plain, s: &Sent) {
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    let m = wait_event_id(app, token, room, &s.voice_ev).await;
    assert_eq!(m["msgtype"], "m.audio", "{m}");
    assert_eq!(
        m["media"],
        json!({"mimetype": "audio/ogg", "size": s.voice.len(), "name": "voice.ogg",
            "durationMs": 3000, "hasThumbnail": false})
    );
    let m = wait_event_id(app, token, room, &s.image_ev).await;
    assert_eq!(
        m["media"],
        json!({"mimetype": "image/png", "size": s.image.len(), "name": "cat.png",
            "width": 640, "height": 480, "hasThumbnail": true})
    );
    assert_eq!(
        (m["replyTo"].clone(), m["editedAt"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(m["reactions"], json!([]));
    let t = wait_event_id(app, token, room, &s.text_ev).await;
    assert_eq!(
        (t["msgtype"].clone(), t["media"].clone()),
        (json!("m.text"), Value::Null)
    );
}

/// The bytes, byte for byte, with the event's type and safe headers.
async fn downloads_are_byte_identical_with_safe_headers(p: &Plain, s: &Sent) {
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    let (status, ctype, disp, nosniff, bytes) =
        download(app, token, room, &s.image_ev, false).await;
    assert_eq!(
        (status, ctype.as_str(), nosniff.as_str()),
        (200, "image/png", "nosniff")
    );
    assert!(
        disp.starts_with("attachment; filename=\"cat.png\""),
        "{disp}"
    );
    assert!(bytes == s.image, "image differs ({} bytes)", bytes.len());
    let (status, ctype, _, _, bytes) = download(app, token, room, &s.voice_ev, false).await;
    assert_eq!((status, ctype.as_str()), (200, "audio/ogg"));
    assert!(bytes == s.voice, "voice note differs");
    let (status, _, _, _, bytes) = download(app, token, room, &s.image_ev, true).await;
    assert_eq!(status, 200);
    assert!(bytes == s.thumb, "thumbnail differs");
}

/// Not an attachment, unknown, another user's room: 404.
async fn downloads_of_no_attachment_or_others_rooms_are_404(p: &Plain, s: &Sent) {
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    let (status, ..) = download(app, token, room, &s.text_ev, false).await;
    assert_eq!(status, 404);
    let (status, ..) = download(app, token, room, "$unknown:localhost", false).await;
    assert_eq!(status, 404);
    let (status, ..) = download(app, token, room, &s.voice_ev, true).await;
    assert_eq!(status, 404, "a voice note has no thumbnail");
    let other = app.sign_up("rich-other").await;
    let other_token = personal_token(app, &other).await;
    let (status, _, _, _, bytes) = download(app, &other_token, room, &s.image_ev, false).await;
    assert_eq!(status, 404);
    assert!(bytes.len() < 1000, "nothing of the image");
}

/// An upload through Switchboard, a reply with a caption: Synapse's user gets it; the same
/// txnId again sends nothing new; without a claimed type the bytes decide. Returns the
/// uploaded image's bytes.
async fn uploads_reach_synapse_once_per_txn_id(p: &Plain, s: &Sent) -> Vec<u8> {
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    let mine = png(32, 16, 40_000);
    let fields = [
        ("txnId", "up-1"),
        ("caption", "look"),
        ("replyTo", s.image_ev.as_str()),
    ];
    let file = Some(("dot.png", "image/png", mine.as_slice()));
    let sent = expect_json(upload(app, token, room, &fields, file).await, 200).await;
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
        s.image_ev.as_str()
    );
    let (ctype, bytes) = bob.download(c["url"].as_str().unwrap()).await;
    assert_eq!(ctype, "image/png");
    assert!(bytes == mine, "uploaded bytes differ on Synapse");
    // The same txnId again: nothing new.
    let again = expect_json(upload(app, token, room, &fields, file).await, 200).await;
    assert_eq!(
        (again["eventId"].as_str(), again["duplicate"].as_bool()),
        (Some(ev), Some(true))
    );
    // A voice note without a claimed type: the bytes decide.
    let voice = Some(("v.ogg", "", s.voice.as_slice()));
    let sent = expect_json(
        upload(app, token, room, &[("txnId", "up-2")], voice).await,
        200,
    )
    .await;
    let c = bob.event(room, sent["eventId"].as_str().unwrap()).await["content"].clone();
    assert_eq!(
        (c["msgtype"].as_str(), c["info"]["mimetype"].as_str()),
        (Some("m.audio"), Some("audio/opus"))
    );
    mine
}

/// The upload, expected to be refused as `invalid_request` naming `field`.
async fn refused_naming(
    p: &Plain,
    fields: &[(&str, &str)],
    file: Option<(&str, &str, &[u8])>,
    field: &str,
) {
    let resp = upload(&p.app, &p.token, &p.room, fields, file).await;
    expect_invalid_field(resp, field).await;
}

/// Bad input: no file, no txnId, a claim the bytes contradict, over the cap, an empty file,
/// a reply to an unknown event.
async fn bad_uploads_are_refused(p: &Plain, mine: &[u8]) {
    let png_file = Some(("a.png", "image/png", mine));
    refused_naming(p, &[("txnId", "up-3")], None, "file").await;
    refused_naming(p, &[], png_file, "txnId").await;
    let jpeg_claim = Some(("a.jpg", "image/jpeg", mine));
    refused_naming(p, &[("txnId", "up-4")], jpeg_claim, "file").await;
    let big = png(8, 8, 1_200_000);
    let big_file = Some(("big.png", "image/png", big.as_slice()));
    let resp = upload(&p.app, &p.token, &p.room, &[("txnId", "up-5")], big_file).await;
    expect_error(resp, 413, "payload_too_large").await;
    let empty = Some(("e.bin", "", b"".as_slice()));
    refused_naming(p, &[("txnId", "up-6")], empty, "file").await;
    let reply_to_unknown = [("txnId", "up-7"), ("replyTo", "$nope:localhost")];
    refused_naming(p, &reply_to_unknown, png_file, "replyTo").await;
}
