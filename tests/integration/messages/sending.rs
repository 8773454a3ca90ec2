//! Sending to a room: idempotency per txn id, refusals, homeserver failures, multi-send.

use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;

use super::{enc, me_on_matrix, personal_token, synapse_bodies, uid, Seeder};

#[tokio::test]
async fn sending_is_idempotent_per_txn_id_and_lands_once_on_synapse() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.send").await;
    let token = personal_token(&app, &me).await;
    let matrix = me_on_matrix(&me);
    let room = matrix.create_room(Some("send test"), &[], false).await;
    let other_room = matrix.create_room(Some("send test 2"), &[], false).await;
    let seed = Seeder::open(&app);
    seed.room(&uid(&me), &room, None);
    seed.room(&uid(&me), &other_room, None);

    let text = format!("approved text {}", uuid::Uuid::new_v4());
    let txn = format!("txn-{}", uuid::Uuid::new_v4().simple());
    let first = app
        .api(&token)
        .messages()
        .send(&room, json!({"content": text, "txnId": txn}))
        .await
        .unwrap();
    let event_id = first["eventId"].as_str().unwrap().to_owned();
    assert!(event_id.starts_with('$'), "{first}");
    assert_eq!(first["roomId"], room.as_str());
    assert_eq!(first["txnId"], txn.as_str());
    assert_eq!(first["duplicate"], false);

    // The same txnId again (even with other text, even as the native session): nothing new.
    for (bearer, content) in [(&token, text.as_str()), (&me.access_token, "changed")] {
        let again = app
            .api(bearer)
            .messages()
            .send(&room, json!({"content": content, "txnId": txn}))
            .await
            .unwrap();
        assert_eq!(again["eventId"], event_id.as_str());
        assert_eq!(again["duplicate"], true);
    }
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 1);
    assert_eq!(
        synapse_bodies(matrix_access(&me), &room, "changed").await,
        0
    );

    // The same txnId for another room is a conflict; a new txnId sends again.
    app.api(&token)
        .messages()
        .send(&other_room, json!({"content": text, "txnId": txn}))
        .await
        .refused(409, "txn_id_conflict");
    let native = app
        .api(&me.access_token)
        .messages()
        .send(&room, json!({"content": text, "txnId": "native-1"}))
        .await
        .unwrap();
    assert_ne!(native["eventId"], event_id.as_str());
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 2);

    // Concurrent repeats of a new txnId still send once.
    let text2 = format!("concurrent {}", uuid::Uuid::new_v4());
    let body = json!({"content": text2, "txnId": "race-1"});
    let scripted = app.api(&token).messages();
    let (r1, r2, r3) = tokio::join!(
        scripted.send(&room, body.clone()),
        scripted.send(&room, body.clone()),
        scripted.send(&room, body.clone()),
    );
    let mut ids = Vec::new();
    for r in [r1, r2, r3] {
        ids.push(r.unwrap()["eventId"].as_str().unwrap().to_owned());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text2).await, 1);
}

fn matrix_access(s: &Session) -> &str {
    s.matrix_access_token.as_deref().unwrap()
}

#[tokio::test]
async fn sending_refuses_bad_input_unknown_rooms_and_unresolved_recipients() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.refuse").await;
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    let direct = "!direct-unresolved:seed.test";
    seed.room_with(&id, direct, Some("whatsapp"), true, None);
    let room = "!plain:seed.test";
    seed.room(&id, room, None);

    let err = app
        .api(&token)
        .messages()
        .send(direct, json!({"content": "hi", "txnId": "t1"}))
        .await
        .refused(409, "recipient_unresolved");
    assert!(
        err["message"].as_str().unwrap().contains("native app"),
        "{err}"
    );
    app.api(&token)
        .messages()
        .send(
            "!unknown:seed.test",
            json!({"content": "hi", "txnId": "t2"}),
        )
        .await
        .refused(404, "not_found");
    let too_long = "x".repeat(65_537);
    let long_txn = "t".repeat(256);
    for body in [
        json!({"content": "", "txnId": "t3"}),
        json!({"content": "   ", "txnId": "t3"}),
        json!({"content": too_long, "txnId": "t3"}),
        json!({"content": "hi", "txnId": ""}),
        json!({"content": "hi", "txnId": "has space"}),
        json!({"content": "hi", "txnId": "a/b"}),
        json!({"content": "hi", "txnId": long_txn}),
        json!({"content": "hi"}),
        json!({"txnId": "t3"}),
        json!({"content": {"body": "hi"}, "txnId": "t3"}),
        json!([1, 2]),
    ] {
        let err = app.api(&token).messages().send(room, body.clone()).await;
        let err = err.unwrap_err();
        assert_eq!(err.status, 400, "{body}: {}", err.body);
        assert!(
            err.body["error"].is_string() && err.body["message"].is_string(),
            "{}",
            err.body
        );
    }
    let resp = app
        .http
        .post(app.url(&format!("/api/rooms/{}/messages", enc(room))))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    // Nothing was recorded for refused sends.
    let n: i64 = seed
        .conn
        .query_row(
            "SELECT COUNT(*) FROM sent_transactions WHERE user_id = ?1",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn homeserver_failures_are_502_and_503_and_a_retry_with_the_txn_id_is_safe() {
    let mut app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.hsfail").await;
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    // A room the user "has" that does not exist on the homeserver.
    let ghost = format!(
        "!ghost{}:{}",
        uuid::Uuid::new_v4().simple(),
        synapse().server_name
    );
    seed.room(&id, &ghost, None);
    let err = app
        .api(&token)
        .messages()
        .send(&ghost, json!({"content": "hi", "txnId": "g1"}))
        .await
        .refused(502, "homeserver_error");
    assert!(err["message"].as_str().unwrap().contains("M_"), "{err}");

    // A real room, then the homeserver becomes unreachable.
    let matrix = me_on_matrix(&me);
    let room = matrix.create_room(None, &[], false).await;
    seed.room(&id, &room, None);
    drop(seed);
    app.signal("TERM");
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    std::fs::write(&app.config_path, config.replace(&synapse().base_url, &dead)).unwrap();
    app.spawn().await;
    let text = format!("retry me {}", uuid::Uuid::new_v4());
    let body = json!({"content": text, "txnId": "retry-1"});
    let err = app
        .api(&token)
        .messages()
        .send(&room, body.clone())
        .await
        .refused(503, "homeserver_unavailable");
    assert!(!err["message"].as_str().unwrap().is_empty());

    // Back online: the retry with the same txnId sends, once.
    app.signal("TERM");
    std::fs::write(&app.config_path, config).unwrap();
    app.spawn().await;
    let sent = app
        .api(&token)
        .messages()
        .send(&room, body.clone())
        .await
        .unwrap();
    let again = app.api(&token).messages().send(&room, body).await.unwrap();
    assert_eq!(sent["eventId"], again["eventId"]);
    assert_eq!(again["duplicate"], true);
    assert_eq!(synapse_bodies(matrix_access(&me), &room, &text).await, 1);
}

#[tokio::test]
async fn multi_send_answers_200_207_or_500_with_the_same_shape() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.multi").await;
    let jwt = &me.access_token;
    let matrix = me_on_matrix(&me);
    let r1 = matrix.create_room(Some("multi 1"), &[], false).await;
    let r2 = matrix.create_room(Some("multi 2"), &[], false).await;
    let seed = Seeder::open(&app);
    let id = uid(&me);
    seed.room(&id, &r1, None);
    seed.room(&id, &r2, None);
    let ghost = format!(
        "!ghost{}:{}",
        uuid::Uuid::new_v4().simple(),
        synapse().server_name
    );
    seed.room(&id, &ghost, None);
    let unknown = "!not-mine:seed.test";

    let multi = |room_ids: Vec<&str>, body: &str, msgtype: Option<&str>| {
        let mut b = json!({"roomIds": room_ids, "body": body});
        if let Some(t) = msgtype {
            b["msgtype"] = json!(t);
        }
        app.api(jwt).messages().send_multi(b)
    };
    let check_shape = |body: &Value, sent: u64, failed: u64| {
        assert_eq!(body["sent"], sent, "{body}");
        assert_eq!(body["failed"], failed, "{body}");
        assert_eq!(body["total"], sent + failed, "{body}");
        let results = body["results"].as_array().unwrap();
        assert_eq!(results.len() as u64, sent + failed);
        for r in results {
            if r["success"] == true {
                assert!(r["eventId"].as_str().unwrap().starts_with('$'), "{r}");
                assert!(r["error"].is_null());
            } else {
                assert!(r["eventId"].is_null());
                assert!(r["error"].is_string() && r["message"].is_string(), "{r}");
            }
        }
    };

    let text = format!("to all {}", uuid::Uuid::new_v4());
    let all = multi(vec![&r1, &r2, &r1], &text, None).await.expect(200);
    let all = all.unwrap();
    check_shape(&all, 2, 0);
    assert_eq!(all["results"][0]["roomId"], r1.as_str());
    assert_eq!(all["results"][1]["roomId"], r2.as_str());
    for r in [&r1, &r2] {
        assert_eq!(synapse_bodies(matrix_access(&me), r, &text).await, 1);
    }

    let text = format!("partial {}", uuid::Uuid::new_v4());
    let partial = multi(vec![unknown, &r1, &ghost], &text, Some("m.notice")).await;
    let partial = partial.expect(207).unwrap();
    check_shape(&partial, 1, 2);
    assert_eq!(partial["results"][0]["error"], "not_found");
    assert_eq!(partial["results"][1]["success"], true);
    assert_eq!(partial["results"][2]["error"], "homeserver_error");
    assert_eq!(synapse_bodies(matrix_access(&me), &r1, &text).await, 1);

    let failed = multi(vec![unknown, &ghost], "nobody", None).await;
    assert_eq!(failed.status, 500, "{}", failed.text);
    let failed = failed.json();
    check_shape(&failed, 0, 2);

    let hundred_one: Vec<String> = (0..101).map(|i| format!("!r{i}:seed.test")).collect();
    for body in [
        json!({"roomIds": [], "body": "x"}),
        json!({"roomIds": hundred_one, "body": "x"}),
        json!({"roomIds": [r1], "body": ""}),
        json!({"roomIds": [r1], "body": "x", "msgtype": "m.image"}),
        json!({"roomIds": [""], "body": "x"}),
        json!({"roomIds": [r1]}),
        json!({"body": "x"}),
        json!({"roomIds": "not an array", "body": "x"}),
    ] {
        let sent = app.api(jwt).messages().send_multi(body.clone()).await;
        assert_eq!(sent.status, 400, "{body}: {}", sent.text);
    }
    let token = personal_token(&app, &me).await;
    let sent = app
        .api(&token)
        .messages()
        .send_multi(json!({"roomIds": [r1], "body": "x"}));
    sent.await
        .expect(200)
        .refused(403, "forbidden_for_api_token");
}
