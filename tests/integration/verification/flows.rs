//! A completed verification (matching emoji, both sides trust each other, forwarded keys
//! accepted after it) and a cancelled one (no trust), with the refusals.

use serde_json::json;

use super::{emoji_of, own};
use crate::common::*;
use crate::e2ee::{wait_readable, Nio};
use crate::scheduled::reminders::{event_stream, wait_event};

#[tokio::test]
async fn a_sas_verification_with_nio_completes_with_matching_emoji_and_trust_both_ways() {
    let mut s = own().await;
    let mut events = event_stream(&s.app, s.token()).await;
    let id = s.nio_starts();

    // The bare start (no request) shows as `started`, announced on /api/sync.
    let v = s.wait_state(&id, "started").await;
    for l in s
        .app
        .log()
        .lines()
        .filter(|l| l.contains("verification from"))
    {
        eprintln!("LOGV {l}");
    }
    assert_eq!(v["otherDeviceId"], s.nio_device);
    assert_eq!(v["emoji"], json!([]));
    assert_eq!(v["otherDeviceVerified"], false);
    wait_event(&mut events, "verification.updated", |d| {
        d["id"] == id.as_str() && d["state"] == "started" && d["otherDeviceId"] == s.nio_device
    })
    .await;

    // Confirming before the keys are exchanged does not fit.
    expect_error(
        s.act(&id, "confirm", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    let accepted = expect_json(s.act(&id, "accept", s.token()).await, 200).await;
    assert_eq!(accepted["id"], id.as_str());
    // nio gets the accept at once (not on Switchboard's next sync) and shares its key.
    let theirs = s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "keys", "timeout": 30,
    }));
    assert_eq!(theirs["state"], "keys", "{theirs}");
    let v = s.wait_state(&id, "keys_exchanged").await;
    let emoji = emoji_of(&v["emoji"]);
    assert_eq!(emoji.len(), 7, "{v}");
    assert_eq!(emoji, emoji_of(&theirs["emoji"]), "the emoji match");
    assert_eq!(v["weConfirmed"], false);
    expect_error(
        s.act(&id, "accept", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    let confirmed = expect_json(s.act(&id, "confirm", s.token()).await, 200).await;
    assert_eq!(confirmed["weConfirmed"], true, "{confirmed}");
    assert_eq!(
        confirmed["state"], "keys_exchanged",
        "nio has not confirmed yet"
    );
    s.nio
        .call(json!({"op": "sas_confirm", "transaction_id": id}));
    let theirs = s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "verified", "timeout": 30,
    }));
    assert_eq!(theirs["state"], "verified", "{theirs}");

    let done = s.wait_verified(&id).await;
    assert_eq!(done["otherDeviceVerified"], true, "{done}");
    assert_eq!(done["emoji"], json!([]));
    wait_event(&mut events, "verification.updated", |d| {
        d["id"] == id.as_str() && d["state"] == "done"
    })
    .await;
    let trust = s
        .nio
        .call(json!({"op": "device_trust", "device_id": s.sync_device}));
    assert_eq!(trust["verified"], true, "nio trusts the sync device");
    expect_error(
        s.act(&id, "cancel", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    // A room key Switchboard lacks now comes forwarded from the verified nio device: nio
    // (the same account) sends with a room key it gives no one, Switchboard asks its own
    // devices for it, and nio answers its verified device.
    let room = s.nio.call(json!({"op": "create_room", "invite": []}))["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let secret = "forwarded after verification";
    let sent = s
        .nio
        .call(json!({"op": "send_late", "room": room, "text": secret}));
    let pt = personal_token(&s.app, &s.session).await;
    let asked = s.nio.call(json!({
        "op": "wait_key_request", "session_id": sent["session_id"], "timeout": 30,
    }));
    assert_eq!(asked["requesting_device_id"], s.sync_device.as_str());
    // nio answers (an Olm session first) while it syncs.
    s.nio.call(json!({"op": "sync_for", "seconds": 3}));
    let m = wait_readable(&s.app, &pt, &room, secret).await;
    assert_eq!(m["text"], secret);
}

#[tokio::test]
async fn a_cancelled_verification_leaves_no_trust_and_strangers_and_tokens_are_refused() {
    let mut s = own().await;
    let other = s.app.sign_up("verify-other").await;
    let pt = personal_token(&s.app, &s.session).await;

    // A stranger's device starts a verification with the sync device first.
    let mut stranger = Nio::start().await;
    let foreign = stranger.call(json!({
        "op": "sas_start", "user_id": s.mxid, "device_id": s.sync_device, "timeout": 30,
    }))["transaction_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let id = s.nio_starts();
    s.wait_state(&id, "started").await;
    // The stranger's flow came first, the own device's is listed: the stranger's is not.
    let list = s.list().await;
    assert!(list.iter().all(|v| v["id"] != foreign.as_str()), "{list:?}");
    expect_error(s.act(&foreign, "accept", s.token()).await, 404, "not_found").await;

    // Personal tokens: refused (default deny), and nothing changed.
    let resp = s.app.get_auth("/api/e2ee/verifications", &pt).await;
    expect_error(resp, 403, "forbidden_for_api_token").await;
    expect_error(
        s.act(&id, "cancel", &pt).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    // Another user does not see it and cannot answer it.
    let theirs = expect_json(
        s.app
            .get_auth("/api/e2ee/verifications", &other.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(theirs["verifications"], json!([]));
    expect_error(
        s.act(&id, "accept", &other.access_token).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        s.act("no-such-flow", "confirm", s.token()).await,
        404,
        "not_found",
    )
    .await;

    expect_json(s.act(&id, "accept", s.token()).await, 200).await;
    s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "keys", "timeout": 30,
    }));
    s.wait_state(&id, "keys_exchanged").await;
    let cancelled = expect_json(s.act(&id, "cancel", s.token()).await, 200).await;
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert_eq!(cancelled["cancelCode"], "m.user");
    assert_eq!(cancelled["emoji"], json!([]));
    let theirs = s.nio.call(json!({
        "op": "sas_wait", "transaction_id": id, "until": "canceled", "timeout": 30,
    }));
    assert_eq!(theirs["state"], "canceled");
    let trust = s
        .nio
        .call(json!({"op": "device_trust", "device_id": s.sync_device}));
    assert_eq!(trust["verified"], false);
    let v = s.wait_state(&id, "cancelled").await;
    assert_eq!(v["otherDeviceVerified"], false);
    expect_error(
        s.act(&id, "confirm", s.token()).await,
        409,
        "verification_state",
    )
    .await;
    expect_error(
        s.act(&id, "cancel", s.token()).await,
        409,
        "verification_state",
    )
    .await;

    // The other device cancels (after its emoji showed): announced, no trust either.
    let mut events = event_stream(&s.app, s.token()).await;
    let second = s.nio_starts();
    s.wait_state(&second, "started").await;
    expect_json(s.act(&second, "accept", s.token()).await, 200).await;
    s.nio.call(json!({
        "op": "sas_wait", "transaction_id": second, "until": "keys", "timeout": 30,
    }));
    s.nio
        .call(json!({"op": "sas_cancel", "transaction_id": second}));
    let v = s.wait_state(&second, "cancelled").await;
    assert_eq!(v["cancelCode"], "m.user", "{v}");
    assert_eq!(v["otherDeviceVerified"], false);
    wait_event(&mut events, "verification.updated", |d| {
        d["id"] == second.as_str() && d["state"] == "cancelled"
    })
    .await;
    expect_error(
        s.act(&second, "confirm", s.token()).await,
        409,
        "verification_state",
    )
    .await;
}
