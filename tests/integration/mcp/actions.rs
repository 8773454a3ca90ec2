//! MCP tools that act (send, compose, create, change, delete) need the token's own
//! `mcpActions` opt-in, separate from reading (issue 21 #6): one token reads mail an
//! attacker may have written, so it must not also send unless its owner said so.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;
use crate::mcp::{error_code, mcp_client};
use crate::search::token_with_id;

/// `PATCH /api/developer/tokens/{id}` `{"mcpActions": on}`; returns the token as listed.
pub(crate) async fn enable(app: &TestApp, s: &Session, token_id: &str, on: bool) -> Value {
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&s.access_token),
            Some(json!({"mcpActions": on})),
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["mcpActions"], on, "{body}");
    body
}

fn listed(tokens: &Value, id: &str) -> Value {
    tokens["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {tokens}"))
}

#[tokio::test]
async fn acting_tools_are_refused_until_the_token_opts_in() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("mcp.acts").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    let list = expect_json(
        app.get_auth("/api/developer/tokens", &me.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        listed(&list, &token_id)["mcpActions"],
        false,
        "off by default"
    );

    let acting = json!([
        {"tool": "send_text", "args": {"roomId": "!nowhere:localhost", "content": "hi", "txnId": "a-1"}},
        {"tool": "compose_email", "args": {"to": ["x@example.test"], "subject": "s", "text": "t"}},
        {"tool": "create_reminder", "args": {"title": "call", "dueAt": "2999-01-01T09:00:00Z"}},
        {"tool": "list_reminders", "args": {}},
        {"tool": "list_rooms", "args": {}},
    ]);
    let report = mcp_client(&app, &token, acting.clone()).await;
    let r = &report["results"];
    for i in 0..3 {
        assert_eq!(error_code(&r[i]), "mcp_actions_not_enabled", "{}", r[i]);
        assert_eq!(r[i]["error"]["data"]["status"], 403, "{}", r[i]);
        let message = r[i]["error"]["message"].as_str().unwrap();
        assert!(message.contains("mcpActions"), "{message}");
    }
    // Reading tools are unaffected.
    assert!(r[3]["ok"]["reminders"].is_array(), "{}", r[3]);
    assert!(r[4]["ok"]["rooms"].is_array(), "{}", r[4]);
    // Nothing was created by the refused call.
    assert_eq!(r[3]["ok"]["reminders"], json!([]), "{}", r[3]);

    // A native session cannot be talked into it by a token: only the owner's PATCH.
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&token),
            Some(json!({"mcpActions": true})),
        )
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;
    let other = app.sign_up("mcp.other").await;
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&other.access_token),
            Some(json!({"mcpActions": true})),
        )
        .await;
    assert_eq!(resp.status(), 404);
    let resp = app
        .send(
            Method::PATCH,
            &format!("/api/developer/tokens/{token_id}"),
            Some(&me.access_token),
            Some(json!({})),
        )
        .await;
    expect_error(resp, 400, "invalid_request").await;

    enable(&app, &me, &token_id, true).await;
    let list = expect_json(
        app.get_auth("/api/developer/tokens", &me.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(listed(&list, &token_id)["mcpActions"], true);
    let report = mcp_client(&app, &token, acting.clone()).await;
    let r = &report["results"];
    // Now the routes answer: the room is not the caller's, the mailbox is not set up, the
    // reminder is created.
    assert_ne!(error_code(&r[0]), "mcp_actions_not_enabled", "{}", r[0]);
    assert_ne!(error_code(&r[1]), "mcp_actions_not_enabled", "{}", r[1]);
    assert_eq!(r[2]["ok"]["reminder"]["title"], "call", "{}", r[2]);

    // Switched off again: refused at once.
    enable(&app, &me, &token_id, false).await;
    let report = mcp_client(&app, &token, json!([acting[0].clone()])).await;
    assert_eq!(error_code(&report["results"][0]), "mcp_actions_not_enabled");
}
