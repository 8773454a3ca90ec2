//! Deleting messages (only with confirmation) and the message statistics.

use reqwest::Method;
use serde_json::json;

use crate::common::client::Refusal;
use crate::common::*;

use super::{enc, msg, personal_token, uid, Seeder, CONFIRM};

#[tokio::test]
async fn deleting_needs_confirmation_and_removes_only_the_callers_rows() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.delete").await;
    let other = app.sign_up("msg.delete.other").await;
    let (id, other_id) = (uid(&me), uid(&other));
    let seed = Seeder::open(&app);
    let (a, b) = ("!del-a:seed.test", "!del-b:seed.test");
    let bob = "@bob:seed.test";
    for user in [&id, &other_id] {
        seed.room(user, a, None);
        seed.room(user, b, None);
        for ts in [1000, 2000, 3000] {
            seed.message(user, a, &msg(bob, ts, "a"));
        }
        seed.message(user, b, &msg(bob, 1500, "b"));
    }
    let messages = app.user(&me).messages();

    for (query, confirm, code) in [
        ("", None, "confirmation_required"),
        ("", Some("delete_messages"), "confirmation_required"),
        ("?before=soon", Some(CONFIRM), "invalid_request"),
    ] {
        let deleted = messages.delete_all(query, confirm).await;
        deleted.refused(400, code);
    }
    assert_eq!(seed.count(&id), 4);

    // Room a, strictly older than 3000: two rows.
    let query = format!("?roomId={}&before=3000", enc(a));
    let body = messages.delete_all(&query, Some(CONFIRM)).await.unwrap();
    assert_eq!(body["deletedCount"], 2);
    assert_eq!(body["criteria"], json!({"roomId": a, "before": 3000}));
    assert!(body["message"].as_str().unwrap().contains('2'));
    assert_eq!(seed.count(&id), 2);
    assert_eq!(seed.count(&other_id), 4, "other users are untouched");

    // RFC 3339 cutoff over all rooms.
    let query = "?before=1970-01-01T00:00:02Z";
    let body = messages.delete_all(query, Some(CONFIRM)).await.unwrap();
    assert_eq!(body["deletedCount"], 1, "{body}");
    assert_eq!(body["criteria"], json!({"roomId": null, "before": 2000}));
    assert_eq!(seed.count(&id), 1);

    // One message by id.
    let (mine, _) = seed.message(&id, a, &msg(bob, 9000, "one"));
    let (theirs, _) = seed.message(&other_id, a, &msg(bob, 9000, "theirs"));
    let deleted = messages.delete("not-a-uuid").await;
    deleted.refused(400, "invalid_request");
    for missing in [uuid::Uuid::new_v4().to_string(), theirs.clone()] {
        messages.delete(&missing).await.refused(404, "not_found");
    }
    let body = messages.delete(&mine.to_uppercase()).await.unwrap();
    assert_eq!(body["deletedId"], mine.as_str());
    assert!(body["message"].is_string());
    messages.delete(&mine).await.refused(404, "not_found");
    assert_eq!(seed.count(&other_id), 5);

    // Everything of the caller.
    let body = messages.delete_all("", Some(CONFIRM)).await.unwrap();
    assert_eq!(body["deletedCount"], 1);
    assert_eq!(body["criteria"], json!({"roomId": null, "before": null}));
    assert_eq!(seed.count(&id), 0);
    assert_eq!(seed.count(&other_id), 5);

    // Native only: personal tokens are refused by the allowlist.
    let token = personal_token(&app, &me).await;
    let deleted = app
        .api(&token)
        .messages()
        .delete_all("", Some(CONFIRM))
        .await;
    deleted.refused(403, "forbidden_for_api_token");
}

#[tokio::test]
async fn stats_are_aggregates_of_the_callers_messages_and_static_routes_win() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.stats").await;
    let id = uid(&me);
    let jwt = &me.access_token;
    let messages = app.user(&me).messages();
    let empty = messages.stats().await.unwrap();
    assert_eq!(
        empty,
        json!({"stats": {"total_messages": 0, "total_rooms": 0, "avg_importance": 0.0,
            "high_importance_count": 0, "questions_count": 0, "all_categories": []}})
    );

    let seed = Seeder::open(&app);
    let rooms = [
        "!stats-a:seed.test",
        "!stats-b:seed.test",
        "!stats-c:seed.test",
    ];
    let categories = ["work", "general", "question", "social"];
    let mut sent = Vec::new();
    for i in 0..13usize {
        let room = rooms[i % 2];
        let mut m = msg("@bob:seed.test", 1000 + i as i64, &format!("m{i}"));
        m.importance = (i % 11) as f64 / 10.0;
        m.category = categories[i % 3].to_owned();
        m.question = i % 4 == 0;
        seed.room(&id, room, None);
        seed.message(&id, room, &m);
        sent.push((room, m));
    }
    seed.room(&id, rooms[2], None); // a room without messages does not count
    let other = app.sign_up("msg.stats.other").await;
    seed.room(&uid(&other), rooms[2], None);
    let mut noise = msg("@bob:seed.test", 1, "other user's");
    noise.category = "social".to_owned();
    noise.importance = 1.0;
    seed.message(&uid(&other), rooms[2], &noise);

    let stats = messages.stats().await.unwrap();
    let stats = &stats["stats"];
    let total = sent.len() as f64;
    let avg = sent.iter().map(|(_, m)| m.importance).sum::<f64>() / total;
    let mut cats: Vec<&str> = sent.iter().map(|(_, m)| m.category.as_str()).collect();
    cats.sort_unstable();
    cats.dedup();
    let distinct_rooms = sent
        .iter()
        .map(|(r, _)| *r)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert_eq!(stats["total_messages"], sent.len());
    assert_eq!(stats["total_rooms"], distinct_rooms);
    assert!(
        (stats["avg_importance"].as_f64().unwrap() - avg).abs() < 1e-9,
        "{stats}"
    );
    assert_eq!(
        stats["high_importance_count"],
        sent.iter().filter(|(_, m)| m.importance >= 0.7).count()
    );
    assert_eq!(
        stats["questions_count"],
        sent.iter().filter(|(_, m)| m.question).count()
    );
    assert_eq!(stats["all_categories"], json!(cats));

    // Static segments win over /api/messages/{messageId}; other methods on them are
    // refused cleanly, never 500.
    for (method, path) in [
        (Method::DELETE, "/api/messages/stats"),
        (Method::POST, "/api/messages/stats"),
        (Method::GET, "/api/messages/send-multi"),
        (Method::DELETE, "/api/messages/send-multi"),
    ] {
        let resp = app.send(method.clone(), path, Some(jwt), None).await;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        assert_eq!(status, 405, "{method} {path}: {body}");
    }
    let sent = messages
        .send_multi(json!({"roomIds": [], "body": "x"}))
        .await;
    let err = sent.expect(200).refused(400, "invalid_request");
    assert!(
        err["message"].as_str().unwrap().starts_with("roomIds"),
        "{err}"
    );

    let token = personal_token(&app, &me).await;
    let stats = app.api(&token).messages().stats().await;
    stats.refused(403, "forbidden_for_api_token");
}
