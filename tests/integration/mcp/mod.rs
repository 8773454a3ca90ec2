//! `/mcp` with an independent client: the official MCP Python SDK (`mcp` on PyPI) in the
//! test venv connects with a personal token, lists the tools and calls them against the
//! real binary and Synapse; it is refused where the token is (allowlist opt-in, a room
//! that is not the caller's, lapsed subscription, revoked token, rate limit), with the
//! routes' own codes and messages.

pub mod actions;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::matrix as mx;
use crate::common::*;
use crate::search::{enc, me_on_matrix, opt_in, token_with_id};

/// Runs tests/mcp/mcp_client.py with `calls`; returns its JSON report.
pub(crate) async fn mcp_client(app: &TestApp, bearer: &str, calls: Value) -> Value {
    let plan = json!({"url": app.url("/mcp"), "token": bearer, "calls": calls});
    let script = repo_root().join("tests/mcp/mcp_client.py");
    tokio::task::spawn_blocking(move || {
        let mut child = Command::new(python())
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the MCP client");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(plan.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().expect("MCP client output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "MCP client failed ({}): {stdout}\n{stderr}\n(is `mcp` in the test venv? scripts/test.sh installs it)",
            out.status
        );
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
    })
    .await
    .unwrap()
}

pub(crate) fn error_code(result: &Value) -> &str {
    result["error"]["data"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("not a refusal: {result}"))
}

async fn wait_for_history(app: &TestApp, token: &str, room: &str, want: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = app
            .get_auth(&format!("/api/messages?roomId={}", enc(room)), token)
            .await;
        if resp.status() == 200 {
            let body: Value = resp.json().await.unwrap();
            if body["messages"].as_array().unwrap().len() >= want {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{room} was not ingested");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn the_python_sdk_lists_tools_and_calls_them_as_the_routes_they_wrap() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("mcp.me").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    let bob = mx::register("mcpbob").await;
    let room = me_on_matrix(&me)
        .create_room(None, &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    bob.send_text(&room, "the zebra crossing is closed").await;
    wait_for_history(&app, &token, &room, 1).await;
    crate::mcp::actions::enable(&app, &me, &token_id, true).await;

    let report = first_calls(&app, &token, &room).await;
    the_tools_are_listed_with_the_routes_parameters(&report);
    let reminder = each_call_answers_as_its_route(&report, &room);
    // The message really went out through the homeserver.
    wait_for_history(&app, &token, &room, 2).await;
    opted_in_search_works_and_updates_reach_the_reminder(
        &app, &me, &token_id, &token, &room, &reminder,
    )
    .await;
    a_native_session_is_no_mcp_bearer(&app, &me).await;
    a_lapsed_subscription_is_refused_until_renewed(&app, &me, &token).await;
    a_revoked_token_is_401(&app, &me, &token_id, &token).await;
}

/// Every kind of call, good and bad, in one client run (the token not yet opted in to
/// search): the report.
async fn first_calls(app: &TestApp, token: &str, room: &str) -> Value {
    mcp_client(
        app,
        token,
        json!([
            {"tool": "list_rooms", "args": {"limit": 10}},
            {"tool": "read_room_history", "args": {"roomId": room}},
            {"tool": "search", "args": {"q": "zebra"}},
            {"tool": "send_text", "args": {"roomId": room, "content": "sent over MCP", "txnId": "mcp-1"}},
            {"tool": "create_reminder", "args": {"title": "call bob", "dueAt": "2999-01-01T09:00:00Z"}},
            {"tool": "list_reminders", "args": {}},
            {"tool": "read_room_history", "args": {}},
            {"tool": "list_rooms", "args": {"limit": 0}},
            {"tool": "list_email_threads", "args": {}},
            {"tool": "read_email_thread", "args": {"id": "no-such-thread"}},
        ]),
    )
    .await
}

/// The tools are listed; their arguments are named like the routes' parameters.
fn the_tools_are_listed_with_the_routes_parameters(report: &Value) {
    assert_eq!(report["server"], "switchboard", "{report}");
    let tools: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in [
        "list_rooms",
        "read_room_history",
        "search",
        "send_text",
        "list_reminders",
        "create_reminder",
        "update_reminder",
        "list_email_threads",
        "read_email_thread",
        "read_email_message",
        "compose_email",
    ] {
        assert!(tools.contains(&t), "{t} missing: {tools:?}");
    }
    // Arguments are named like the routes' parameters.
    let schema = &report["schemas"]["read_room_history"];
    assert_eq!(schema["required"], json!(["roomId"]), "{schema}");
    assert!(schema["properties"]["cursor"].is_object());
}

/// Each result of [`first_calls`], as the route answers. Returns the reminder made.
fn each_call_answers_as_its_route(report: &Value, room: &str) -> Value {
    let r = &report["results"];
    let rooms = r[0]["ok"]["rooms"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", r[0]));
    assert!(rooms.iter().any(|x| x["roomId"] == room), "{}", r[0]);
    assert_eq!(
        r[1]["ok"]["messages"][0]["text"], "the zebra crossing is closed",
        "{}",
        r[1]
    );
    // Search reads across every room: refused like the route until the token opts in.
    assert_eq!(error_code(&r[2]), "forbidden_for_api_token");
    assert!(
        r[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/api/search"),
        "{}",
        r[2]
    );
    assert_eq!(r[2]["error"]["data"]["status"], 403);
    let event_id = r[3]["ok"]["eventId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r[3]));
    assert!(event_id.starts_with('$'), "{}", r[3]);
    let reminder = r[4]["ok"]["reminder"].clone();
    assert_eq!(reminder["title"], "call bob", "{}", r[4]);
    assert_eq!(r[5]["ok"]["reminders"][0]["id"], reminder["id"], "{}", r[5]);
    // Bad arguments: the tool's own check, then the route's validation.
    assert_eq!(error_code(&r[6]), "invalid_request");
    assert_eq!(r[6]["error"]["message"], "roomId: is required");
    assert_eq!(r[6]["error"]["code"], -32602);
    assert_eq!(error_code(&r[7]), "invalid_request");
    assert!(
        r[7]["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("limit"),
        "{}",
        r[7]
    );
    // E-mail tools wrap the e-mail routes: no mailbox connected, no threads; an unknown
    // thread is the route's 404.
    assert_eq!(r[8]["ok"]["threads"], json!([]), "{}", r[8]);
    assert_eq!(error_code(&r[9]), "not_found", "{}", r[9]);
    assert_eq!(r[9]["error"]["data"]["status"], 404);
    reminder
}

/// Opted in: search works through MCP; updates reach the same reminder.
async fn opted_in_search_works_and_updates_reach_the_reminder(
    app: &TestApp,
    me: &Session,
    token_id: &str,
    token: &str,
    room: &str,
    reminder: &Value,
) {
    opt_in(app, me, token_id).await;
    let report = mcp_client(
        app,
        token,
        json!([
            {"tool": "search", "args": {"q": "zebra", "roomId": room}},
            {"tool": "update_reminder", "args": {"id": reminder["id"], "completed": true}},
        ]),
    )
    .await;
    let r = &report["results"];
    assert_eq!(
        r[0]["ok"]["results"][0]["snippet"], "the zebra crossing is closed",
        "{report}"
    );
    assert_eq!(r[1]["ok"]["reminder"]["completed"], true, "{report}");
}

/// A native session is not an MCP bearer.
async fn a_native_session_is_no_mcp_bearer(app: &TestApp, me: &Session) {
    let report = mcp_client(app, &me.access_token, json!([])).await;
    assert_eq!(
        report["connect_error"]["data"]["error"], "personal_token_required",
        "{report}"
    );
}

/// Lapsed subscription: refused with the gate's own code and message; renewed, it works.
async fn a_lapsed_subscription_is_refused_until_renewed(app: &TestApp, me: &Session, token: &str) {
    let uid = me.user["id"].as_str().unwrap();
    let config = app.config_path.to_str().unwrap();
    let (status, out, err) = run_cli(
        &["user", "subscription", uid, "--lapse", "--config", config],
        app.dir.path(),
    );
    assert!(status.success(), "{out}{err}");
    let report = mcp_client(app, token, json!([])).await;
    let e = &report["connect_error"];
    assert_eq!(e["data"]["error"], "subscription_expired", "{report}");
    assert_eq!(e["data"]["status"], 403);
    assert!(
        e["message"].as_str().unwrap().contains("subscription"),
        "{report}"
    );
    let (status, out, err) = run_cli(
        &["user", "subscription", uid, "--forever", "--config", config],
        app.dir.path(),
    );
    assert!(status.success(), "{out}{err}");
    let report = mcp_client(app, token, json!([{"tool": "list_reminders", "args": {}}])).await;
    assert!(
        report["results"][0]["ok"]["reminders"].is_array(),
        "{report}"
    );
}

/// Revoked token: 401 for every MCP request.
async fn a_revoked_token_is_401(app: &TestApp, me: &Session, token_id: &str, token: &str) {
    let resp = app
        .http
        .delete(app.url(&format!("/api/developer/tokens/{token_id}")))
        .bearer_auth(&me.access_token)
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    let report = mcp_client(app, token, json!([])).await;
    assert_eq!(
        report["connect_error"]["data"]["error"], "unauthorized",
        "{report}"
    );
    assert_eq!(report["connect_error"]["data"]["status"], 401);
}

#[tokio::test]
async fn tool_calls_spend_the_callers_rate_limit_budget() {
    let app =
        TestApp::start_with_mail_and("[rate_limit]\nrequests = 12\nwindow = \"60s\"\n".into())
            .await;
    let me = app.sign_up("mcp.rate").await;
    let token = personal_token(&app, &me).await;
    let calls: Vec<Value> = (0..8)
        .map(|_| json!({"tool": "list_reminders", "args": {}}))
        .collect();
    let report = mcp_client(&app, &token, Value::Array(calls)).await;
    let results = report["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    assert!(results[0]["ok"]["reminders"].is_array(), "{report}");
    let limited: Vec<&Value> = results
        .iter()
        .filter(|r| r.get("error").is_some())
        .collect();
    assert!(
        !limited.is_empty(),
        "8 calls fit a budget of 12 requests: {report}"
    );
    for r in limited {
        assert_eq!(error_code(r), "rate_limited", "{r}");
        // The gate's own message and status.
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("rate limit of 12 requests per 1m exceeded; retry after"),
            "{r}"
        );
        assert_eq!(r["error"]["data"]["message"], message, "{r}");
        assert_eq!(r["error"]["data"]["status"], 429, "{r}");
    }
}

/// The route's own answer to the same request: `(status, body)`.
async fn direct(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// A refused tool call is the route's refusal: same code, message and status.
fn assert_same_refusal(result: &Value, (status, body): &(u16, Value)) {
    assert!(*status >= 400, "the route accepted it: {body}");
    assert_eq!(
        result["error"]["data"]["error"], body["error"],
        "{result} vs {body}"
    );
    assert_eq!(
        result["error"]["message"], body["message"],
        "{result} vs {body}"
    );
    assert_eq!(result["error"]["data"]["status"], *status, "{result}");
}

#[tokio::test]
async fn refused_tool_calls_carry_the_routes_code_and_message() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("mcp.refused").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    // Acting tools on: the refusals below are the routes' own.
    crate::mcp::actions::enable(&app, &me, &token_id, true).await;
    // A room of another user: the caller's token has no business in it.
    let other = app.sign_up("mcp.stranger").await;
    let room = me_on_matrix(&other).create_room(None, &[], false).await;

    let read = direct(
        app.get_auth(&format!("/api/messages?roomId={}", enc(&room)), &token)
            .await,
    )
    .await;
    let send = direct(
        app.post_json(
            &format!("/api/rooms/{}/messages", enc(&room)),
            Some(&token),
            json!({"content": "not yours", "txnId": "direct-1"}),
        )
        .await,
    )
    .await;
    let find = direct(app.get_auth("/api/search?q=zebra", &token).await).await;
    assert_eq!(find.0, 403, "{}", find.1);
    let report = mcp_client(
        &app,
        &token,
        json!([
            {"tool": "read_room_history", "args": {"roomId": room}},
            {"tool": "send_text", "args": {"roomId": room, "content": "not yours", "txnId": "mcp-2"}},
            {"tool": "search", "args": {"q": "zebra"}},
        ]),
    )
    .await;
    let r = &report["results"];
    assert_same_refusal(&r[0], &read);
    assert_same_refusal(&r[1], &send);
    assert_same_refusal(&r[2], &find);
    assert_eq!(error_code(&r[2]), "forbidden_for_api_token");
}

/// Review finding (dot segments): a tool argument that fills a path segment is checked as
/// every outgoing call's segments are. `.` or `..` as an id is refused by the MCP layer
/// itself, naming the argument, before the wrapped request exists: the message is the
/// segment rule's, not a route's (a route never sees the value).
#[tokio::test]
async fn dot_segments_in_tool_arguments_are_refused_before_the_request() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("mcp.dots").await;
    let (token_id, token) = token_with_id(&app, &me).await;
    crate::mcp::actions::enable(&app, &me, &token_id, true).await;
    let room = me_on_matrix(&me).create_room(None, &[], false).await;
    let report = mcp_client(
        &app,
        &token,
        json!([
            {"tool": "get_receipts", "args": {"roomId": ".."}},
            {"tool": "get_attachment", "args": {"roomId": room, "eventId": ".."}},
            {"tool": "send_file", "args": {"roomId": "..", "name": "a.txt", "data": "aGk=", "txnId": "dots-1"}},
            {"tool": "read_email_message", "args": {"id": "."}},
            {"tool": "update_reminder", "args": {"id": "..", "title": "x"}},
            {"tool": "list_reminders", "args": {}},
        ]),
    )
    .await;
    let results = report["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{report}"));
    for (i, field) in ["roomId", "eventId", "roomId", "id", "id"]
        .iter()
        .enumerate()
    {
        let r = &results[i];
        assert_eq!(error_code(r), "invalid_request", "{r}");
        assert_eq!(r["error"]["data"]["status"], 400, "{r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            format!("{field}: must not be \".\" or \"..\" (a dot path segment)"),
            "{r}"
        );
    }
    // The session is fine and a well-formed call goes through.
    assert!(results[5]["ok"]["reminders"].is_array(), "{report}");
}
