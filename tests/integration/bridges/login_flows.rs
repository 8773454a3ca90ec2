//! Login flows: QR, phone and cookie logins, and a wait without news until expiry.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::bridge::{BridgeEmulator, Login, Network, SHARED_SECRET};
use crate::common::client::Refusal;
use crate::common::{contains, database_bytes};

use super::{bridge_event, login_ids, mxid, open_sync, platform, setup, start};

#[tokio::test]
async fn a_whatsapp_qr_login_completes_through_wait_and_is_recorded_sealed() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let (app, user) = setup(&[&wa], "br-qr").await;
    let t = &user.access_token;
    let mut sync = open_sync(&app, t).await;
    let mut buf = String::new();

    let flows = app.api(t).bridges().flows("whatsapp").await.unwrap();
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
    let bridges = app.api(t).bridges();
    let waiting = bridges.wait("whatsapp", &process, "fi.mau.whatsapp.login.qr", 30);
    let scan = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        wa.complete_login(&process, login);
    };
    let (done, ()) = tokio::join!(waiting, scan);
    let done = done.unwrap();
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
    let again = app
        .api(t)
        .bridges()
        .wait("whatsapp", &process, "fi.mau.whatsapp.login.qr", 1)
        .await
        .unwrap();
    assert_eq!(again["complete"], true);

    let status = app.api(t).bridges().status("whatsapp").await.unwrap();
    assert_eq!(status["connected"], true);
    assert_eq!(login_ids(&status), ["15550001111"]);
    assert_eq!(status["logins"][0]["stateEvent"], "CONNECTED");
    let list = app.api(t).bridges().list().await.unwrap();
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
    let one = app.api(t).bridges().platform("whatsapp").await.unwrap();
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
    assert!(
        !contains(&database_bytes(&app), "Sealed-Profile-Name"),
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

    let next = app
        .api(t)
        .bridges()
        .step(
            "telegram",
            &process,
            &first,
            json!({field_id: "+15550002222"}),
        )
        .await
        .unwrap();
    assert_eq!(next["complete"], false);
    let code_step = next["step"].clone();
    assert_eq!(code_step["stepId"], "fi.mau.telegram.login.code");
    assert_eq!(code_step["type"], "user_input");
    let code_field = code_step["userInput"]["fields"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(next["timeout"]["remainingSeconds"].as_i64().unwrap() > 0);

    let done = app
        .api(t)
        .bridges()
        .step(
            "telegram",
            &process,
            &code_step,
            json!({code_field: "12345"}),
        )
        .await
        .unwrap();
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["loginId"], "15550002222");
    assert_eq!(done["userInfo"]["remoteName"], "+15550002222");
    assert_eq!(done["userInfo"]["remoteProfile"]["username"], "tguser");
    assert_eq!(tg.login_ids(&mxid(&user)), ["15550002222"]);
    let status = app.api(t).bridges().status("telegram").await.unwrap();
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

    let done = app
        .api(t)
        .bridges()
        .step(
            "discord",
            &process,
            &first,
            json!({"token": "mfa.secret-token"}),
        )
        .await
        .unwrap();
    assert_eq!(done["complete"], true, "{done}");
    assert_eq!(done["loginId"], "80351110224678912");
    assert_eq!(done["userInfo"]["remoteName"], "nelly");
    let list = app.api(t).bridges().list().await.unwrap();
    assert_eq!(platform(&list, "discord")["connected"], true);
    let submitted = dc
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/cookies"))
        .expect("cookies submitted");
    assert_eq!(submitted.body, json!({"token": "mfa.secret-token"}));
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
    let first = app
        .api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 1)
        .await
        .unwrap();
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
    let second = app
        .api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 1)
        .await
        .unwrap();
    let r2 = second["timeout"]["remainingSeconds"].as_i64().unwrap();
    assert!(r2 < r1, "remaining {r1} then {r2}");
    assert_eq!(
        second["timeout"]["expiresAt"],
        first["timeout"]["expiresAt"]
    );

    // The background long-poll is still the bridge's one request; a refreshed QR arrives.
    wa.refresh_qr(&process);
    let t0 = Instant::now();
    let refreshed = app
        .api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 10)
        .await
        .unwrap();
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
    let pending = app.api(t).bridges().wait("whatsapp", &process, qr_step, 10);
    let expire = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        wa.expire(&process);
    };
    let (expired, ()) = tokio::join!(pending, expire);
    let expired = expired.unwrap();
    assert_eq!(
        (expired["complete"].as_bool(), expired["expired"].as_bool()),
        (Some(false), Some(true)),
        "{expired}"
    );
    assert_eq!(expired["timeout"]["remainingSeconds"], 0);
    assert!(expired["step"].is_null());
    let again = app
        .api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 1)
        .await
        .unwrap();
    assert_eq!(again["expired"], true);
    let body =
        json!({"loginProcessId": process, "stepId": qr_step, "stepType": "user_input", "data": {}});
    app.api(t)
        .bridges()
        .post("whatsapp", "login/step", body)
        .await
        .refused(400, "login_expired");

    // Bad waits.
    app.api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 0)
        .await
        .refused(400, "invalid_request");
    app.api(t)
        .bridges()
        .wait("whatsapp", &process, qr_step, 61)
        .await
        .refused(400, "invalid_request");
    app.api(t)
        .bridges()
        .wait("whatsapp", "unknown", qr_step, 1)
        .await
        .refused(404, "login_process_not_found");
    let phone = start(&app, t, "whatsapp", "phone").await;
    app.api(t)
        .bridges()
        .wait(
            "whatsapp",
            phone["loginProcessId"].as_str().unwrap(),
            "fi.mau.whatsapp.login.phone",
            1,
        )
        .await
        .refused(400, "invalid_step");
}
