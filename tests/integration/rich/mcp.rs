//! The rich-message MCP tools, through the official Python SDK: each is the route it wraps.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::json;
use sha2::Digest as _;

use super::*;
use crate::mcp::{error_code, mcp_client};

#[tokio::test]
async fn attachment_file_reaction_edit_and_delete_tools() {
    let p = plain("").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    let image = png(20, 10, 5_000);
    let mxc = bob.upload(image.clone(), "image/png").await;
    let image_ev = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.image", "body": "i.png",
            "url": mxc, "info": {"mimetype": "image/png", "size": image.len()}}),
        )
        .await;
    let hello = bob.send_text(room, "hello over mcp").await;
    wait_event_id(app, token, room, &hello).await;
    let voice = ogg(3_000);
    let report = mcp_client(
        app,
        token,
        json!([
            {"tool": "get_attachment", "args": {"roomId": room, "eventId": image_ev}},
            {"tool": "send_file", "args": {"roomId": room, "data": STANDARD.encode(&voice),
                "name": "v.ogg", "mimetype": "audio/ogg", "txnId": "mcp-file-1", "durationMs": 3000}},
            {"tool": "react", "args": {"roomId": room, "eventId": hello, "key": "👀"}},
            {"tool": "send_text", "args": {"roomId": room, "content": "mine", "txnId": "mcp-t1", "replyTo": hello}},
            {"tool": "get_attachment", "args": {"roomId": room, "eventId": hello}},
            {"tool": "edit_message", "args": {"roomId": room, "eventId": hello, "content": "not mine"}},
            {"tool": "send_file", "args": {"roomId": room, "data": STANDARD.encode(&voice),
                "name": "v.png", "mimetype": "image/png", "txnId": "mcp-file-2"}},
            {"tool": "send_file", "args": {"roomId": room, "data": STANDARD.encode(&voice),
                "name": "v.ogg", "mimetype": "audio/ogg", "txnId": "mcp-file-3", "durationMs": -5}},
            {"tool": "send_file", "args": {"roomId": room, "data": STANDARD.encode(&voice),
                "name": "v.ogg", "mimetype": "audio/ogg", "txnId": "mcp-file-4", "durationMs": 86_400_001u64}},
        ]),
    )
    .await;
    let r = &report["results"];
    let blob = &r[0]["blobs"][0];
    assert_eq!(
        (blob["type"].as_str(), blob["mimeType"].as_str()),
        (Some("image"), Some("image/png")),
        "{}",
        r[0]
    );
    assert_eq!(blob["sha256"], hex::encode(sha2::Sha256::digest(&image)));
    let file_ev = r[1]["ok"]["eventId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[1]));
    let c = bob.event(room, file_ev).await["content"].clone();
    assert_eq!(c["msgtype"], "m.audio", "{c}");
    assert_eq!(c["info"]["duration"], 3000, "{c}");
    assert_eq!(bob.download(c["url"].as_str().unwrap()).await.1, voice);
    let reaction = r[2]["ok"]["eventId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[2]));
    assert_eq!(
        bob.event(room, reaction).await["content"]["m.relates_to"]["key"],
        "👀"
    );
    let mine = r[3]["ok"]["eventId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[3]))
        .to_owned();
    assert_eq!(
        bob.event(room, &mine).await["content"]["m.relates_to"]["m.in_reply_to"]["event_id"],
        hello.as_str()
    );
    assert_eq!(error_code(&r[4]), "not_found", "{}", r[4]);
    assert_eq!(error_code(&r[5]), "not_own_message", "{}", r[5]);
    assert_eq!(error_code(&r[6]), "invalid_request", "{}", r[6]);
    // A negative length is refused by the tool, one over a day by the route; both name it.
    for bad in [&r[7], &r[8]] {
        assert_eq!(error_code(bad), "invalid_request", "{bad}");
        assert!(bad.to_string().contains("durationMs"), "{bad}");
    }
    // The user's own message: edited, then deleted for everyone.
    wait_event_id(app, token, room, &mine).await;
    let report = mcp_client(
        app,
        token,
        json!([
            {"tool": "edit_message", "args": {"roomId": room, "eventId": mine, "content": "mine, edited"}},
            {"tool": "delete_message", "args": {"roomId": room, "eventId": mine}},
        ]),
    )
    .await;
    let r = &report["results"];
    let edit = r[0]["ok"]["eventId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[0]));
    assert_eq!(
        bob.event(room, edit).await["content"]["m.new_content"]["body"],
        "mine, edited"
    );
    assert_eq!(r[1]["ok"]["redactedEventId"], mine.as_str(), "{}", r[1]);
    assert_eq!(bob.event(room, &mine).await["content"], json!({}));
}
