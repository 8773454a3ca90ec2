//! Review finding: `loginId`/`stepId` of `.` or `..` survived percent-encoding and the
//! URL parser resolved them (`/v3/logout/..` → `/v3/`). They are refused (400 naming the
//! field) before any call reaches the bridge.

use serde_json::json;

use crate::common::bridge::{BridgeEmulator, Login, Network};
use crate::common::client::Refusal;

use super::{mxid, setup, start};

#[tokio::test]
async fn dot_segments_never_reach_the_bridge() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-dots").await;
    let t = &user.access_token;
    wa.add_login(&mxid(&user), Login::connected("111", "+111"));
    // A real process, so that only the step id is wrong below.
    let started = start(&app, t, "whatsapp", "qr").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let before = wa.requests();
    assert!(
        before.iter().any(|r| r.path.contains("/v3/login/start/")),
        "the positive marker: the start reached the bridge: {before:?}"
    );

    let cases = [
        ("logout", json!({"loginId": ".."}), "loginId"),
        ("logout", json!({"loginId": "."}), "loginId"),
        ("login/start", json!({"flowId": ".."}), "flowId"),
        (
            "login/start",
            json!({"flowId": "qr", "loginId": ".."}),
            "loginId",
        ),
        (
            "login/step",
            json!({"loginProcessId": process, "stepId": "..", "stepType": "user_input", "data": {}}),
            "stepId",
        ),
        (
            "login/wait",
            json!({"loginProcessId": process, "stepId": "..", "timeoutSeconds": 1}),
            "stepId",
        ),
        (
            "login/step",
            json!({"loginProcessId": process, "stepId": ".", "stepType": "cookies", "data": {}}),
            "stepId",
        ),
    ];
    for (action, body, field) in cases {
        let refused = app
            .api(t)
            .bridges()
            .post("whatsapp", action, body.clone())
            .await
            .refused(400, "invalid_request");
        let message = refused["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("{field}: ")),
            "{action} {body}: {refused}"
        );
    }
    // Only the server's own long poll of the QR step (started with the login) may have
    // reached the bridge since; none of the refused requests did.
    let step_id = started["step"]["stepId"].as_str().unwrap().to_owned();
    let after = wa.requests();
    let others: Vec<_> = after[before.len()..]
        .iter()
        .filter(|r| !(r.path.ends_with("/display_and_wait") && r.path.contains(&step_id)))
        .collect();
    assert!(others.is_empty(), "reached the bridge: {others:?}");
    // The login is still there: no logout of "all" slipped through.
    assert_eq!(wa.login_ids(&mxid(&user)), ["111"]);
}
