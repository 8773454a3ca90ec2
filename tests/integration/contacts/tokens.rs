//! Personal tokens and the new-chat budget: tokens created before allowlist version 4
//! are refused until they opt in; MCP's `list_contacts` and `start_chat`; 429 beyond
//! `[rate_limit] new_chats_per_hour`, shared by every token and session of the user.

use std::time::Duration;

use super::*;
use crate::common::bridge::Network;
use crate::search::{opt_in, token_with_id};

fn db(app: &TestApp) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

#[tokio::test]
async fn older_tokens_opt_in_mcp_wraps_the_routes_and_the_budget_answers_429() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "[rate_limit]\nnew_chats_per_hour = 3\n").await;
    let (id, token) = token_with_id(&app, &user).await;
    // A token from before contacts existed (allowlist version 3).
    db(&app)
        .execute(
            "UPDATE api_tokens SET allowlist_version = 3 WHERE id = ?1",
            [&id],
        )
        .unwrap();
    expect_error(
        contacts(&app, &token, "?platform=whatsapp").await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        start_chat(&app, &token, "whatsapp", "+4915550001").await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    assert!(requests_to(&wa, "/v3/")
        .iter()
        .all(|p| !p.contains("contacts") && !p.contains("resolve")));
    opt_in(&app, &user, &id).await;
    let list = expect_json(contacts(&app, &token, "?platform=whatsapp").await, 200).await;
    assert_eq!(ids(&list).len(), 3);

    // MCP: the tools are the routes, with the token's rights (start_chat acts: opt in).
    crate::mcp::actions::enable(&app, &user, &id, true).await;
    let report = crate::mcp::mcp_client(
        &app,
        &token,
        json!([
            {"tool": "list_contacts", "args": {"platform": "whatsapp", "q": "carla"}},
            {"tool": "start_chat", "args": {"platform": "whatsapp", "identifier": "+4915550003"}},
            {"tool": "start_chat", "args": {"platform": "whatsapp", "identifier": "../x"}},
        ]),
    )
    .await;
    let r = &report["results"];
    assert_eq!(r[0]["ok"]["contacts"][0]["id"], "4915550003", "{report}");
    assert_eq!(r[1]["ok"]["created"], true, "{report}");
    let room = r[1]["ok"]["roomId"].as_str().unwrap().to_owned();
    assert_eq!(
        r[2]["error"]["data"]["error"], "invalid_request",
        "{report}"
    );

    // Budget of 3: the MCP start was one; invalid input did not count.
    let again = expect_json(
        start_chat(&app, &token, "whatsapp", "4915550003").await,
        200,
    )
    .await;
    assert_eq!(again["roomId"], room.as_str());
    expect_json(
        start_chat(&app, &user.access_token, "whatsapp", "+4915550001").await,
        201,
    )
    .await;
    // The fourth, whoever sends it, is refused with Retry-After.
    for bearer in [&token, &user.access_token] {
        let resp = start_chat(&app, bearer, "whatsapp", "+4915550002").await;
        let retry: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=3600).contains(&retry), "{retry}");
        expect_error(resp, 429, "rate_limited").await;
    }
    assert!(wa.portal_of(&mxid(&user), "4915550002").is_none());
    // Listing is not a new chat: still allowed.
    expect_json(contacts(&app, &token, "?platform=whatsapp").await, 200).await;
}
