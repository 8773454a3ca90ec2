//! The bench user: written into the database before the server starts.

use base64::Engine as _;
use switchboard::crypto::DataKey;
use switchboard::services::conversations::{seal_room_field, RoomField};
use switchboard::services::{keys, tokens, users};
use switchboard::store::rooms::{self, RoomRow};
use switchboard::store::{user_keys, users as user_store};
use switchboard::AppState;

use super::synapse::Account;

/// The Switchboard user of Matrix account `who` (its access token sealed as sign-in leaves
/// it), a registered X25519 key, `room_count - 1` rooms besides the bench room (which the
/// sync worker stores), a personal token and a JWT.
pub async fn seed(state: &AppState, who: &Account, room_count: u64) -> (String, String) {
    let mut user = users::new_user(state, "bench@example.test", None);
    user.matrix_user_id = Some(who.user_id.clone());
    user.matrix_device_id = Some(who.device_id.clone());
    user.matrix_access_token_enc =
        Some(users::seal_matrix_token(&state.master, &user, &who.token).expect("seal"));
    let dek: DataKey = users::data_key(&state.master, &user).expect("data key");
    // A real public key (a fixed test secret): sealing to it must succeed.
    let secret = x25519_dalek::StaticSecret::from([9u8; 32]);
    let public = base64::engine::general_purpose::STANDARD
        .encode(x25519_dalek::PublicKey::from(&secret).as_bytes());
    let key = keys::new_key_row(&user.id, public, None, 1, user.created_at);
    let uid = user.id.clone();
    let now_ms = user.created_at * 1000;
    state
        .store
        .run(move |c| {
            let tx = c.transaction()?;
            user_store::insert(&tx, &user)?;
            user_keys::upsert(&tx, &key)?;
            for r in 1..room_count.max(1) as i64 {
                let room_id = format!("!bench{r:04}:localhost");
                let name = seal_room_field(
                    &dek,
                    &user.id,
                    &room_id,
                    RoomField::Name,
                    &format!("Bench room {r}"),
                );
                rooms::upsert(
                    &tx,
                    &RoomRow {
                        user_id: user.id.clone(),
                        room_id,
                        name_enc: Some(name),
                        platform: Some("whatsapp".to_owned()),
                        member_count: 2,
                        unread_count: r % 7,
                        importance: (r % 10) as f64 / 10.0,
                        last_message_ts: Some(now_ms - r * 60_000),
                        membership: "join".to_owned(),
                        created_at: user.created_at,
                        updated_at: user.created_at,
                        ..RoomRow::default()
                    },
                )?;
            }
            Ok::<_, switchboard::store::StoreError>(tx.commit()?)
        })
        .await
        .expect("seed");
    let token = tokens::create(state, &uid, "bench", None)
        .await
        .expect("personal token")
        .token;
    let (jwt, _) = state.jwt.issue(&uid, None).expect("jwt");
    (token, jwt)
}
