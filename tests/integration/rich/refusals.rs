//! Homeserver refusals of rich actions (502 with the homeserver's reason), identical
//! reactions at once (sent once), and a voice note's duration on upload.

use serde_json::{json, Value};

use super::*;

fn reactions_path(room: &str, event: &str) -> String {
    format!("/api/rooms/{}/messages/{}/reactions", enc(room), enc(event))
}

/// Bob's view of the `m.annotation` relations of `event` on Synapse: (sender, key) pairs.
async fn annotations(bob: &MatrixUser, room: &str, event: &str) -> Vec<(String, String)> {
    let url = format!(
        "{}/_matrix/client/v1/rooms/{}/relations/{}/m.annotation?limit=100",
        crate::common::synapse::synapse().base_url,
        enc(room),
        enc(event)
    );
    let resp = reqwest::Client::new()
        .get(url)
        .bearer_auth(&bob.access_token)
        .send()
        .await
        .expect("relations");
    assert!(resp.status().is_success(), "relations: {}", resp.status());
    let page: Value = resp.json().await.expect("relations answer");
    page["chunk"]
        .as_array()
        .expect("chunk")
        .iter()
        .map(|e| {
            (
                e["sender"].as_str().unwrap_or_default().to_owned(),
                e["content"]["m.relates_to"]["key"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn identical_reactions_at_once_are_sent_once_and_refusals_are_502_with_the_reason() {
    let p = plain("").await;
    let (app, token, room, bob, me) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob, &p.me);
    let hello = bob.send_text(room, "react to me").await;
    wait_event_id(app, token, room, &hello).await;

    // Three identical requests at once, for each of three keys: one reaction per key.
    let keys = ["👍", "🎉", "ok"];
    let target = reactions_path(room, &hello);
    for key in keys {
        let post = || {
            app.send(
                reqwest::Method::POST,
                &target,
                Some(token),
                Some(json!({"key": key})),
            )
        };
        let (a, b, c) = tokio::join!(post(), post(), post());
        let mut answers = Vec::new();
        for resp in [a, b, c] {
            answers.push(expect_json(resp, 201).await);
        }
        let firsts = answers.iter().filter(|r| r["duplicate"] == false).count();
        assert_eq!(
            firsts, 1,
            "{key}: one send, the others duplicates: {answers:?}"
        );
        assert!(
            answers
                .iter()
                .all(|r| r["eventId"] == answers[0]["eventId"]),
            "{key}: the same event for all: {answers:?}"
        );
    }
    let mut seen = annotations(bob, room, &hello).await;
    seen.sort();
    let mut want: Vec<(String, String)> = keys
        .iter()
        .map(|k| (me.user_id.clone(), (*k).to_owned()))
        .collect();
    want.sort();
    assert_eq!(seen, want, "exactly one reaction per key on Synapse");

    // A room of bob's (its creator, unlimited power) where only level 100 may post
    // messages or reactions; the Switchboard user joins at level 0.
    let strict = bob
        .create_room_with(json!({
            "preset": "private_chat",
            "invite": [me.user_id],
            "power_level_content_override": {
                "events": {"m.reaction": 100, "m.room.message": 100},
                "events_default": 100,
            },
        }))
        .await;
    me.join(&strict).await;
    let there = bob.send_text(&strict, "only bob may speak").await;
    wait_event_id(app, token, &strict, &there).await;
    let (room, hello) = (strict.as_str(), there);
    let refused = |v: &Value, what: &str| {
        assert_eq!(v["error"], "homeserver_error", "{what}: {v}");
        let msg = v["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("M_FORBIDDEN") && msg.contains("403"),
            "{what}: the homeserver's reason is passed on: {v}"
        );
    };
    let r = expect_json(
        app.send(
            reqwest::Method::POST,
            &reactions_path(room, &hello),
            Some(token),
            Some(json!({"key": "🚫"})),
        )
        .await,
        502,
    )
    .await;
    refused(&r, "reaction");
    let voice = ogg(4_000);
    let up = upload(
        app,
        token,
        room,
        &[("txnId", "refused-upload")],
        Some(("voice.ogg", "audio/ogg", &voice)),
    )
    .await;
    refused(&expect_json(up, 502).await, "upload");
    assert!(
        annotations(bob, room, &hello).await.is_empty(),
        "the refused reaction is not there"
    );
}

#[tokio::test]
async fn a_voice_notes_duration_is_sent_and_read_back() {
    let p = plain("").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    // The room is known to the server once a message of it is.
    let hi = bob.send_text(room, "send me a voice note").await;
    wait_event_id(app, token, room, &hi).await;
    let voice = ogg(8_000);
    for bad in ["abc", "-5", "1.5", "86400001"] {
        let v = expect_json(
            upload(
                app,
                token,
                room,
                &[("txnId", "bad-duration"), ("durationMs", bad)],
                Some(("voice.ogg", "audio/ogg", &voice)),
            )
            .await,
            400,
        )
        .await;
        assert!(
            v["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("durationMs: "),
            "{bad}: {v}"
        );
    }
    let sent = expect_json(
        upload(
            app,
            token,
            room,
            &[("txnId", "voice-1"), ("durationMs", "4200")],
            Some(("voice.ogg", "audio/ogg", &voice)),
        )
        .await,
        200,
    )
    .await;
    let event = sent["eventId"].as_str().expect("eventId").to_owned();
    let on_synapse = bob.event(room, &event).await;
    assert_eq!(on_synapse["content"]["msgtype"], "m.audio", "{on_synapse}");
    assert_eq!(
        on_synapse["content"]["info"]["duration"], 4200,
        "{on_synapse}"
    );
    let m = wait_event_id(app, token, room, &event).await;
    assert_eq!(m["media"]["durationMs"], 4200, "{m}");
    // Not an audio or video file: no duration in the event.
    let png = png(4, 4, 100);
    let sent = expect_json(
        upload(
            app,
            token,
            room,
            &[("txnId", "image-1"), ("durationMs", "4200")],
            Some(("p.png", "image/png", &png)),
        )
        .await,
        200,
    )
    .await;
    let on_synapse = bob.event(room, sent["eventId"].as_str().unwrap()).await;
    assert_eq!(on_synapse["content"]["msgtype"], "m.image", "{on_synapse}");
    assert!(
        on_synapse["content"]["info"].get("duration").is_none(),
        "{on_synapse}"
    );
}
