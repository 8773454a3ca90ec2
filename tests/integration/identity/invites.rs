//! Trust in the homeserver's rooms, against the real binary and the real Synapse: only
//! invitations from the configured bridge bot and its ghosts are joined automatically;
//! `m.bridge` state counts only from the configured bot; every other invitation is listed
//! as `invite` until the user accepts or declines it (native sessions only).

use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::matrix::{self, MatrixUser};
use crate::common::*;

const WAIT: Duration = Duration::from_secs(20);

/// A server whose WhatsApp bridge bot is `bot` (plus `extra` keys of that section).
async fn app_with_bot(bot: &MatrixUser, extra: &str) -> TestApp {
    TestApp::start_with_mail_and(format!(
        "[bridges.whatsapp]\nbot_user_id = \"{}\"\n{extra}\n",
        bot.user_id
    ))
    .await
}

fn me(session: &Session) -> String {
    session.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

/// `m.bridge` state claiming a WhatsApp direct chat.
fn whatsapp_bridge_state(bot: &str) -> Value {
    json!({
        "bridgebot": bot,
        "protocol": {"id": "whatsapp", "displayname": "WhatsApp"},
        "channel": {"id": "4915550001"},
        "com.beeper.room_type": "dm",
    })
}

/// A direct-chat room created by `creator` inviting `invite`, with WhatsApp `m.bridge`
/// state sent by `creator` at creation.
async fn bridged_dm(creator: &MatrixUser, bot: &str, invite: &[&str]) -> String {
    creator
        .create_room_with(json!({
            "preset": "private_chat",
            "is_direct": true,
            "invite": invite,
            "initial_state": [{
                "type": "m.bridge",
                "state_key": "net.example.whatsapp://whatsapp/4915550001",
                "content": whatsapp_bridge_state(bot),
            }],
        }))
        .await
}

/// Polls `GET /api/rooms/{roomId}` until `done` holds for the room.
async fn wait_for_room(
    app: &TestApp,
    token: &str,
    room_id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(r) = app.api(token).rooms().get(room_id).await {
            if done(&r) {
                return r;
            }
            assert!(Instant::now() < deadline, "{what}: {r}");
        }
        assert!(
            Instant::now() < deadline,
            "{what}: room {room_id} not listed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the sync worker stored the message `event_id` (a positive marker that it
/// ingested the room up to there).
async fn wait_for_message(app: &TestApp, user_id: &str, event_id: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let conn = Connection::open_with_flags(
            app.data_dir().join("switchboard.db"),
            OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM messages WHERE user_id = ?1 AND event_id = ?2",
                [user_id, event_id],
                |r| r.get(0),
            )
            .unwrap();
        if n == 1 {
            return;
        }
        assert!(Instant::now() < deadline, "message {event_id} not stored");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn listed(list: &Value, room_id: &str) -> Option<Value> {
    list["rooms"]
        .as_array()
        .expect("rooms")
        .iter()
        .find(|r| r["roomId"] == room_id)
        .cloned()
}

async fn list(app: &TestApp, token: &str) -> Value {
    let rooms = app.api(token).rooms();
    rooms
        .list("?archived=all&limit=100")
        .await
        .expect("room list")
}

#[tokio::test]
async fn a_strangers_forged_whatsapp_invite_waits_for_the_user_to_accept_or_decline() {
    let bot = matrix::register("wabot").await;
    let app = app_with_bot(&bot, "").await;
    let session = app.sign_up("invites").await;
    let (me, user_id) = (
        me(&session),
        session.user["id"].as_str().unwrap().to_owned(),
    );
    let script = personal_token(&app, &session).await;
    let native = session.access_token.clone();

    // A stranger plants two "WhatsApp" direct chats (forged m.bridge naming the real bot)
    // with themselves as the recipient; then the real bot invites the user. The bot's
    // invite comes last: once it is joined, the worker has dealt with the stranger's too.
    let mallory = matrix::register("mallory").await;
    let forged = bridged_dm(&mallory, &bot.user_id, &[&me]).await;
    let hello = mallory.send_text(&forged, "hello, it's your bank").await;
    let declined = bridged_dm(&mallory, &bot.user_id, &[&me]).await;
    let portal = bridged_dm(&bot, &bot.user_id, &[&me]).await;
    bot.wait_for_member(&portal, &me, WAIT).await;

    // Listed, marked as an invitation from the stranger, not bridged, not joined.
    let r = app.api(&native).rooms().get(&forged).await.unwrap();
    assert_eq!(r["membership"], "invite", "{r}");
    assert_eq!(r["invitedBy"], mallory.user_id.as_str());
    assert_eq!(r["platform"], Value::Null);
    let rooms = list(&app, &script).await;
    let l = listed(&rooms, &forged).expect("the invitation is listed");
    assert_eq!(l["membership"], "invite");
    assert_ne!(l["platform"], "whatsapp");
    assert!(!mallory.joined_members(&forged).await.contains(&me));
    assert_eq!(
        mallory.membership_of(&forged, &me).await.as_deref(),
        Some("invite")
    );

    // A script cannot send approved text to the stranger.
    let scripted = app.api(&script);
    let body = json!({"content": "my PIN is 1234", "txnId": "t1"});
    let sent = scripted.messages().send(&forged, body).await;
    sent.refused(409, "not_joined");
    // Marking it read stays here: no receipt reaches the stranger.
    let body = scripted.rooms().act(&forged, "read").await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("nothing is sent to the homeserver"),
        "{body}"
    );
    let marker = mallory.send_text(&forged, "are you there?").await;
    assert!(!marker.is_empty());
    assert!(!mallory.receipt_readers(&forged).await.contains(&me));

    // Scripts can neither accept nor decline.
    for action in ["accept", "decline"] {
        let acted = scripted.rooms().act(&forged, action).await;
        acted.refused(403, "forbidden_for_api_token");
    }
    assert_eq!(
        mallory.membership_of(&forged, &me).await.as_deref(),
        Some("invite")
    );

    // The user accepts one: joined on Synapse; the forged bridge state is still ignored
    // once the worker has the room's full state (its first message is the marker).
    let rooms = app.api(&native).rooms();
    let accepted = rooms.act(&forged, "accept").await.unwrap()["room"].clone();
    assert_eq!(accepted["membership"], "join", "{accepted}");
    assert_eq!(accepted["invitedBy"], Value::Null);
    mallory.wait_for_member(&forged, &me, WAIT).await;
    wait_for_message(&app, &user_id, &hello).await;
    let r = app.api(&native).rooms().get(&forged).await.unwrap();
    assert_eq!(r["membership"], "join");
    assert_eq!(r["platform"], Value::Null, "{r}");
    for action in ["accept", "decline"] {
        let acted = rooms.act(&forged, action).await;
        acted.refused(409, "not_invited");
    }

    // And declines the other: left on Synapse, gone from the service.
    let body = rooms.act(&declined, "decline").await.unwrap();
    assert_eq!(body["roomId"], declined.as_str());
    assert_eq!(
        mallory.membership_of(&declined, &me).await.as_deref(),
        Some("leave")
    );
    rooms.get(&declined).await.refused(404, "not_found");
    assert!(listed(&list(&app, &script).await, &declined).is_none());
    // Rooms the user does not have: 404.
    for action in ["accept", "decline"] {
        let acted = rooms.act("!nothing-here:localhost", action).await;
        acted.refused(404, "not_found");
    }
}

#[tokio::test]
async fn invites_from_the_bridge_bot_and_its_ghosts_are_joined_and_the_bots_bridge_state_counts() {
    let bot = matrix::register("wabot").await;
    // A custom ghost prefix: `wa_…` users are the bridge's ghosts, `whatsapp_…` are not.
    let app = app_with_bot(&bot, "ghost_prefix = \"wa_\"").await;
    let session = app.sign_up("invites-bot").await;
    let me = me(&session);
    let native = session.access_token.clone();
    let ghost = matrix::register("wa").await;
    let lookalike = matrix::register("whatsapp").await;

    // The bot's portal: a WhatsApp DM with the ghost, bridge state sent by the bot.
    let portal = bridged_dm(&bot, &bot.user_id, &[&me, &ghost.user_id]).await;
    ghost.join(&portal).await;
    let hi = ghost.send_text(&portal, "hi from WhatsApp").await;
    // A look-alike's invite first, then the ghost's own.
    let fake = lookalike.create_room(None, &[&me], true).await;
    let from_ghost = ghost.create_room(None, &[&me], true).await;

    bot.wait_for_member(&portal, &me, WAIT).await;
    ghost.wait_for_member(&from_ghost, &me, WAIT).await;
    let r = wait_for_room(&app, &native, &portal, "bridged by the bot", |r| {
        r["platform"] == "whatsapp"
    })
    .await;
    assert_eq!(r["membership"], "join");
    assert_eq!(r["isDirect"], true);
    assert_eq!(r["recipientId"], ghost.user_id.as_str());
    wait_for_message(&app, session.user["id"].as_str().unwrap(), &hi).await;
    wait_for_room(&app, &native, &from_ghost, "ghost invite joined", |r| {
        r["membership"] == "join"
    })
    .await;

    let r = app.api(&native).rooms().get(&fake).await.unwrap();
    assert_eq!(r["membership"], "invite", "{r}");
    assert_eq!(r["invitedBy"], lookalike.user_id.as_str());
    assert_eq!(
        lookalike.membership_of(&fake, &me).await.as_deref(),
        Some("invite")
    );
}

#[tokio::test]
async fn forged_bridge_state_from_a_member_of_a_joined_room_is_ignored() {
    let bot = matrix::register("wabot").await;
    let app = app_with_bot(&bot, "").await;
    let session = app.sign_up("invites-forged").await;
    let me = me(&session);
    let user_id = session.user["id"].as_str().unwrap().to_owned();
    let mine = MatrixUser::from_token(
        &me,
        session
            .matrix_access_token
            .as_deref()
            .expect("matrix token"),
    );
    let mallory = matrix::register("mallory").await;

    // The user's own room; Mallory (with full power) turns it into a "WhatsApp DM".
    let room_id = mine
        .create_room_with(json!({
            "preset": "trusted_private_chat",
            "name": "Book club",
            "invite": [mallory.user_id],
        }))
        .await;
    mallory.join(&room_id).await;
    mallory
        .send_state(
            &room_id,
            "m.bridge",
            "net.example.whatsapp://whatsapp/1",
            whatsapp_bridge_state(&bot.user_id),
        )
        .await;
    mallory
        .send_state(
            &room_id,
            "uk.half-shot.bridge",
            "net.example.whatsapp://whatsapp/1",
            whatsapp_bridge_state(&bot.user_id),
        )
        .await;
    let marker = mallory.send_text(&room_id, "now we are on WhatsApp").await;
    wait_for_message(&app, &user_id, &marker).await;

    let r = app
        .api(&session.access_token)
        .rooms()
        .get(&room_id)
        .await
        .unwrap();
    assert_eq!(r["membership"], "join");
    assert_eq!(r["platform"], Value::Null, "{r}");
    assert_eq!(r["isDirect"], false);
    assert_eq!(r["recipientId"], Value::Null);
}

/// `GET /api/bridges/chat-counts` against the room list, for a user with a joined plain
/// Matrix room, a pending plain invitation and a bridged portal joined from the bot's
/// invitation: the counts add up to the list, platform by platform (plain rooms under
/// `matrix`), for the native session and for a personal token.
#[tokio::test]
async fn chat_counts_match_the_room_list_with_plain_bridged_and_invited_rooms() {
    let bot = matrix::register("wabot").await;
    let app = app_with_bot(&bot, "").await;
    let session = app.sign_up("counts").await;
    let me = me(&session);
    let native = session.access_token.clone();
    let script = personal_token(&app, &session).await;
    let bob = matrix::register("bob").await;

    let plain = bob.create_room(Some("Plain"), &[&me], false).await;
    accept_invite(&app, &native, &plain).await;
    let pending = bob.create_room(Some("Pending"), &[&me], false).await;
    let portal = bridged_dm(&bot, &bot.user_id, &[&me]).await;
    bot.wait_for_member(&portal, &me, WAIT).await;
    wait_for_room(&app, &native, &portal, "portal bridged", |r| {
        r["platform"] == "whatsapp" && r["membership"] == "join"
    })
    .await;
    wait_for_room(&app, &native, &pending, "invitation listed", |r| {
        r["membership"] == "invite"
    })
    .await;

    for token in [&native, &script] {
        let api = app.api(token);
        let rooms = api.rooms().list("?limit=100").await.unwrap();
        let rooms = rooms["rooms"].as_array().unwrap().clone();
        let counts = api.bridges().chat_counts().await.unwrap();
        let count = |p: &str| {
            counts["counts"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["platform"] == p)
                .unwrap_or_else(|| panic!("no {p} in {counts}"))["count"]
                .as_i64()
                .unwrap()
        };
        let listed =
            |p: Option<&str>| rooms.iter().filter(|r| r["platform"].as_str() == p).count() as i64;
        assert_eq!(rooms.len(), 3, "{rooms:?}");
        assert_eq!(counts["total"], 3, "{counts}");
        assert_eq!((count("whatsapp"), listed(Some("whatsapp"))), (1, 1));
        assert_eq!((count("matrix"), listed(None)), (2, 2), "{counts}");
        assert_eq!((count("telegram"), count("discord")), (0, 0));
    }
}
