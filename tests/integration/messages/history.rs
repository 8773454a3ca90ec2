//! Reading history: the native (sealed) and readable views, cursors, a page read again.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::client::keys::CONFIRM_KEY_DELETION;
use crate::common::client::Refusal;
use crate::common::*;

use super::{
    bodies, decrypt, enc, history, matrix_id, msg, personal_token, register_key, uid, Seeder,
    CONFIRM,
};

#[tokio::test]
async fn native_history_is_sealed_to_the_registered_key_and_pages_strictly_before() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.native").await;
    let jwt = me.access_token.clone();
    let id = uid(&me);
    let seed = Seeder::open(&app);
    let room = "!native-a:seed.test";
    let other = "!native-b:seed.test";
    seed.room(&id, room, Some("telegram"));
    seed.room(&id, other, None);

    // Without a registered key the encrypted view is refused.
    app.api(&jwt)
        .messages()
        .page("")
        .await
        .refused(409, "keys_not_registered");
    let secret = register_key(&app, &me).await;

    let alice = "@alice:seed.test";
    let mut seeded = Vec::new();
    for i in 1..=5 {
        let mut m = msg(alice, 1_700_000_000_000 + i * 1000, &format!("native {i}"));
        m.importance = i as f64 / 10.0;
        m.edited = i == 2;
        m.redacted = i == 3;
        m.mine = i == 4;
        if m.mine {
            m.sender = matrix_id(&me);
        }
        seeded.push((seed.message(&id, room, &m), m));
    }
    seed.message(&id, other, &msg(alice, 1_700_000_000_500, "other room"));
    seed.message(&id, other, &msg(alice, 1_700_000_009_000, "other newest"));

    // Newest first, two per page, each page strictly older than `before`.
    let mut got = Vec::new();
    let mut query = format!("?roomId={}&limit=2", enc(room));
    loop {
        let page = history(&app, &jwt, &query).await;
        let items = page["messages"].as_array().unwrap().clone();
        assert!(page.get("nextCursor").is_none(), "{page}");
        if items.is_empty() {
            break;
        }
        assert!(items.len() <= 2);
        let oldest = items.last().unwrap()["timestamp"].as_i64().unwrap();
        got.extend(items);
        query = format!("?roomId={}&limit=2&before={oldest}", enc(room));
    }
    assert_eq!(got.len(), 5);
    for (item, ((mid, event_id), m)) in got.iter().zip(seeded.iter().rev()) {
        assert_eq!(item["id"], mid.as_str());
        assert_eq!(item["eventId"], event_id.as_str());
        assert_eq!(item["roomId"], room);
        assert_eq!(item["senderId"], m.sender.as_str());
        assert_eq!(item["timestamp"], m.ts);
        assert_eq!(item["msgtype"], "m.text");
        assert_eq!(item["platform"], "telegram");
        assert_eq!(item["importance"].as_f64().unwrap(), m.importance);
        assert_eq!(item["isMine"], m.mine);
        assert_eq!(item["edited"], m.edited);
        assert_eq!(item["redacted"], m.redacted);
        let plain = decrypt(&secret, item);
        if m.redacted {
            assert_eq!(plain["body"], "", "{plain}");
        } else {
            assert_eq!(plain["body"], m.body.as_str());
            assert_eq!(plain["content"]["body"], m.body.as_str());
            assert_eq!(plain["content"]["msgtype"], "m.text");
        }
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        assert!(
            !keys.iter().any(|k| *k == "text" || *k == "content"),
            "{item}"
        );
    }

    // `before` as RFC 3339 means the same instant.
    let cutoff = chrono::DateTime::from_timestamp_millis(1_700_000_003_000)
        .unwrap()
        .to_rfc3339();
    let page = history(
        &app,
        &jwt,
        &format!("?roomId={}&before={}", enc(room), enc(&cutoff)),
    )
    .await;
    let ts: Vec<i64> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(ts, [1_700_000_002_000, 1_700_000_001_000]);

    // Without roomId: every room of the caller, newest first.
    let all = history(&app, &jwt, "").await;
    let ts: Vec<i64> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(ts.len(), 7);
    assert!(ts.windows(2).all(|w| w[0] >= w[1]), "{ts:?}");
    assert_eq!(all["messages"][0]["roomId"], other);
    assert!(all["messages"][0]["platform"].is_null());

    // Bad input is 400, unknown rooms 404 — never 500.
    for q in [
        "?limit=0",
        "?limit=101",
        "?limit=-3",
        "?limit=abc",
        "?before=yesterday",
        "?before=-1",
        "?cursor=abc",
        "?roomId=",
    ] {
        app.api(&jwt)
            .messages()
            .page(q)
            .await
            .refused(400, "invalid_request");
    }
    app.api(&jwt)
        .messages()
        .page("?roomId=%21unknown%3Aseed.test")
        .await
        .refused(404, "not_found");
    let page = history(&app, &jwt, &format!("?roomId={}&limit=100", enc(room))).await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn readable_history_walks_each_conversation_with_an_opaque_cursor() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.readable").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    let mine = matrix_id(&me);

    // A second account of the same group: its Matrix ID counts as outgoing.
    let second = unique_email("msg.readable.second");
    let added = add_account(&app, &me, &second).await;
    let seed = Seeder::open(&app);
    let linked: String = seed
        .conn
        .query_row(
            "SELECT matrix_user_id FROM users WHERE id = ?1",
            [added["id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .expect("the added account has a Matrix ID");

    let (a, b, c) = (
        "!walk-a:seed.test",
        "!walk-b:seed.test",
        "!walk-c:seed.test",
    );
    for r in [c, a, b] {
        seed.room(&id, r, Some("whatsapp"));
    }
    let bob = "@bob:seed.test";
    let mut redacted = msg(bob, 3000, "secret");
    redacted.redacted = true;
    let mut own = msg(&mine, 2000, "from me");
    own.mine = true;
    let a_msgs = [
        msg(bob, 1000, "a1"),
        own,
        redacted,
        msg(&linked, 4000, "from my other account"),
    ];
    let a_events: Vec<String> = a_msgs.iter().map(|m| seed.message(&id, a, m).1).collect();
    let c_events: Vec<String> = [msg(bob, 500, "c1"), msg(bob, 600, "c2")]
        .iter()
        .map(|m| seed.message(&id, c, m).1)
        .collect();
    // Another user's rows never show up.
    let stranger = app.sign_up("msg.readable.stranger").await;
    seed.room(&uid(&stranger), a, None);
    seed.message(&uid(&stranger), a, &msg(bob, 5000, "not yours"));

    // The walk: room id order, each room newest first, one room per page, an empty
    // page for the empty room still carries a cursor, null at the end.
    let pages = walk_every_room(&app, &token).await;
    let rooms_per_page: Vec<Vec<String>> = pages.iter().map(|p| bodies(p, "roomId")).collect();
    assert_eq!(
        rooms_per_page,
        vec![
            vec![a.to_owned(); 3],
            vec![a.to_owned()],
            vec![],
            vec![c.to_owned(); 2]
        ],
        "{pages:#?}"
    );
    let walked: Vec<String> = pages.iter().flat_map(|p| bodies(p, "eventId")).collect();
    let mut expected: Vec<String> = a_events.iter().rev().cloned().collect();
    expected.extend(c_events.iter().rev().cloned());
    assert_eq!(walked, expected);

    readable_fields_are_complete(&pages[0]["messages"], &linked);
    let next = one_room_pages_newest_first_to_the_end(&app, &token, a, b).await;
    let walk_cursor = pages[0]["nextCursor"].as_str().unwrap();
    cursors_of_other_filters_are_refused(&app, &token, walk_cursor, &next, a, c).await;
}

/// Every page of the all-rooms walk, three messages at a time, checking each cursor is
/// opaque and that the walk ends.
async fn walk_every_room(app: &TestApp, token: &str) -> Vec<Value> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("?limit=3&cursor={c}"),
            None => "?limit=3".to_owned(),
        };
        let page = history(app, token, &q).await;
        let next = page["nextCursor"].as_str().map(str::to_owned);
        pages.push(page);
        match next {
            Some(n) => {
                assert!(n.parse::<i64>().is_err(), "cursor is opaque: {n}");
                cursor = Some(n);
            }
            None => return pages,
        }
        assert!(pages.len() < 10, "the walk must end");
    }
}

/// Fields of the readable message: direction from either account of the group, the
/// redacted text empty, and every key.
fn readable_fields_are_complete(first: &Value, linked: &str) {
    assert_eq!(first[0]["text"], "from my other account");
    assert_eq!(first[0]["direction"], "outgoing");
    assert_eq!(first[0]["isMine"], false);
    assert_eq!(first[0]["timestamp"], 4000);
    assert_eq!(first[0]["senderId"], linked);
    assert_eq!(first[0]["content"]["body"], "from my other account");
    assert_eq!(first[1]["text"], "", "redacted text is empty");
    assert_eq!(first[1]["direction"], "incoming");
    assert_eq!(first[2]["text"], "from me");
    assert_eq!(first[2]["direction"], "outgoing");
    assert_eq!(first[2]["isMine"], true);
    let keys = sorted_keys(&first[0]);
    assert_eq!(
        keys,
        [
            "content",
            "direction",
            "editedAt",
            "eventId",
            "isMine",
            "media",
            "msgtype",
            "reactions",
            "replyTo",
            "roomId",
            "senderAvatarUrl",
            "senderId",
            "senderName",
            "text",
            "timestamp"
        ]
    );
}

/// One room: newest first to the end; an empty room is an empty last page. Returns the
/// room's first cursor.
async fn one_room_pages_newest_first_to_the_end(
    app: &TestApp,
    token: &str,
    a: &str,
    b: &str,
) -> String {
    let page = history(app, token, &format!("?roomId={}&limit=3", enc(a))).await;
    assert_eq!(
        bodies(&page, "text"),
        ["from my other account", "", "from me"]
    );
    let next = page["nextCursor"].as_str().unwrap().to_owned();
    let page2 = history(
        app,
        token,
        &format!("?roomId={}&limit=3&cursor={next}", enc(a)),
    )
    .await;
    assert_eq!(bodies(&page2, "text"), ["a1"]);
    assert!(page2["nextCursor"].is_null());
    let empty = history(app, token, &format!("?roomId={}", enc(b))).await;
    assert_eq!(empty["messages"], json!([]));
    assert!(empty["nextCursor"].is_null());
    next
}

/// Cursors are checked: garbage, timestamps and cursors of other filters are 400.
async fn cursors_of_other_filters_are_refused(
    app: &TestApp,
    token: &str,
    walk_cursor: &str,
    next: &str,
    a: &str,
    c: &str,
) {
    for q in [
        "?cursor=garbage".to_owned(),
        "?cursor=1700000000000".to_owned(),
        format!("?roomId={}&cursor={walk_cursor}", enc(a)),
        format!("?cursor={next}"),
        format!("?roomId={}&cursor={next}", enc(c)),
        "?before=1700000000000".to_owned(),
        "?limit=0".to_owned(),
        "?limit=101".to_owned(),
    ] {
        app.api(token)
            .messages()
            .page(&q)
            .await
            .refused(400, "invalid_request");
    }
    app.api(token)
        .messages()
        .page("?roomId=%21nope%3Aseed.test")
        .await
        .refused(404, "not_found");
}

#[tokio::test]
async fn readable_history_answers_no_signing_key_after_key_deletion() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.shred").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    register_key(&app, &me).await;
    let seed = Seeder::open(&app);
    let room = "!shred:seed.test";
    seed.room(&id, room, None);
    seed.message(&id, room, &msg("@bob:seed.test", 1000, "before deletion"));
    let page = history(&app, &token, "").await;
    assert_eq!(bodies(&page, "text"), ["before deletion"]);

    let keys = app.user(&me).keys();
    keys.delete(Some(CONFIRM_KEY_DELETION)).await.unwrap();
    app.api(&token)
        .messages()
        .page("")
        .await
        .refused(409, "NO_SIGNING_KEY");
    app.api(&token)
        .messages()
        .page(&format!("?roomId={}", enc(room)))
        .await
        .refused(409, "NO_SIGNING_KEY");
    app.api(&me.access_token)
        .messages()
        .page("")
        .await
        .refused(409, "keys_not_registered");

    // New keys: readable again; the shredded content stays gone, new content reads.
    let secret = register_key(&app, &me).await;
    seed.message(&id, room, &msg("@bob:seed.test", 2000, "after new keys"));
    let page = history(&app, &token, "").await;
    assert_eq!(bodies(&page, "text"), ["after new keys"]);
    let native = history(&app, &me.access_token, "").await;
    assert_eq!(native["messages"].as_array().unwrap().len(), 1);
    assert_eq!(
        decrypt(&secret, &native["messages"][0])["body"],
        "after new keys"
    );
}

/// Pages are served from memory between writes (see `services::messages::readable`): a
/// change made through the service shows on the very next read, and one written to the
/// database by another process within the documented second.
#[tokio::test]
async fn a_page_read_again_reflects_every_change_at_once() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("msg.fresh").await;
    let id = uid(&me);
    let token = personal_token(&app, &me).await;
    let seed = Seeder::open(&app);
    let room = "!fresh:seed.test";
    seed.room(&id, room, None);
    let (first, _) = seed.message(&id, room, &msg("@bob:seed.test", 1000, "first"));
    seed.message(&id, room, &msg("@bob:seed.test", 2000, "second"));
    let query = format!("?roomId={}&limit=10", enc(room));
    let page = history(&app, &token, &query).await;
    assert_eq!(bodies(&page, "text"), ["second", "first"]);
    assert_eq!(
        history(&app, &token, &query).await,
        page,
        "the same page again"
    );

    // Deleting one message through the API: gone from the next read.
    let messages = app.user(&me).messages();
    messages.delete(&first).await.unwrap();
    assert_eq!(
        bodies(&history(&app, &token, &query).await, "text"),
        ["second"]
    );

    // A row written by another process (here: this test) shows within a second.
    seed.message(&id, room, &msg("@bob:seed.test", 3000, "third"));
    let deadline = Instant::now() + Duration::from_millis(1500);
    loop {
        let texts = bodies(&history(&app, &token, &query).await, "text");
        if texts == ["third", "second"] {
            break;
        }
        assert!(Instant::now() < deadline, "still {texts:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Deleting by criteria, then revoking the token: both effective on the next request.
    let criteria = format!("?roomId={}", enc(room));
    messages.delete_all(&criteria, Some(CONFIRM)).await.unwrap();
    assert!(bodies(&history(&app, &token, &query).await, "text").is_empty());
    let tokens = app.user(&me).tokens();
    let listed = tokens.list().await.unwrap();
    tokens
        .revoke(listed["tokens"][0]["id"].as_str().unwrap())
        .await
        .unwrap();
    let page = app.api(&token).messages().page(&query).await;
    page.refused(401, "unauthorized");
}
