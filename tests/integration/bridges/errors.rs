//! Clear errors: bridge refusals, unknown platforms, the rate limit, personal tokens.

use reqwest::Method;
use serde_json::json;

use crate::common::bridge::{BridgeEmulator, Login, Network, Op};
use crate::common::client::Refusal;
use crate::common::*;

use super::{login_ids, mxid, platform, setup, start};

#[tokio::test]
async fn bridge_refusals_are_clear_errors() {
    let tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&tg], "br-fail").await;
    let t = &user.access_token;
    let process = rejected_steps_are_400_with_the_bridges_message(&app, t, &tg).await;
    malformed_requests_never_reach_the_bridge(&app, t, &process).await;
    unknown_flows_and_logins_are_refused(&app, t).await;
    the_bridge_failing_is_502_and_too_many_logins_409(&app, t, &tg).await;
}

/// A step the bridge rejects: 400 with the bridge's own message, and the process ends; a
/// step it does not expect (M_BAD_STATE) likewise. Returns that last process.
async fn rejected_steps_are_400_with_the_bridges_message(
    app: &TestApp,
    t: &str,
    tg: &BridgeEmulator,
) -> String {
    let started = start(app, t, "telegram", "phone").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let first = started["step"].clone();
    let field = first["userInput"]["fields"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = app
        .api(t)
        .bridges()
        .step(
            "telegram",
            &process,
            &first,
            json!({&field: "+15550003333"}),
        )
        .await
        .unwrap();
    let code_step = next["step"].clone();
    tg.fail_next(
        Op::Step,
        400,
        "FI.MAU.TELEGRAM.PHONE_CODE_INVALID",
        "Invalid phone code",
    );
    let body = app
        .api(t)
        .bridges()
        .step(
            "telegram",
            &process,
            &code_step,
            json!({"fi.mau.telegram.login.code": "00000"}),
        )
        .await
        .refused(400, "bridge_rejected");
    assert_eq!(body["message"], "Invalid phone code");
    app.api(t)
        .bridges()
        .step(
            "telegram",
            &process,
            &code_step,
            json!({"fi.mau.telegram.login.code": "12345"}),
        )
        .await
        .refused(404, "login_process_not_found");

    // A step the bridge does not expect (M_BAD_STATE).
    let started = start(app, t, "telegram", "phone").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let mut wrong = started["step"].clone();
    wrong["stepId"] = json!("fi.mau.telegram.login.code");
    let body = app
        .api(t)
        .bridges()
        .step("telegram", &process, &wrong, json!({"x": "1"}))
        .await
        .refused(400, "bridge_rejected");
    assert_eq!(body["message"], "Step ID does not match");
    process
}

async fn malformed_requests_never_reach_the_bridge(app: &TestApp, t: &str, process: &str) {
    let body = json!({"loginProcessId": process, "stepId": "s", "stepType": "display_and_wait", "data": {}});
    app.api(t)
        .bridges()
        .post("telegram", "login/step", body)
        .await
        .refused(400, "invalid_request");
    let body = json!({"loginProcessId": process, "stepId": "s", "stepType": "user_input"});
    app.api(t)
        .bridges()
        .post("telegram", "login/step", body)
        .await
        .refused(400, "invalid_request");
    app.api(t)
        .bridges()
        .post("telegram", "login/start", json!({}))
        .await
        .refused(400, "invalid_request");
    let body =
        json!({"loginProcessId": "nope", "stepId": "s", "stepType": "user_input", "data": {}});
    app.api(t)
        .bridges()
        .post("telegram", "login/step", body)
        .await
        .refused(404, "login_process_not_found");
}

/// A flow the bridge does not offer; an unknown login to re-authenticate.
async fn unknown_flows_and_logins_are_refused(app: &TestApp, t: &str) {
    let body = app
        .api(t)
        .bridges()
        .post(
            "telegram",
            "login/start",
            json!({"flowId": "carrier-pigeon"}),
        )
        .await
        .refused(400, "invalid_flow");
    assert!(
        body["message"].as_str().unwrap().contains("phone, qr"),
        "{body}"
    );
    app.api(t)
        .bridges()
        .post(
            "telegram",
            "login/start",
            json!({"flowId": "phone", "loginId": "404"}),
        )
        .await
        .refused(404, "login_not_found");
}

/// The bridge failing (5xx) is a 502 with its message; its login limit is 409.
async fn the_bridge_failing_is_502_and_too_many_logins_409(
    app: &TestApp,
    t: &str,
    tg: &BridgeEmulator,
) {
    tg.fail_next(Op::Start, 500, "M_UNKNOWN", "Internal error starting login");
    let body = app
        .api(t)
        .bridges()
        .post("telegram", "login/start", json!({"flowId": "phone"}))
        .await
        .refused(502, "bridge_error");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Internal error starting login"),
        "{body}"
    );
    tg.fail_next(Op::Flows, 500, "M_UNKNOWN", "boom");
    app.api(t)
        .bridges()
        .flows("telegram")
        .await
        .refused(502, "bridge_error");
    tg.fail_next(
        Op::Start,
        403,
        "FI.MAU.BRIDGE.TOO_MANY_LOGINS",
        "Maximum number of logins exceeded",
    );
    app.api(t)
        .bridges()
        .post("telegram", "login/start", json!({"flowId": "phone"}))
        .await
        .refused(409, "too_many_logins");
}

#[tokio::test]
async fn unknown_and_unconfigured_platforms_are_clear_errors() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let dc = BridgeEmulator::start(Network::Discord).await;
    let extra = format!(
        "{}{}",
        wa.config_section(),
        dc.config_section_with_secret("a-wrong-shared-secret-123456")
    );
    let app = TestApp::start_with_mail_and(extra).await;
    let user = app.sign_up("br-conf").await;
    let t = &user.access_token;

    for (method, path) in [
        (Method::GET, "/api/bridges/signal"),
        (Method::GET, "/api/bridges/signal/flows"),
        (Method::GET, "/api/bridges/WhatsApp/status"),
        (Method::POST, "/api/bridges/signal/login/start"),
        (Method::POST, "/api/bridges/signal/logout"),
        (Method::DELETE, "/api/bridges/signal"),
    ] {
        let body = (method == Method::POST).then(|| json!({"flowId": "qr"}));
        let resp = app.send(method.clone(), path, Some(t), body).await;
        expect_error(resp, 400, "invalid_platform").await;
    }

    let configured = app.api(t).bridges().configured().await.unwrap();
    assert_eq!(
        configured["platforms"],
        json!([
            {"id": "whatsapp", "name": "WhatsApp", "configured": true},
            {"id": "telegram", "name": "Telegram", "configured": false},
            {"id": "discord", "name": "Discord", "configured": true},
        ])
    );
    let one = app.api(t).bridges().platform("telegram").await.unwrap();
    assert_eq!(
        (one["configured"].as_bool(), one["reachable"].as_bool()),
        (Some(false), Some(false))
    );
    for (method, path) in [
        (Method::GET, "/api/bridges/telegram/flows"),
        (Method::GET, "/api/bridges/telegram/status"),
        (Method::POST, "/api/bridges/telegram/login/start"),
        (Method::POST, "/api/bridges/telegram/logout"),
        (Method::POST, "/api/bridges/telegram/connect"),
    ] {
        let body = (method == Method::POST).then(|| json!({"flowId": "phone"}));
        let resp = app.send(method, path, Some(t), body).await;
        let body = expect_error(resp, 503, "bridge_not_configured").await;
        assert!(
            body["message"].as_str().unwrap().contains("Telegram"),
            "{body}"
        );
    }

    // A shared secret the bridge does not accept.
    let body = app
        .api(t)
        .bridges()
        .flows("discord")
        .await
        .refused(502, "bridge_auth_failed");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Invalid auth token"),
        "{body}"
    );
    let list = app.api(t).bridges().list().await.unwrap();
    assert_eq!(platform(&list, "discord")["reachable"], false);
    assert_eq!(platform(&list, "whatsapp")["reachable"], true);
}

#[tokio::test]
async fn login_starts_are_rate_limited_per_user() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-rate").await;
    let t = &user.access_token;
    for _ in 0..10 {
        start(&app, t, "whatsapp", "qr").await;
    }
    let bridges = app.api(t).bridges();
    let refused = bridges.start("whatsapp", "qr").await;
    let retry: u64 = refused.as_ref().unwrap_err().headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&retry));
    refused.refused(429, "rate_limited");
    let resp = bridges.post_bare("whatsapp", "connect").await;
    resp.expect(200).refused(429, "rate_limited");
    // Another user has its own budget.
    let other = app.sign_up("br-rate-other").await;
    start(&app, &other.access_token, "whatsapp", "qr").await;
}

#[tokio::test]
async fn personal_tokens_may_only_read_bridges() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-pat").await;
    wa.add_login(&mxid(&user), Login::connected("666", "+666"));
    let token = app.user(&user).tokens().create_named("bridges").await.token;

    let list = app.api(&token).bridges().list().await.unwrap();
    assert_eq!(
        login_ids(platform(&list, "whatsapp")),
        ["666"],
        "{list}\n{}",
        app.log()
    );
    app.api(&token).bridges().configured().await.unwrap();
    let dashboard = app.api(&token).bridges().dashboard().await.unwrap();
    assert_eq!(
        platform(&dashboard, "whatsapp")["logins"][0]["stateEvent"],
        "CONNECTED"
    );
    app.api(&token).bridges().chat_counts().await.unwrap();

    for (method, path) in [
        (Method::GET, "/api/bridges/whatsapp"),
        (Method::DELETE, "/api/bridges/whatsapp"),
        (Method::GET, "/api/bridges/whatsapp/flows"),
        (Method::GET, "/api/bridges/whatsapp/status"),
        (Method::POST, "/api/bridges/whatsapp/login/start"),
        (Method::POST, "/api/bridges/whatsapp/login/step"),
        (Method::POST, "/api/bridges/whatsapp/login/wait"),
        (Method::POST, "/api/bridges/whatsapp/logout"),
        (Method::POST, "/api/bridges/whatsapp/connect"),
        (Method::POST, "/api/bridges/whatsapp/disconnect"),
    ] {
        let body = (method == Method::POST).then(|| json!({"flowId": "qr"}));
        let resp = app.send(method.clone(), path, Some(&token), body).await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    assert_eq!(
        wa.login_ids(&mxid(&user)),
        ["666"],
        "nothing was logged out"
    );
}
