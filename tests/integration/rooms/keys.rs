//! Keys: personal tokens after the user's keys were deleted.

use serde_json::{json, Value};

use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::common::client::Refusal;
use crate::common::*;
use crate::tokens::create_token;

use super::{fake_room_id, list, room_ids, seed_room, user_id, Seed};

#[tokio::test]
async fn personal_tokens_get_no_signing_key_after_the_keys_were_deleted() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rooms-shred").await;
    let uid = user_id(&user);
    let t = create_token(&app, &user, json!({"name": "shred"})).await;
    let room = fake_room_id("shred");
    seed_room(&app, &uid, Seed::new(&room).name("Secret name"));
    assert_eq!(
        list(&app, &t.token, "").await["rooms"][0]["name"],
        "Secret name"
    );

    let key = base64_key();
    let keys = app.user(&user).keys();
    keys.register(json!({"publicKey": key})).await.unwrap();
    keys.delete(Some(CONFIRM_KEY_DELETION)).await.unwrap();

    let rooms = app.api(&t.token).rooms();
    rooms.list("").await.refused(409, "NO_SIGNING_KEY");
    rooms.get(&room).await.refused(409, "NO_SIGNING_KEY");
    // Actions that return nothing readable still work; native lists too.
    app.api(&t.token).rooms().act(&room, "pin").await.unwrap();
    let body = list(&app, &user.access_token, "").await;
    assert_eq!(room_ids(&body), vec![room.clone()]);

    // New keys: readable again, but the old name is gone with the old data key.
    keys.register(json!({"publicKey": base64_key()}))
        .await
        .unwrap();
    let body = list(&app, &t.token, "").await;
    assert_eq!(body["rooms"][0]["name"], Value::Null);
}

fn base64_key() -> String {
    use base64::Engine as _;
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
