//! Names in the web app (tests/web/names.py, Chromium): a friend with a display name writes to
//! a group; the inbox row shows "Anna: see you Saturday", the conversation shows "Anna Berg"
//! (never the Matrix ID) with her avatar, and the archive action reads as an action.

use serde_json::json;

use super::PNG_1X1;
use crate::common::chromium::{assert_steps, run_script, script_config, SignInCodes};
use crate::common::matrix as mx;
use crate::common::*;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_app_shows_names_avatars_and_the_last_line() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("web.names");
    let alice = app.sign_in(&email, None).await;
    let alice_mxid = alice.user["matrixUserId"].as_str().unwrap().to_owned();
    let anna = mx::register("webanna").await;
    anna.set_display_name("Anna Berg").await;
    let avatar = anna
        .upload(STANDARD.decode(PNG_1X1).unwrap(), "image/png")
        .await;
    anna.set_avatar_url(&avatar).await;
    let room = anna
        .create_room(Some("Book club"), &[&alice_mxid], false)
        .await;
    anna.send_text(&room, "see you Saturday").await;

    let config = script_config(
        &app,
        &email,
        json!({
            "roomId": room,
            "roomName": "Book club",
            "senderId": anna.user_id,
        }),
    );
    let mut codes = SignInCodes::new(&email);
    let report = run_script(
        "tests/web/names.py",
        config,
        async |verb: &str, arg: &str| match verb {
            "CODE" => codes.next(arg).await,
            other => panic!("unknown request from the browser script: {other} {arg}"),
        },
    )
    .await;
    assert_steps(
        &report,
        &[
            "last_line_in_inbox",
            "name_not_id",
            "avatar_shown",
            "archive_reads_as_action",
        ],
    );
}
