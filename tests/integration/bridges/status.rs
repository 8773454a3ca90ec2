//! Logged-in state: logout, state changes, connect/disconnect, a stopped bridge, counts.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::bridge::{BridgeEmulator, Login, Network};
use crate::common::client::{Refusal, Reply};

use super::{bridge_event, login_ids, mxid, open_sync, platform, setup};

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

    let status = app.api(t).bridges().status("whatsapp").await.unwrap();
    assert_eq!(login_ids(&status), ["111", "222"]);

    let body = app
        .api(t)
        .bridges()
        .post("whatsapp", "logout", json!({"loginId": "111"}))
        .await
        .unwrap();
    assert!(body["message"].as_str().unwrap().contains("111"));
    assert_eq!(wa.login_ids(&me), ["222"]);
    let event = bridge_event(&mut sync, &mut buf, |e| {
        e["loginId"] == "111" && e["stateEvent"] != "CONNECTED"
    })
    .await;
    assert_eq!(event["stateEvent"], "LOGGED_OUT");
    let one = app.api(t).bridges().platform("whatsapp").await.unwrap();
    assert_eq!(login_ids(&one), ["222"]);

    app.api(t)
        .bridges()
        .post("whatsapp", "logout", json!({"loginId": "999"}))
        .await
        .refused(404, "login_not_found");

    // No body: every login.
    let bridges = app.api(t).bridges();
    bridges
        .post_bare("whatsapp", "logout")
        .await
        .expect(200)
        .unwrap();
    assert!(wa.login_ids(&me).is_empty());
    bridge_event(&mut sync, &mut buf, |e| {
        e["loginId"] == "222" && e["stateEvent"] == "LOGGED_OUT"
    })
    .await;
    let status = app.api(t).bridges().status("whatsapp").await.unwrap();
    assert!(login_ids(&status).is_empty());
    assert_eq!(status["connected"], false);

    // Removing the bridge connection logs out everything too.
    wa.add_login(&me, Login::connected("333", "+333"));
    let body = bridges.remove("whatsapp").await.unwrap();
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
    let status = app.api(t).bridges().status("whatsapp").await.unwrap();
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
    let status = app.api(t).bridges().status("whatsapp").await.unwrap();
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
    let started = app
        .api(t)
        .bridges()
        .post(
            "whatsapp",
            "login/start",
            json!({"flowId": "phone", "loginId": "444"}),
        )
        .await
        .unwrap();
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

    let bridges = app.api(t).bridges();
    let resp = bridges.post_bare("whatsapp", "connect").await;
    let deprecation = |r: &Reply| {
        r.headers
            .get("deprecation")
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(deprecation(&resp).as_deref(), Some("true"));
    let body = resp.expect(200).unwrap();
    assert_eq!(body["method"], "qr");
    assert_eq!(body["flowId"], "qr");
    let process = body["loginProcessId"].as_str().unwrap();
    assert_eq!(body["qrCode"].as_str(), wa.qr_of(process).as_deref());
    assert_eq!(body["stepId"], "fi.mau.whatsapp.login.qr");
    let seconds = body["timeout"]["seconds"].as_i64().unwrap();
    assert!(seconds > 1700 && seconds <= 1800, "{body}");
    assert!(body["timeout"]["expiresAt"].is_string());

    let resp = bridges.post_bare("telegram", "connect").await;
    let body = resp.expect(200).unwrap();
    assert_eq!(body["method"], "phone");
    assert!(body["qrCode"].is_null());
    assert_eq!(body["step"]["type"], "user_input");

    wa.add_login(&mxid(&user), Login::connected("555", "+555"));
    let resp = bridges.post_bare("whatsapp", "disconnect").await;
    assert_eq!(deprecation(&resp).as_deref(), Some("true"));
    resp.expect(200).unwrap();
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
async fn a_stopped_bridge_is_unreachable_on_the_dashboard_and_fails_fast() {
    let wa = BridgeEmulator::start(Network::WhatsApp).await;
    let mut tg = BridgeEmulator::start(Network::Telegram).await;
    let (app, user) = setup(&[&wa, &tg], "br-down").await;
    let t = &user.access_token;
    tg.add_login(&mxid(&user), Login::connected("777", "+777"));
    let before = app.api(t).bridges().status("telegram").await.unwrap();
    assert_eq!(login_ids(&before), ["777"]);
    tg.stop().await;
    // The status cache lives at most 10 s.
    tokio::time::sleep(Duration::from_millis(10_500)).await;

    let t0 = Instant::now();
    let dashboard = app.api(t).bridges().dashboard().await.unwrap();
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

    let body = app
        .api(t)
        .bridges()
        .post("telegram", "login/start", json!({"flowId": "phone"}))
        .await
        .refused(503, "bridge_unavailable");
    assert!(
        body["message"].as_str().unwrap().contains("Telegram"),
        "{body}"
    );
    app.api(t)
        .bridges()
        .status("telegram")
        .await
        .refused(503, "bridge_unavailable");
    app.api(t)
        .bridges()
        .flows("telegram")
        .await
        .refused(503, "bridge_unavailable");
    let resp = app.api(t).bridges().post_bare("telegram", "logout").await;
    resp.expect(200).refused(503, "bridge_unavailable");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t0.elapsed()
    );
    let list = app.api(t).bridges().list().await.unwrap();
    assert_eq!(platform(&list, "telegram")["reachable"], false);
}

#[tokio::test]
async fn chat_counts_use_the_room_lists_filter() {
    let (app, user) = setup(&[], "br-count").await;
    let t = &user.access_token;
    let empty = app.api(t).bridges().chat_counts().await.unwrap();
    assert_eq!(empty["total"], 0);
    assert_eq!(empty["counts"].as_array().unwrap().len(), 4);

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
        (
            count("whatsapp"),
            count("telegram"),
            count("discord"),
            count("matrix")
        ),
        (2, 1, 0, 1),
        "{counts}"
    );
    assert_eq!(counts["total"], 4);

    // The personal-token room list shows the same conversations.
    let token = app.user(&user).tokens().create_named("counts").await.token;
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
    assert_eq!(
        rooms["rooms"].as_array().unwrap().len() as i64,
        counts["total"].as_i64().unwrap(),
        "{rooms}"
    );
    let via_token = app.api(&token).bridges().chat_counts().await.unwrap();
    assert_eq!(via_token["counts"], counts["counts"]);
}
