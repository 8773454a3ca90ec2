//! The request flow Element and the Matrix SDKs use: `m.key.verification.request` →
//! accept (`ready`) → the other device's `start`, accepted without another call → emoji
//! → both confirm → `m.key.verification.done` from both sides.

use serde_json::json;

use super::{emoji_of, own};
use crate::common::*;
use crate::scheduled::reminders::{event_stream, wait_event};

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

/// A start from a device whose keys the crate cannot find is not listed (nor answerable):
/// listed, its "accept" could only be refused. Positive marker: nio's own start, sent
/// after it, is listed; then the unknown device's flow is still absent and answers 404.
#[tokio::test]
async fn a_flow_from_a_device_without_keys_is_not_listed_until_taken_up() {
    let mut s = own().await;
    let hidden = format!("nokeys-{}", uuid::Uuid::new_v4().simple());
    s.nio.call(json!({
        "op": "to_device_raw", "event_type": "m.key.verification.start",
        "device_id": s.sync_device,
        "content": {
            "from_device": "NOSUCHDEVICE", "transaction_id": hidden, "method": "m.sas.v1",
            "key_agreement_protocols": ["curve25519-hkdf-sha256"], "hashes": ["sha256"],
            "message_authentication_codes": ["hkdf-hmac-sha256.v2"],
            "short_authentication_string": ["decimal", "emoji"],
        },
    }));
    let id = s.nio_starts();
    s.wait_state(&id, "started").await;
    let list = s.list().await;
    assert!(list.iter().all(|v| v["id"] != hidden.as_str()), "{list:?}");
    expect_error(s.act(&hidden, "accept", s.token()).await, 404, "not_found").await;
    // nio's own flow goes on as usual.
    expect_json(s.act(&id, "accept", s.token()).await, 200).await;
}
