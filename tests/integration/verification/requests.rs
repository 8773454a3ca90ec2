//! The request flow Element and the Matrix SDKs use: `m.key.verification.request` →
//! accept (`ready`) → the other device's `start`, accepted without another call → emoji
//! → both confirm → `m.key.verification.done` from both sides.

use serde_json::json;

use super::{emoji_of, own};
use crate::common::*;
use crate::reminders::{event_stream, wait_event};

#[tokio::test]
async fn an_accepted_request_goes_through_ready_and_its_comparison_is_accepted_on_its_own() {
    let mut s = own().await;
    let mut events = event_stream(&s.app, s.token()).await;
    let pat = personal_token(&s.app, &s.session).await;
    let mut pat_events = event_stream(&s.app, &pat).await;
    let id = s.nio.call(json!({
        "op": "sas_request", "device_id": s.sync_device, "timeout": 30,
    }))["transaction_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let v = s.wait_state(&id, "requested").await;
    assert_eq!(v["otherDeviceId"], s.nio_device);
    wait_event(&mut events, "verification.updated", |d| {
        d["id"] == id.as_str() && d["state"] == "requested"
    })
    .await;
    // A personal token's stream, open since before the request, does not carry it (the
    // verification routes are native only). Positive marker: a reminder announced after
    // the request arrives on that stream, and nothing about the verification came first.
    let due = (chrono::Utc::now() + chrono::Duration::seconds(1)).to_rfc3339();
    let marker = s
        .app
        .api(&pat)
        .reminders()
        .create(json!({"title": "marker", "dueAt": due}))
        .await
        .unwrap();
    loop {
        let (kind, data) =
            tokio::time::timeout(std::time::Duration::from_secs(30), pat_events.recv())
                .await
                .expect("reminder.due on the personal token's stream within 30 s")
                .expect("stream open");
        assert_ne!(kind, "verification.updated", "{data}");
        if kind == "reminder.due" && data["id"] == marker["id"] {
            break;
        }
    }
    expect_error(
        s.act(&id, "confirm", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    let ready = expect_json(s.act(&id, "accept", s.token()).await, 200).await;
    assert_eq!(ready["state"], "ready", "{ready}");
    let answer = s.nio.call(json!({
        "op": "wait_to_device", "type": "m.key.verification.ready",
        "transaction_id": id, "timeout": 30,
    }));
    assert_eq!(
        answer["event"]["content"]["from_device"],
        s.sync_device.as_str()
    );
    expect_error(
        s.act(&id, "accept", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    // nio starts the comparison in the request's flow; the accepted request takes it up.
    s.nio.call(json!({
        "op": "sas_start", "device_id": s.sync_device, "transaction_id": id, "timeout": 30,
    }));
    let theirs = s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "keys", "timeout": 30,
    }));
    assert_eq!(theirs["state"], "keys", "{theirs}");
    let v = s.wait_state(&id, "keys_exchanged").await;
    assert_eq!(
        emoji_of(&v["emoji"]),
        emoji_of(&theirs["emoji"]),
        "the emoji match"
    );

    s.nio
        .call(json!({"op": "sas_confirm", "transaction_id": id}));
    expect_json(s.act(&id, "confirm", s.token()).await, 200).await;
    let theirs = s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "verified", "timeout": 30,
    }));
    assert_eq!(theirs["state"], "verified", "{theirs}");
    // A request flow ends with `done` from both sides.
    s.nio.call(json!({
        "op": "wait_to_device", "type": "m.key.verification.done",
        "transaction_id": id, "timeout": 30,
    }));
    s.nio.call(json!({
        "op": "sas_done", "transaction_id": id, "device_id": s.sync_device,
    }));
    let done = s.wait_verified(&id).await;
    assert_eq!(done["otherDeviceVerified"], true, "{done}");
    wait_event(&mut events, "verification.updated", |d| {
        d["id"] == id.as_str() && d["state"] == "done"
    })
    .await;
}
