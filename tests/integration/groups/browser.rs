//! Groups in the web app (tests/web/groups.py, Chromium): a group created from the New group
//! screen (a contact picked from the list, a Matrix ID typed) is an encrypted room on Synapse
//! with both invited and shows in the inbox; renaming it from the group's details screen
//! reaches Synapse.

use super::*;
use crate::common::chromium::{assert_steps, run_script, script_config, SignInCodes};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_made_in_the_web_app_is_listed_and_renamed_on_synapse() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("web.groups");
    let user = app.sign_in(&email, None).await;
    let (bob, carol) = (person().await, person().await);
    bob.set_display_name("Bob Climber").await;
    // Bob is a contact: the partner of a direct chat on Matrix.
    let dm = json!({"platform": "matrix", "identifier": bob.user_id});
    expect_json(
        app.post_json("/api/chats", Some(&user.access_token), dm)
            .await,
        201,
    )
    .await;
    // The screen lists the partners of the user's direct chats that the sync has stored
    // as direct (`m.direct` comes with a sync): wait until Bob is listed, by name, before
    // the browser looks for him.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = expect_json(
            app.get_auth("/api/contacts?platform=matrix", &user.access_token)
                .await,
            200,
        )
        .await;
        let names: Vec<&str> = listed["contacts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        if names.contains(&"Bob Climber") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Bob never listed as a contact: {listed}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let config = script_config(
        &app,
        &email,
        json!({
            "bobName": "Bob Climber",
            "carolId": carol.user_id,
        }),
    );
    let mut codes = SignInCodes::new(&email);
    let report = run_script(
        "tests/web/groups.py",
        config,
        async |verb: &str, arg: &str| match verb {
            "CODE" => codes.next(arg).await,
            "CREATED" => {
                // Bob was invited: he joins and reads the room's state.
                bob.join(arg).await;
                let encrypted = bob.state(arg, "m.room.encryption", "").await;
                let carol_in = bob.membership_of(arg, &carol.user_id).await;
                if encrypted["algorithm"] != "m.megolm.v1.aes-sha2" {
                    format!("not encrypted: {encrypted}")
                } else if carol_in.as_deref() != Some("invite") {
                    format!("Carol is {carol_in:?}, not invited")
                } else {
                    "ok".to_owned()
                }
            }
            "NAME" => bob.state(arg, "m.room.name", "").await["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            other => panic!("unknown request from the browser script: {other} {arg}"),
        },
    )
    .await;
    assert_steps(
        &report,
        &[
            "picked_members",
            "created_on_synapse",
            "group_in_inbox",
            "details_members",
            "renamed_on_synapse",
        ],
    );
}
