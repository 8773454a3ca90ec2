//! Rich messages in an encrypted room, with matrix-nio (an independent E2EE client) on
//! the other side: its encrypted attachments decrypt byte-identical through Switchboard,
//! Switchboard's uploads decrypt in nio, reactions and replies cross both ways.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::json;
use sha2::Digest as _;

use super::*;
use crate::e2ee::setup_with;

#[tokio::test]
async fn encrypted_attachments_reactions_and_replies_cross_with_nio() {
    let mut s = setup_with(json!({})).await;
    let (room, token) = (s.room.clone(), s.token.clone());
    let image = png(800, 600, 250_000);
    let voice = ogg(90_000);
    let image_ev = s.nio.call(
        json!({"op": "send_file", "room": room, "data_b64": STANDARD.encode(&image),
        "msgtype": "m.image", "mimetype": "image/png", "name": "photo.png"}),
    )["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let voice_ev = s.nio.call(
        json!({"op": "send_file", "room": room, "data_b64": STANDARD.encode(&voice),
        "msgtype": "m.audio", "mimetype": "audio/ogg", "name": "note.ogg"}),
    )["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let m = wait_event_id(&s.app, &token, &room, &voice_ev).await;
    assert_eq!(m["msgtype"], "m.audio", "{m}");
    assert_eq!(m["media"]["mimetype"], "audio/ogg");
    let m = wait_event_id(&s.app, &token, &room, &image_ev).await;
    assert_eq!(m["media"]["mimetype"], "image/png", "{m}");
    assert_eq!(
        m["media"]["hasThumbnail"], false,
        "encrypted, no thumbnail_file"
    );

    // Decrypted on the way out (hash checked), byte for byte, with the event's type.
    let (status, ctype, disp, nosniff, bytes) =
        download(&s.app, &token, &room, &image_ev, false).await;
    assert_eq!(
        (status, ctype.as_str(), nosniff.as_str()),
        (200, "image/png", "nosniff")
    );
    assert!(disp.starts_with("attachment;"), "{disp}");
    assert!(
        bytes == image,
        "decrypted image differs ({} bytes)",
        bytes.len()
    );
    let (status, ctype, _, _, bytes) = download(&s.app, &token, &room, &voice_ev, false).await;
    assert_eq!((status, ctype.as_str()), (200, "audio/ogg"));
    assert!(bytes == voice, "decrypted voice note differs");

    // The native view seals the same fields.
    let key = crate::messages::register_key(&s.app, &s.session).await;
    let native = expect_json(
        s.app
            .get_auth(
                &format!("/api/messages?roomId={}", enc(&room)),
                &s.session.access_token,
            )
            .await,
        200,
    )
    .await;
    let sealed = native["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["eventId"] == image_ev.as_str())
        .map(|m| crate::messages::decrypt(&key, m))
        .expect("image in the native page");
    assert_eq!(sealed["msgtype"], "m.image", "{sealed}");
    assert_eq!(sealed["media"]["name"], "photo.png", "{sealed}");
    assert_eq!(sealed["reactions"], json!([]));

    // An upload through Switchboard: encrypted before upload, nio decrypts it.
    let mine = ogg(70_000);
    let sent = expect_json(
        upload(
            &s.app,
            &token,
            &room,
            &[("txnId", "enc-up-1")],
            Some(("mine.ogg", "audio/ogg", &mine)),
        )
        .await,
        200,
    )
    .await;
    let ev = sent["eventId"].as_str().unwrap().to_owned();
    let got = s
        .nio
        .call(json!({"op": "wait_event", "room": room, "match": {"event_id": ev}, "timeout": 30}));
    assert_eq!(got["decrypted"], true, "{got}");
    let content = &got["event"]["content"];
    assert_eq!(content["msgtype"], "m.audio", "{got}");
    assert!(
        content["url"].is_null(),
        "no plain URL in an encrypted room: {got}"
    );
    let fetched = s
        .nio
        .call(json!({"op": "fetch_file", "file": content["file"]}));
    assert_eq!(fetched["size"], mine.len());
    assert_eq!(fetched["sha256"], hex::encode(sha2::Sha256::digest(&mine)));

    // Reactions both ways (encrypted), a reply from nio.
    s.nio.call(json!({"op": "send_event", "room": room, "type": "m.reaction",
        "content": {"m.relates_to": {"rel_type": "m.annotation", "event_id": image_ev, "key": "🎉"}}}));
    wait_message(&s.app, &token, &room, "nio's reaction", |m| {
        m["eventId"] == image_ev.as_str()
            && m["reactions"] == json!([{"key": "🎉", "count": 1, "mine": false}])
    })
    .await;
    let r = expect_json(
        s.app
            .post_json(
                &format!(
                    "/api/rooms/{}/messages/{}/reactions",
                    enc(&room),
                    enc(&image_ev)
                ),
                Some(&token),
                json!({"key": "❤️"}),
            )
            .await,
        201,
    )
    .await;
    let got = s.nio.call(json!({"op": "wait_event", "room": room,
        "match": {"event_id": r["eventId"]}, "timeout": 30}));
    assert_eq!(
        got["decrypted"], true,
        "the reaction went out encrypted: {got}"
    );
    assert_eq!(
        got["event"]["content"]["m.relates_to"]["key"], "❤️",
        "{got}"
    );
    let reply = s.nio.call(
        json!({"op": "send_event", "room": room, "type": "m.room.message",
        "content": {"msgtype": "m.text", "body": "nice",
            "m.relates_to": {"m.in_reply_to": {"event_id": ev}}}}),
    )["event_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let m = wait_event_id(&s.app, &token, &room, &reply).await;
    assert_eq!(m["replyTo"], ev.as_str(), "{m}");
}
