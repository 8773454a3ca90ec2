//! Names in search results against the real Synapse: a message result names its sender as
//! the history does (plain for personal tokens, sealed with the snippet for a native
//! session with a key), and a member's name in another user's room never shows.

use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope};
use x25519_dalek::StaticSecret;

use super::{enc, scene};
use crate::search::{me_on_matrix, opt_in, token_with_id, wait_for_results};

fn the_one(page: &Value) -> &Value {
    let results = page["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{page}");
    &results[0]
}

fn open(secret: &StaticSecret, sealed: &Value) -> Value {
    let env = Envelope::from_base64(
        sealed["ephemeralPubkey"].as_str().expect("sealed"),
        sealed["nonce"].as_str().unwrap(),
        sealed["ciphertext"].as_str().unwrap(),
    )
    .unwrap();
    serde_json::from_slice(&open_envelope(secret, &env).unwrap()).unwrap()
}

#[tokio::test]
async fn search_results_name_the_sender_in_both_views_and_only_from_the_users_own_rooms() {
    let s = scene().await;
    let (token_id, token) = token_with_id(&s.app, &s.session).await;
    opt_in(&s.app, &s.session, &token_id).await;
    let sent = s.anna.send_text(&s.room, "the blueberry pie").await;
    let avatar = format!(
        "/api/rooms/{}/members/{}/avatar",
        enc(&s.room),
        enc(&s.anna.user_id)
    );

    // Personal token: the name and the avatar route as plain fields, as in the history.
    let page = wait_for_results(&s.app, &token, "q=blueberry", 1).await;
    let r = the_one(&page);
    assert_eq!(
        (&r["kind"], &r["senderId"]),
        (&json!("message"), &json!(s.anna.user_id)),
        "{r}"
    );
    assert_eq!(r["senderName"], "Anna Berg", "{r}");
    assert_eq!(r["senderAvatarUrl"], avatar.as_str(), "{r}");
    assert!(r.get("encryptedSender").is_none(), "{r}");
    let history = s.readable(&sent).await;
    assert_eq!(history["senderName"], r["senderName"], "the history's name");

    // Native session with a key: sealed with the snippet, nothing of it in the clear.
    let page = wait_for_results(&s.app, &s.session.access_token, "q=blueberry", 1).await;
    let r = the_one(&page);
    assert!(r.get("senderName").is_none(), "{r}");
    assert!(r["senderAvatarUrl"].is_null(), "{r}");
    let sender = open(&s.secret, &r["encryptedSender"]);
    assert_eq!(
        sender,
        json!({"senderName": "Anna Berg", "senderAvatarUrl": avatar}),
        "{sender}"
    );

    // Anna has another name in another Switchboard user's room ("Anna (for Eve)"): Eve's
    // result carries it (the marker that it is stored), the user's results never do.
    let eve = s.app.sign_up("names.eve.search").await;
    let eve_mx = me_on_matrix(&eve);
    let theirs = s
        .anna
        .create_room(Some("Eve's"), &[&eve_mx.user_id], false)
        .await;
    eve_mx.join(&theirs).await;
    let member = json!({"membership": "join", "displayname": "Anna (for Eve)"});
    s.anna
        .send_state(&theirs, "m.room.member", &s.anna.user_id, member)
        .await;
    s.anna.send_text(&theirs, "blueberry jam for Eve").await;
    let page = wait_for_results(&s.app, &eve.access_token, "q=blueberry", 1).await;
    let r = the_one(&page);
    assert_eq!(
        (&r["roomId"], &r["senderName"]),
        (&json!(theirs), &json!("Anna (for Eve)")),
        "Eve's own view (no key: plain): {r}"
    );
    for bearer in [&token, &s.session.access_token] {
        let page = crate::search::search(&s.app, bearer, "q=blueberry").await;
        let r = the_one(&page);
        assert_eq!(r["roomId"], s.room.as_str(), "{page}");
        assert!(!page.to_string().contains("for Eve"), "{page}");
    }
    let sender = open(
        &s.secret,
        &the_one(&crate::search::search(&s.app, &s.session.access_token, "q=blueberry").await)
            ["encryptedSender"],
    );
    assert_eq!(sender["senderName"], "Anna Berg", "{sender}");
}
