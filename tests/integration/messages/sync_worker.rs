//! Through the sync worker: a conversation written on Matrix, in both views and the stats.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::matrix as mx;
use crate::common::*;

use super::{
    bodies, decrypt, enc, history, matrix_id, me_on_matrix, personal_token, register_key, uid,
    Seeder,
};

/// Polls the readable history of `room` until `want` messages are there (the sync worker
/// ingests them); 404 while the room itself is not ingested yet.
async fn wait_for_history(app: &TestApp, token: &str, room: &str, want: usize) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = app
            .get_auth(
                &format!("/api/messages?roomId={}&limit=100", enc(room)),
                token,
            )
            .await;
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or_default();
        if status == 200 && body["messages"].as_array().map_or(0, Vec::len) >= want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "history of {room} did not reach {want} messages (is the sync worker running?): {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_synced_conversation_reads_in_both_views_and_counts_in_the_stats() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.sync").await;
    let token = personal_token(&app, &me).await;
    let secret = register_key(&app, &me).await;
    let bob = mx::register("msgbob").await;
    let matrix = me_on_matrix(&me);
    let room = matrix
        .create_room(Some("sync test"), &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    bob.send_text(&room, "hello from bob").await;
    bob.send_text(&room, "are you there?").await;
    wait_for_history(&app, &token, &room, 2).await;

    let reply = "yes, here";
    let body = json!({"content": reply, "txnId": "reply-1"});
    let sent = app.api(&token).messages().send(&room, body).await.unwrap();
    let page = wait_for_history(&app, &token, &room, 3).await;
    let texts = bodies(&page, "text");
    assert_eq!(texts, [reply, "are you there?", "hello from bob"], "{page}");
    let m = &page["messages"];
    assert_eq!(m[0]["eventId"], sent["eventId"]);
    assert_eq!(m[0]["direction"], "outgoing");
    assert_eq!(m[0]["isMine"], true);
    assert_eq!(m[0]["senderId"], matrix_id(&me).as_str());
    for i in [1, 2] {
        assert_eq!(m[i]["direction"], "incoming");
        assert_eq!(m[i]["isMine"], false);
        assert_eq!(m[i]["senderId"], bob.user_id.as_str());
        assert_eq!(m[i]["content"]["msgtype"], "m.text");
    }
    let ts: Vec<i64> = m
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["timestamp"].as_i64().unwrap())
        .collect();
    let now = chrono::Utc::now().timestamp_millis();
    assert!(
        ts.iter().all(|t| (now - 120_000..=now + 5_000).contains(t)),
        "{ts:?}"
    );

    // The native view: same events, content sealed to the registered key.
    let native = history(&app, &me.access_token, &format!("?roomId={}", enc(&room))).await;
    let items = native["messages"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for (item, text) in items.iter().zip(&texts) {
        let plain = decrypt(&secret, item);
        assert_eq!(plain["body"], text.as_str());
        assert_eq!(plain["content"]["body"], text.as_str());
        uuid::Uuid::parse_str(item["id"].as_str().unwrap()).expect("id is a UUID");
    }
    assert_eq!(items[0]["isMine"], true);
    assert_eq!(items[1]["isMine"], false);

    // Statistics over what was stored: the three messages of one room.
    let stats = expect_json(
        app.get_auth("/api/messages/stats", &me.access_token).await,
        200,
    )
    .await;
    let s = &stats["stats"];
    assert_eq!(s["total_messages"], 3);
    assert_eq!(s["total_rooms"], 1);
    let seed = Seeder::open(&app);
    let (avg, high, questions): (f64, i64, i64) = seed
        .conn
        .query_row(
            "SELECT AVG(importance), SUM(importance >= 0.7), SUM(is_question) FROM messages WHERE user_id = ?1",
            [uid(&me)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!((s["avg_importance"].as_f64().unwrap() - avg).abs() < 1e-9);
    assert_eq!(s["high_importance_count"], high);
    assert_eq!(s["questions_count"], questions);
    assert!(s["all_categories"]
        .as_array()
        .is_some_and(|c| !c.is_empty()));
}
