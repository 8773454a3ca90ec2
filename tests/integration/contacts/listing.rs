//! `GET /api/contacts`: one bridge, search, a bridge that cannot list, the merged list
//! with a failing bridge, and bad input.

use serde_json::Value;

use super::*;
use crate::common::bridge::{Network, Op};

#[tokio::test]
async fn contacts_are_listed_searched_and_merged_and_a_failing_bridge_is_named() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let tg = BridgeEmulator::start(Network::Telegram).await;
    let mut dc = BridgeEmulator::start(Network::Discord).await;
    let (app, user) = setup(&[&wa, &tg, &dc], "").await;
    let token = personal_token(&app, &user).await;

    // One bridge: its whole contact list, in the documented shape.
    let list = expect_json(contacts(&app, &token, "?platform=whatsapp").await, 200).await;
    assert_eq!(
        ids(&list),
        [
            "whatsapp:4915550001",
            "whatsapp:4915550002",
            "whatsapp:4915550003"
        ]
    );
    assert_eq!(
        sorted_keys(&list),
        ["contacts", "supported", "unavailable", "unsupported"]
    );
    assert_eq!(list["supported"], true);
    let alice = &list["contacts"][0];
    assert_eq!(
        sorted_keys(alice),
        [
            "avatarUrl",
            "id",
            "identifiers",
            "matrixId",
            "name",
            "platform",
            "roomId"
        ]
    );
    assert_eq!(alice["name"], "Alice Wonder");
    assert_eq!(alice["identifiers"], serde_json::json!(["tel:+4915550001"]));
    assert_eq!(alice["roomId"], Value::Null, "{alice}");
    // The bridge was asked for the user's Matrix ID.
    let asked = wa.requests();
    let last = asked
        .iter()
        .rev()
        .find(|r| r.path.ends_with("/v3/contacts"))
        .unwrap();
    assert_eq!(last.user_id.as_deref(), Some(mxid(&user).as_str()));

    // Search goes to search_users with the query.
    let found = expect_json(
        contacts(&app, &token, "?platform=whatsapp&q=bob").await,
        200,
    )
    .await;
    assert_eq!(ids(&found), ["whatsapp:4915550002"]);
    let search = wa
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.path.ends_with("/search_users"))
        .unwrap();
    assert_eq!(search.body["query"], "bob");
    let limited = expect_json(
        contacts(&app, &token, "?platform=whatsapp&limit=2").await,
        200,
    )
    .await;
    assert_eq!(ids(&limited).len(), 2);

    // A bridge that cannot list contacts (M_UNRECOGNIZED): an empty list, not an error.
    let tele = expect_json(contacts(&app, &token, "?platform=telegram").await, 200).await;
    assert_eq!(tele["supported"], false, "{tele}");
    assert_eq!(ids(&tele), Vec::<String>::new());
    assert_eq!(tele["unsupported"], serde_json::json!(["telegram"]));

    // Everything merged, sorted by name; Telegram named as unsupported.
    let all = expect_json(contacts(&app, &token, "").await, 200).await;
    assert_eq!(
        ids(&all),
        [
            "whatsapp:4915550001",
            "whatsapp:4915550002",
            "discord:80351110224678914",
            "whatsapp:4915550003",
            "discord:80351110224678913",
        ]
    );
    assert_eq!(all["unavailable"], serde_json::json!([]));
    assert_eq!(all["unsupported"], serde_json::json!(["telegram"]));
    // Search across platforms: each keeps its ranking, they take turns.
    let bobs = expect_json(contacts(&app, &token, "?q=bob").await, 200).await;
    assert_eq!(
        ids(&bobs),
        ["whatsapp:4915550002", "discord:80351110224678914"]
    );

    // A failing bridge is left out and named; the list is still 200.
    dc.fail_next(
        Op::Contacts,
        500,
        "M_UNKNOWN",
        "Internal error fetching contact list",
    );
    let partial = expect_json(contacts(&app, &token, "").await, 200).await;
    assert_eq!(
        partial["unavailable"],
        serde_json::json!(["discord"]),
        "{partial}"
    );
    assert_eq!(ids(&partial).len(), 3, "{partial}");
    // Alone, the same failure is the bridge's error, naming it.
    dc.fail_next(
        Op::Contacts,
        500,
        "M_UNKNOWN",
        "Internal error fetching contact list",
    );
    let err = expect_error(
        contacts(&app, &token, "?platform=discord").await,
        502,
        "bridge_error",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("Discord"),
        "{err}"
    );
    // A bridge that is down: named in the merged list, 503 alone.
    dc.stop().await;
    let down = expect_json(contacts(&app, &token, "").await, 200).await;
    assert_eq!(
        down["unavailable"],
        serde_json::json!(["discord"]),
        "{down}"
    );
    assert_eq!(ids(&down).len(), 3);
    expect_error(
        contacts(&app, &token, "?platform=discord").await,
        503,
        "bridge_unavailable",
    )
    .await;
}

#[tokio::test]
async fn without_a_login_or_with_bad_input_the_answers_say_why() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let app = TestApp::start_with_mail_and(wa.config_section()).await;
    let user = app.sign_up("contacts.nologin").await;
    let token = &user.access_token;

    let err = expect_error(
        contacts(&app, token, "?platform=whatsapp").await,
        409,
        "not_logged_in",
    )
    .await;
    assert!(
        err["message"].as_str().unwrap().contains("WhatsApp"),
        "{err}"
    );
    // Merged: a bridge without a login is simply not part of it.
    let all = expect_json(contacts(&app, token, "").await, 200).await;
    assert_eq!(ids(&all), Vec::<String>::new());
    assert_eq!(all["unavailable"], serde_json::json!([]));
    // Telegram is not configured on this server.
    expect_error(
        contacts(&app, token, "?platform=telegram").await,
        503,
        "bridge_not_configured",
    )
    .await;

    for (query, field) in [
        ("?limit=0", "limit"),
        ("?limit=101", "limit"),
        (&*format!("?q={}", "a".repeat(201)), "q"),
    ] {
        let body = expect_error(contacts(&app, token, query).await, 400, "invalid_request").await;
        assert!(
            body["message"].as_str().unwrap().starts_with(field),
            "{query}: {body}"
        );
    }
    expect_error(
        contacts(&app, token, "?platform=signal").await,
        400,
        "invalid_platform",
    )
    .await;
}
