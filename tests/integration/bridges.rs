//! Bridges: the provisioning proxy against the bridge emulator (a real HTTP server that
//! speaks the mautrix bridgev2 provisioning API), with real Synapse users.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::bridge::{BridgeEmulator, Login, Network, Op, SHARED_SECRET};
use crate::common::*;

/// A server configured with the given emulators, and a signed-up user.
async fn setup(emulators: &[&BridgeEmulator], prefix: &str) -> (TestApp, Session) {
    let extra: String = emulators.iter().map(|e| e.config_section()).collect();
    let app = TestApp::start_with_mail_and(extra).await;
    let user = app.sign_up(prefix).await;
    (app, user)
}

fn mxid(user: &Session) -> String {
    user.user["matrixUserId"]
        .as_str()
        .expect("matrixUserId")
        .to_owned()
}

async fn post(app: &TestApp, token: &str, path: &str, body: Value) -> reqwest::Response {
    app.post_json(path, Some(token), body).await
}

async fn start(app: &TestApp, token: &str, platform: &str, flow: &str) -> Value {
    let resp = post(
        app,
        token,
        &format!("/api/bridges/{platform}/login/start"),
        json!({"flowId": flow}),
    )
    .await;
    expect_json(resp, 200).await
}

async fn wait(
    app: &TestApp,
    token: &str,
    platform: &str,
    process: &str,
    step: &str,
    secs: u64,
) -> reqwest::Response {
    let body = json!({"loginProcessId": process, "stepId": step, "timeoutSeconds": secs});
    post(
        app,
        token,
        &format!("/api/bridges/{platform}/login/wait"),
        body,
    )
    .await
}

async fn step(
    app: &TestApp,
    token: &str,
    platform: &str,
    process: &str,
    step: &Value,
    data: Value,
) -> reqwest::Response {
    let body = json!({
        "loginProcessId": process,
        "stepId": step["stepId"],
        "stepType": step["type"],
        "data": data,
    });
    post(
        app,
        token,
        &format!("/api/bridges/{platform}/login/step"),
        body,
    )
    .await
}

fn login_ids(body: &Value) -> Vec<String> {
    body["logins"]
        .as_array()
        .expect("logins")
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_owned())
        .collect()
}

fn platform<'a>(list: &'a Value, id: &str) -> &'a Value {
    list["bridges"]
        .as_array()
        .expect("bridges")
        .iter()
        .find(|b| b["platform"] == id)
        .unwrap_or_else(|| panic!("{id} missing in {list}"))
}

/// Opens `GET /api/sync` for `token`.
async fn open_sync(app: &TestApp, token: &str) -> reqwest::Response {
    let resp = reqwest::Client::new()
        .get(app.url("/api/sync"))
        .bearer_auth(token)
        .send()
        .await
        .expect("sync");
    assert_eq!(resp.status(), 200);
    resp
}

/// Reads server-sent events until a `bridge.state` one matches `want`, for at most 15 s.
async fn bridge_event(
    stream: &mut reqwest::Response,
    buf: &mut String,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            if !block.lines().any(|l| l == "event: bridge.state") {
                continue;
            }
            let data: String = block
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            let value: Value = serde_json::from_str(&data).expect("event data");
            if want(&value) {
                return value;
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no matching bridge.state event; buffer: {buf}"
        );
        match tokio::time::timeout(left, stream.chunk()).await {
            Ok(Ok(Some(chunk))) => buf.push_str(&String::from_utf8_lossy(&chunk)),
            other => panic!("event stream ended: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_whatsapp_qr_login_completes_through_wait_and_is_recorded_sealed() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-qr").await;
    let t = &user.access_token;
    let mut sync = open_sync(&app, t).await;
    let mut buf = String::new();

    let flows = expect_json(app.get_auth("/api/bridges/whatsapp/flows", t).await, 200).await;
    let ids: Vec<&str> = flows["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["qr", "phone"]);
    assert_eq!(flows["flows"][0]["name"], "QR");
    assert!(flows["flows"][0]["description"]
        .as_str()
        .unwrap()
        .contains("QR"));

    let started = start(&app, t, "whatsapp", "qr").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let first = &started["step"];
    assert_eq!(first["type"], "display_and_wait");
    assert_eq!(first["stepId"], "fi.mau.whatsapp.login.qr");
    assert_eq!(first["displayAndWait"]["type"], "qr");
    assert_eq!(
        first["displayAndWait"]["data"].as_str(),
        wa.qr_of(&process).as_deref()
    );
    assert_eq!(started["timeout"]["totalSeconds"], 1800);
    let remaining = started["timeout"]["remainingSeconds"].as_i64().unwrap();
    assert!((1795..=1800).contains(&remaining), "{started}");

    // The phone scans the code while the client waits.
    let login = Login {
        profile: json!({"phone": "+15550001111", "name": "Alice Sealed-Profile-Name"}),
        ..Login::connected("15550001111", "+15550001111")
    };
    let waiting = wait(
        &app,
        t,
        "whatsapp",
        &process,
        "fi.mau.whatsapp.login.qr",
        30,
    );
    let scan = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        wa.complete_login(&process, login);
    };
    let (resp, ()) = tokio::join!(waiting, scan);
    let done = expect_json(resp, 200).await;
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["expired"], false);
    assert_eq!(done["loginId"], "15550001111");
    assert!(done["step"].is_null());
    let info = &done["userInfo"];
    assert_eq!(info["id"], "15550001111");
    assert_eq!(info["remoteName"], "+15550001111");
    assert_eq!(info["remoteProfile"]["name"], "Alice Sealed-Profile-Name");
    assert_eq!(info["stateEvent"], "CONNECTED");
    assert_eq!(info["loggedIn"], true);

    // The new login's state reaches the event stream.
    let event = bridge_event(&mut sync, &mut buf, |e| e["loginId"] == "15550001111").await;
    assert_eq!(event["platform"], "whatsapp");
    assert_eq!(event["stateEvent"], "CONNECTED");

    // A repeated wait answers the completion again.
    let again = expect_json(
        wait(&app, t, "whatsapp", &process, "fi.mau.whatsapp.login.qr", 1).await,
        200,
    )
    .await;
    assert_eq!(again["complete"], true);

    let status = expect_json(app.get_auth("/api/bridges/whatsapp/status", t).await, 200).await;
    assert_eq!(status["connected"], true);
    assert_eq!(login_ids(&status), ["15550001111"]);
    assert_eq!(status["logins"][0]["stateEvent"], "CONNECTED");
    let list = expect_json(app.get_auth("/api/bridges", t).await, 200).await;
    let whatsapp = platform(&list, "whatsapp");
    assert_eq!(
        (
            whatsapp["configured"].as_bool(),
            whatsapp["reachable"].as_bool()
        ),
        (Some(true), Some(true))
    );
    assert_eq!(whatsapp["connected"], true);
    assert_eq!(whatsapp["name"], "WhatsApp");
    assert_eq!(platform(&list, "telegram")["configured"], false);
    let one = expect_json(app.get_auth("/api/bridges/whatsapp", t).await, 200).await;
    assert_eq!(login_ids(&one), ["15550001111"]);

    // Every bridge call carried the shared secret and acted for the user's Matrix ID.
    let requests = wa.requests();
    assert!(requests.len() >= 4);
    for r in &requests {
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {SHARED_SECRET}").as_str()),
            "{r:?}"
        );
        assert_eq!(r.user_id.as_deref(), Some(mxid(&user).as_str()), "{r:?}");
    }

    // The remote profile is sealed at rest.
    let mut bytes = Vec::new();
    for name in ["switchboard.db", "switchboard.db-wal"] {
        bytes.extend(std::fs::read(app.data_dir().join(name)).unwrap_or_default());
    }
    let needle = b"Sealed-Profile-Name";
    assert!(
        !bytes.windows(needle.len()).any(|w| w == needle),
        "remote profile stored in plaintext"
    );
}

#[tokio::test]
async fn a_telegram_phone_login_takes_a_phone_and_a_code() {
    let tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&tg], "br-tg").await;
    let t = &user.access_token;

    let started = start(&app, t, "telegram", "phone").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let first = started["step"].clone();
    assert_eq!(first["type"], "user_input");
    let field = &first["userInput"]["fields"][0];
    assert_eq!(field["type"], "phone_number");
    let field_id = field["id"].as_str().unwrap().to_owned();

    let next = expect_json(
        step(
            &app,
            t,
            "telegram",
            &process,
            &first,
            json!({field_id: "+15550002222"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(next["complete"], false);
    let code_step = next["step"].clone();
    assert_eq!(code_step["stepId"], "fi.mau.telegram.login.code");
    assert_eq!(code_step["type"], "user_input");
    let code_field = code_step["userInput"]["fields"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(next["timeout"]["remainingSeconds"].as_i64().unwrap() > 0);

    let done = expect_json(
        step(
            &app,
            t,
            "telegram",
            &process,
            &code_step,
            json!({code_field: "12345"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["loginId"], "15550002222");
    assert_eq!(done["userInfo"]["remoteName"], "+15550002222");
    assert_eq!(done["userInfo"]["remoteProfile"]["username"], "tguser");
    assert_eq!(tg.login_ids(&mxid(&user)), ["15550002222"]);
    let status = expect_json(app.get_auth("/api/bridges/telegram/status", t).await, 200).await;
    assert_eq!(login_ids(&status), ["15550002222"]);
}

#[tokio::test]
async fn a_discord_cookie_login_completes_in_one_step() {
    let dc = BridgeEmulator::start(Network::Discord).await;
    let (app, user) = setup(&[&dc], "br-dc").await;
    let t = &user.access_token;

    let started = start(&app, t, "discord", "token").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let first = started["step"].clone();
    assert_eq!(first["type"], "cookies");
    assert_eq!(first["cookies"]["url"], "https://discord.com/login");
    assert_eq!(first["cookies"]["fields"][0]["id"], "token");
    assert_eq!(
        first["cookies"]["fields"][0]["sources"][0]["type"],
        "special"
    );
    assert_eq!(first["instructions"], "Log in with Discord.");

    let done = expect_json(
        step(
            &app,
            t,
            "discord",
            &process,
            &first,
            json!({"token": "mfa.secret-token"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["loginId"], "80351110224678912");
    assert_eq!(done["userInfo"]["remoteName"], "nelly");
    let list = expect_json(app.get_auth("/api/bridges", t).await, 200).await;
    assert_eq!(platform(&list, "discord")["connected"], true);
    let submitted = dc
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/cookies"))
        .expect("cookies submitted");
    assert_eq!(submitted.body, json!({"token": "mfa.secret-token"}));
}

#[tokio::test]
async fn bridge_refusals_are_clear_errors() {
    let tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&tg], "br-fail").await;
    let t = &user.access_token;

    // A step the bridge rejects: 400 with the bridge's own message; the process ends.
    let started = start(&app, t, "telegram", "phone").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let first = started["step"].clone();
    let field = first["userInput"]["fields"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let next = expect_json(
        step(
            &app,
            t,
            "telegram",
            &process,
            &first,
            json!({&field: "+15550003333"}),
        )
        .await,
        200,
    )
    .await;
    let code_step = next["step"].clone();
    tg.fail_next(
        Op::Step,
        400,
        "FI.MAU.TELEGRAM.PHONE_CODE_INVALID",
        "Invalid phone code",
    );
    let resp = step(
        &app,
        t,
        "telegram",
        &process,
        &code_step,
        json!({"fi.mau.telegram.login.code": "00000"}),
    )
    .await;
    let body = expect_error(resp, 400, "bridge_rejected").await;
    assert_eq!(body["message"], "Invalid phone code");
    let resp = step(
        &app,
        t,
        "telegram",
        &process,
        &code_step,
        json!({"fi.mau.telegram.login.code": "12345"}),
    )
    .await;
    expect_error(resp, 404, "login_process_not_found").await;

    // A step the bridge does not expect (M_BAD_STATE).
    let started = start(&app, t, "telegram", "phone").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let mut wrong = started["step"].clone();
    wrong["stepId"] = json!("fi.mau.telegram.login.code");
    let body = expect_error(
        step(&app, t, "telegram", &process, &wrong, json!({"x": "1"})).await,
        400,
        "bridge_rejected",
    )
    .await;
    assert_eq!(body["message"], "Step ID does not match");

    // Malformed requests never reach the bridge.
    let body = json!({"loginProcessId": process, "stepId": "s", "stepType": "display_and_wait", "data": {}});
    expect_error(
        post(&app, t, "/api/bridges/telegram/login/step", body).await,
        400,
        "invalid_request",
    )
    .await;
    let body = json!({"loginProcessId": process, "stepId": "s", "stepType": "user_input"});
    expect_error(
        post(&app, t, "/api/bridges/telegram/login/step", body).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        post(&app, t, "/api/bridges/telegram/login/start", json!({})).await,
        400,
        "invalid_request",
    )
    .await;
    let body =
        json!({"loginProcessId": "nope", "stepId": "s", "stepType": "user_input", "data": {}});
    expect_error(
        post(&app, t, "/api/bridges/telegram/login/step", body).await,
        404,
        "login_process_not_found",
    )
    .await;

    // A flow the bridge does not offer; an unknown login to re-authenticate.
    let resp = post(
        &app,
        t,
        "/api/bridges/telegram/login/start",
        json!({"flowId": "carrier-pigeon"}),
    )
    .await;
    let body = expect_error(resp, 400, "invalid_flow").await;
    assert!(
        body["message"].as_str().unwrap().contains("phone, qr"),
        "{body}"
    );
    let resp = post(
        &app,
        t,
        "/api/bridges/telegram/login/start",
        json!({"flowId": "phone", "loginId": "404"}),
    )
    .await;
    expect_error(resp, 404, "login_not_found").await;

    // The bridge failing (5xx) is a 502 with its message.
    tg.fail_next(Op::Start, 500, "M_UNKNOWN", "Internal error starting login");
    let resp = post(
        &app,
        t,
        "/api/bridges/telegram/login/start",
        json!({"flowId": "phone"}),
    )
    .await;
    let body = expect_error(resp, 502, "bridge_error").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Internal error starting login"),
        "{body}"
    );
    tg.fail_next(Op::Flows, 500, "M_UNKNOWN", "boom");
    expect_error(
        app.get_auth("/api/bridges/telegram/flows", t).await,
        502,
        "bridge_error",
    )
    .await;
    tg.fail_next(
        Op::Start,
        403,
        "FI.MAU.BRIDGE.TOO_MANY_LOGINS",
        "Maximum number of logins exceeded",
    );
    let resp = post(
        &app,
        t,
        "/api/bridges/telegram/login/start",
        json!({"flowId": "phone"}),
    )
    .await;
    expect_error(resp, 409, "too_many_logins").await;
}

#[tokio::test]
async fn a_wait_without_news_reports_the_remaining_time_then_expiry() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-wait").await;
    let t = &user.access_token;
    let started = start(&app, t, "whatsapp", "qr").await;
    let process = started["loginProcessId"].as_str().unwrap().to_owned();
    let qr_step = "fi.mau.whatsapp.login.qr";
    let first_qr = started["step"]["displayAndWait"]["data"].clone();

    // Nothing happens at the bridge: the wait answers the current step after its timeout.
    let t0 = Instant::now();
    let first = expect_json(wait(&app, t, "whatsapp", &process, qr_step, 1).await, 200).await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(
        (first["complete"].as_bool(), first["expired"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(first["step"]["stepId"], qr_step);
    assert_eq!(first["step"]["displayAndWait"]["data"], first_qr);
    let r1 = first["timeout"]["remainingSeconds"].as_i64().unwrap();
    assert!(r1 > 0 && r1 < 1800);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = expect_json(wait(&app, t, "whatsapp", &process, qr_step, 1).await, 200).await;
    let r2 = second["timeout"]["remainingSeconds"].as_i64().unwrap();
    assert!(r2 < r1, "remaining {r1} then {r2}");
    assert_eq!(
        second["timeout"]["expiresAt"],
        first["timeout"]["expiresAt"]
    );

    // The background long-poll is still the bridge's one request; a refreshed QR arrives.
    wa.refresh_qr(&process);
    let t0 = Instant::now();
    let refreshed = expect_json(wait(&app, t, "whatsapp", &process, qr_step, 10).await, 200).await;
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the new QR code is answered at once"
    );
    assert_eq!(refreshed["complete"], false);
    assert_ne!(refreshed["step"]["displayAndWait"]["data"], first_qr);
    assert_eq!(
        refreshed["step"]["displayAndWait"]["data"].as_str(),
        wa.qr_of(&process).as_deref()
    );
    let polls = wa
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/display_and_wait"))
        .count();
    assert_eq!(polls, 1, "one long-poll for the first QR code");

    // The bridge times the login out.
    let pending = wait(&app, t, "whatsapp", &process, qr_step, 10);
    let expire = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        wa.expire(&process);
    };
    let (resp, ()) = tokio::join!(pending, expire);
    let expired = expect_json(resp, 200).await;
    assert_eq!(
        (expired["complete"].as_bool(), expired["expired"].as_bool()),
        (Some(false), Some(true)),
        "{expired}"
    );
    assert_eq!(expired["timeout"]["remainingSeconds"], 0);
    assert!(expired["step"].is_null());
    let again = expect_json(wait(&app, t, "whatsapp", &process, qr_step, 1).await, 200).await;
    assert_eq!(again["expired"], true);
    let body =
        json!({"loginProcessId": process, "stepId": qr_step, "stepType": "user_input", "data": {}});
    expect_error(
        post(&app, t, "/api/bridges/whatsapp/login/step", body).await,
        400,
        "login_expired",
    )
    .await;

    // Bad waits.
    expect_error(
        wait(&app, t, "whatsapp", &process, qr_step, 0).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        wait(&app, t, "whatsapp", &process, qr_step, 61).await,
        400,
        "invalid_request",
    )
    .await;
    expect_error(
        wait(&app, t, "whatsapp", "unknown", qr_step, 1).await,
        404,
        "login_process_not_found",
    )
    .await;
    let phone = start(&app, t, "whatsapp", "phone").await;
    let resp = wait(
        &app,
        t,
        "whatsapp",
        phone["loginProcessId"].as_str().unwrap(),
        "fi.mau.whatsapp.login.phone",
        1,
    )
    .await;
    expect_error(resp, 400, "invalid_step").await;
}

#[tokio::test]
async fn logins_are_logged_out_one_at_a_time_or_all_together() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-out").await;
    let t = &user.access_token;
    let me = mxid(&user);
    wa.add_login(&me, Login::connected("111", "+111"));
    wa.add_login(&me, Login::connected("222", "+222"));
    let mut sync = open_sync(&app, t).await;
    let mut buf = String::new();

    let status = expect_json(app.get_auth("/api/bridges/whatsapp/status", t).await, 200).await;
    assert_eq!(login_ids(&status), ["111", "222"]);

    let resp = post(
        &app,
        t,
        "/api/bridges/whatsapp/logout",
        json!({"loginId": "111"}),
    )
    .await;
    let body = expect_json(resp, 200).await;
    assert!(body["message"].as_str().unwrap().contains("111"));
    assert_eq!(wa.login_ids(&me), ["222"]);
    let event = bridge_event(&mut sync, &mut buf, |e| {
        e["loginId"] == "111" && e["stateEvent"] != "CONNECTED"
    })
    .await;
    assert_eq!(event["stateEvent"], "LOGGED_OUT");
    let one = expect_json(app.get_auth("/api/bridges/whatsapp", t).await, 200).await;
    assert_eq!(login_ids(&one), ["222"]);

    let resp = post(
        &app,
        t,
        "/api/bridges/whatsapp/logout",
        json!({"loginId": "999"}),
    )
    .await;
    expect_error(resp, 404, "login_not_found").await;

    // No body: every login.
    let resp = app
        .send(Method::POST, "/api/bridges/whatsapp/logout", Some(t), None)
        .await;
    expect_json(resp, 200).await;
    assert!(wa.login_ids(&me).is_empty());
    bridge_event(&mut sync, &mut buf, |e| {
        e["loginId"] == "222" && e["stateEvent"] == "LOGGED_OUT"
    })
    .await;
    let status = expect_json(app.get_auth("/api/bridges/whatsapp/status", t).await, 200).await;
    assert!(login_ids(&status).is_empty());
    assert_eq!(status["connected"], false);

    // Removing the bridge connection logs out everything too.
    wa.add_login(&me, Login::connected("333", "+333"));
    let resp = app
        .send(Method::DELETE, "/api/bridges/whatsapp", Some(t), None)
        .await;
    let body = expect_json(resp, 200).await;
    assert!(
        body["message"].as_str().unwrap().contains("removed"),
        "{body}"
    );
    assert!(wa.login_ids(&me).is_empty());
    assert!(wa
        .requests()
        .iter()
        .any(|r| r.path.ends_with("/v3/logout/all")));
}

#[tokio::test]
async fn state_changes_at_the_bridge_reach_status_and_the_event_stream() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-state").await;
    let t = &user.access_token;
    let me = mxid(&user);
    wa.add_login(&me, Login::connected("444", "+444"));
    let mut sync = open_sync(&app, t).await;
    let mut buf = String::new();
    let status = expect_json(app.get_auth("/api/bridges/whatsapp/status", t).await, 200).await;
    assert_eq!(status["logins"][0]["stateEvent"], "CONNECTED");
    bridge_event(&mut sync, &mut buf, |e| {
        e["loginId"] == "444" && e["stateEvent"] == "CONNECTED"
    })
    .await;

    wa.set_state(
        &me,
        "444",
        "BAD_CREDENTIALS",
        Some("wa-logged-out"),
        Some("You were logged out from another device."),
    );
    // Status is read through a cache of at most 10 s.
    tokio::time::sleep(Duration::from_millis(10_500)).await;
    let status = expect_json(app.get_auth("/api/bridges/whatsapp/status", t).await, 200).await;
    let login = &status["logins"][0];
    assert_eq!(login["stateEvent"], "BAD_CREDENTIALS");
    assert_eq!(login["loggedIn"], false);
    assert_eq!(login["error"], "You were logged out from another device.");
    assert_eq!(login["errorCode"], "wa-logged-out");
    assert_eq!(status["connected"], false);
    let event = bridge_event(&mut sync, &mut buf, |e| {
        e["stateEvent"] == "BAD_CREDENTIALS"
    })
    .await;
    assert_eq!(event["loginId"], "444");
    assert_eq!(event["platform"], "whatsapp");
    assert_eq!(event["error"], "You were logged out from another device.");

    // Re-authentication of the login (loginId) with the phone flow.
    let resp = post(
        &app,
        t,
        "/api/bridges/whatsapp/login/start",
        json!({"flowId": "phone", "loginId": "444"}),
    )
    .await;
    let started = expect_json(resp, 200).await;
    assert_eq!(started["step"]["type"], "user_input");
    let start_req = wa
        .requests()
        .into_iter()
        .rfind(|r| r.path.contains("/login/start/"))
        .unwrap();
    assert!(start_req.path.ends_with("/login/start/phone"));
}

#[tokio::test]
async fn the_deprecated_connect_and_disconnect_still_work_with_a_deprecation_header() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&wa, &tg], "br-dep").await;
    let t = &user.access_token;

    let resp = app
        .send(Method::POST, "/api/bridges/whatsapp/connect", Some(t), None)
        .await;
    assert_eq!(
        resp.headers()
            .get("deprecation")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    let body = expect_json(resp, 200).await;
    assert_eq!(body["method"], "qr");
    assert_eq!(body["flowId"], "qr");
    let process = body["loginProcessId"].as_str().unwrap();
    assert_eq!(body["qrCode"].as_str(), wa.qr_of(process).as_deref());
    assert_eq!(body["stepId"], "fi.mau.whatsapp.login.qr");
    let seconds = body["timeout"]["seconds"].as_i64().unwrap();
    assert!(seconds > 1700 && seconds <= 1800, "{body}");
    assert!(body["timeout"]["expiresAt"].is_string());

    let resp = app
        .send(Method::POST, "/api/bridges/telegram/connect", Some(t), None)
        .await;
    let body = expect_json(resp, 200).await;
    assert_eq!(body["method"], "phone");
    assert!(body["qrCode"].is_null());
    assert_eq!(body["step"]["type"], "user_input");

    wa.add_login(&mxid(&user), Login::connected("555", "+555"));
    let resp = app
        .send(
            Method::POST,
            "/api/bridges/whatsapp/disconnect",
            Some(t),
            None,
        )
        .await;
    assert_eq!(
        resp.headers()
            .get("deprecation")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
    expect_json(resp, 200).await;
    assert!(wa.login_ids(&mxid(&user)).is_empty());

    let yaml = app.get("/openapi.yaml").await.text().await.unwrap();
    let doc: Value = serde_yaml::from_str(&yaml).unwrap();
    for op in ["connect", "disconnect"] {
        assert_eq!(
            doc["paths"][format!("/api/bridges/{{platform}}/{op}")]["post"]["deprecated"],
            true,
            "{op}"
        );
    }
    assert!(doc["paths"]["/api/bridges/{platform}/login/start"]["post"]["deprecated"].is_null());
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

    let configured = expect_json(app.get_auth("/api/bridges/configured", t).await, 200).await;
    assert_eq!(
        configured["platforms"],
        json!([
            {"id": "whatsapp", "name": "WhatsApp", "configured": true},
            {"id": "telegram", "name": "Telegram", "configured": false},
            {"id": "discord", "name": "Discord", "configured": true},
        ])
    );
    let one = expect_json(app.get_auth("/api/bridges/telegram", t).await, 200).await;
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
    let body = expect_error(
        app.get_auth("/api/bridges/discord/flows", t).await,
        502,
        "bridge_auth_failed",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("Invalid auth token"),
        "{body}"
    );
    let list = expect_json(app.get_auth("/api/bridges", t).await, 200).await;
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
    let resp = post(
        &app,
        t,
        "/api/bridges/whatsapp/login/start",
        json!({"flowId": "qr"}),
    )
    .await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&retry));
    expect_error(resp, 429, "rate_limited").await;
    let resp = app
        .send(Method::POST, "/api/bridges/whatsapp/connect", Some(t), None)
        .await;
    expect_error(resp, 429, "rate_limited").await;
    // Another user has its own budget.
    let other = app.sign_up("br-rate-other").await;
    start(&app, &other.access_token, "whatsapp", "qr").await;
}

#[tokio::test]
async fn personal_tokens_may_only_read_bridges() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-pat").await;
    wa.add_login(&mxid(&user), Login::connected("666", "+666"));
    let resp = post(
        &app,
        &user.access_token,
        "/api/developer/tokens",
        json!({"name": "bridges"}),
    )
    .await;
    let token = expect_json(resp, 201).await["token"]
        .as_str()
        .unwrap()
        .to_owned();

    let list = expect_json(app.get_auth("/api/bridges", &token).await, 200).await;
    assert_eq!(
        login_ids(platform(&list, "whatsapp")),
        ["666"],
        "{list}\n{}",
        app.log()
    );
    expect_json(app.get_auth("/api/bridges/configured", &token).await, 200).await;
    let dashboard = expect_json(app.get_auth("/api/bridges/dashboard", &token).await, 200).await;
    assert_eq!(
        platform(&dashboard, "whatsapp")["logins"][0]["stateEvent"],
        "CONNECTED"
    );
    expect_json(app.get_auth("/api/bridges/chat-counts", &token).await, 200).await;

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

#[tokio::test]
async fn a_stopped_bridge_is_unreachable_on_the_dashboard_and_fails_fast() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let mut tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&wa, &tg], "br-down").await;
    let t = &user.access_token;
    tg.add_login(&mxid(&user), Login::connected("777", "+777"));
    let before = expect_json(app.get_auth("/api/bridges/telegram/status", t).await, 200).await;
    assert_eq!(login_ids(&before), ["777"]);
    tg.stop().await;
    // The status cache lives at most 10 s.
    tokio::time::sleep(Duration::from_millis(10_500)).await;

    let t0 = Instant::now();
    let dashboard = expect_json(app.get_auth("/api/bridges/dashboard", t).await, 200).await;
    let telegram = platform(&dashboard, "telegram");
    assert_eq!(telegram["configured"], true);
    assert_eq!(telegram["reachable"], false);
    assert!(
        telegram["problem"]
            .as_str()
            .unwrap()
            .contains("unreachable"),
        "{telegram}"
    );
    assert!(telegram["lastCheckedAt"].is_string());
    assert_eq!(
        login_ids(telegram),
        ["777"],
        "the last recorded logins stay visible"
    );
    assert_eq!(platform(&dashboard, "whatsapp")["reachable"], true);
    assert!(dashboard["generatedAt"].is_string());

    let resp = post(
        &app,
        t,
        "/api/bridges/telegram/login/start",
        json!({"flowId": "phone"}),
    )
    .await;
    let body = expect_error(resp, 503, "bridge_unavailable").await;
    assert!(
        body["message"].as_str().unwrap().contains("Telegram"),
        "{body}"
    );
    expect_error(
        app.get_auth("/api/bridges/telegram/status", t).await,
        503,
        "bridge_unavailable",
    )
    .await;
    expect_error(
        app.get_auth("/api/bridges/telegram/flows", t).await,
        503,
        "bridge_unavailable",
    )
    .await;
    let resp = app
        .send(Method::POST, "/api/bridges/telegram/logout", Some(t), None)
        .await;
    expect_error(resp, 503, "bridge_unavailable").await;
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t0.elapsed()
    );
    let list = expect_json(app.get_auth("/api/bridges", t).await, 200).await;
    assert_eq!(platform(&list, "telegram")["reachable"], false);
}

#[tokio::test]
async fn chat_counts_use_the_room_lists_filter() {
    let (app, user) = setup(&[], "br-count").await;
    let t = &user.access_token;
    let empty = expect_json(app.get_auth("/api/bridges/chat-counts", t).await, 200).await;
    assert_eq!(empty["total"], 0);
    assert_eq!(empty["counts"].as_array().unwrap().len(), 3);

    let uid = user.user["id"].as_str().unwrap().to_owned();
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    for (room, platform, archived, membership) in [
        ("!wa1:test", Some("whatsapp"), 0, "join"),
        ("!wa2:test", Some("whatsapp"), 0, "invite"),
        ("!wa3:test", Some("whatsapp"), 1, "join"),
        ("!tg1:test", Some("telegram"), 0, "join"),
        ("!tg2:test", Some("telegram"), 0, "leave"),
        ("!mx1:test", None, 0, "join"),
    ] {
        db.execute(
            "INSERT INTO rooms (user_id, room_id, platform, archived, membership, last_message_ts, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, 1, 1, 1)",
            rusqlite::params![uid, room, platform, archived, membership],
        )
        .unwrap();
    }
    let resp = app.get_auth("/api/bridges/chat-counts", t).await;
    if resp.status() != 200 {
        panic!("{}\n{}", resp.text().await.unwrap(), app.log());
    }
    let counts: Value = resp.json().await.unwrap();
    let count = |p: &str| {
        counts["counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["platform"] == p)
            .unwrap()["count"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(
        (count("whatsapp"), count("telegram"), count("discord")),
        (2, 1, 0),
        "{counts}"
    );
    assert_eq!(counts["total"], 3);

    // The personal-token room list shows the same conversations.
    let resp = post(&app, t, "/api/developer/tokens", json!({"name": "counts"})).await;
    let token = expect_json(resp, 201).await["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let resp = app.get_auth("/api/rooms?limit=100", &token).await;
    if resp.status() != 200 {
        panic!("{}\n{}", resp.text().await.unwrap(), app.log());
    }
    let rooms: Value = resp.json().await.unwrap();
    let listed = |p: &str| {
        rooms["rooms"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["platform"] == p)
            .count() as i64
    };
    assert_eq!(
        (listed("whatsapp"), listed("telegram")),
        (count("whatsapp"), count("telegram")),
        "{rooms}"
    );
    let via_token = expect_json(app.get_auth("/api/bridges/chat-counts", &token).await, 200).await;
    assert_eq!(via_token["counts"], counts["counts"]);
}
