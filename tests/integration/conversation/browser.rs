//! The web app in Chromium (tests/web/live.py): "… is typing" when the friend types, typing
//! notices sent while the user writes, "Seen" after the friend's receipt, Mark unread, the
//! privacy switches, and a draft typed in one browser context restored in a second.

use super::*;
use crate::common::chromium::{assert_steps, run_script, script_config, SignInCodes};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_app_shows_typing_seen_and_carries_a_draft_to_another_browser() {
    let app = TestApp::start_with_mail().await;
    let chat = Chat::new(&app, "liveweb").await;
    let incoming = "are you there?";
    send_text(&chat.friend_token, &chat.room, incoming).await;
    chat.room_until(&app, "the friend's message", |r| {
        r["lastMessageAt"].is_i64()
    })
    .await;
    let email = chat.user.email.clone();
    let config = script_config(
        &app,
        &email,
        json!({
            "roomId": chat.room,
            "incoming": incoming,
        }),
    );
    let (_, since) = hs_sync(&chat.friend_token, &chat.room, None).await;
    let mut since = since;
    let mut codes = SignInCodes::new(&email);
    let typing_path = format!(
        "/rooms/{}/typing/{}",
        encode(&chat.room),
        encode(&chat.friend)
    );
    let report = run_script(
        "tests/web/live.py",
        config,
        async |verb: &str, arg: &str| match verb {
            "CODE" => codes.next(arg).await,
            "TYPE" => {
                cs_api(
                    Method::PUT,
                    &typing_path,
                    &chat.friend_token,
                    Some(json!({"typing": true, "timeout": 30000})),
                )
                .await;
                "ok".to_owned()
            }
            "TYPED" => {
                let deadline = Instant::now() + WAIT;
                while Instant::now() < deadline {
                    let (section, next) =
                        hs_sync(&chat.friend_token, &chat.room, Some(&since)).await;
                    since = next;
                    let typed = ephemeral(&section, "m.typing").iter().any(|e| {
                        e["content"]["user_ids"]
                            .as_array()
                            .unwrap()
                            .contains(&json!(chat.me))
                    });
                    if typed {
                        return "yes".to_owned();
                    }
                }
                "no".to_owned()
            }
            "READ" => {
                let page = expect_json(
                    app.get_auth(
                        &format!("/api/messages?roomId={}&limit=20", encode(&chat.room)),
                        &chat.token,
                    )
                    .await,
                    200,
                )
                .await;
                let event_id = page["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["isMine"] == true && m["content"]["body"] == arg)
                    .map(|m| m["eventId"].as_str().unwrap().to_owned())
                    .unwrap_or_else(|| panic!("the user's message {arg:?} is not stored: {page}"));
                cs_api(
                    Method::POST,
                    &format!(
                        "/rooms/{}/receipt/m.read/{}",
                        encode(&chat.room),
                        encode(&event_id)
                    ),
                    &chat.friend_token,
                    Some(json!({})),
                )
                .await;
                "ok".to_owned()
            }
            "UNREAD" => {
                let room = wait_for_room(&app, &chat.token, &chat.room).await;
                room["markedUnread"].to_string()
            }
            other => panic!("unknown request from the browser script: {other} {arg}"),
        },
    )
    .await;
    assert_steps(
        &report,
        &[
            "room_open",
            "typing_shown",
            "typing_sent",
            "seen_shown",
            "draft_saved_sealed",
            "marked_unread",
            "privacy_switches",
            "draft_restored",
        ],
    );
}
