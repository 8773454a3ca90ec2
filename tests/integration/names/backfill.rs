//! Names of back-filled history against the real Synapse: a friend writes, renames and
//! writes again before the user joins, so both lines reach Switchboard by paging back
//! (`/messages`), not by the sync; each line carries the name of its time in both views.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{enc, WAIT};
use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;
use crate::messages::{decrypt, register_key};

/// More than a sync's timeline holds (100 events once the worker has synced before), so
/// the lines before them are only reached by paging back.
const FILLERS: usize = 110;
const FETCHED: &str = "fetched older history from the homeserver";

/// Renames `who` on its profile and waits until `room`'s member state has the new name
/// (Synapse carries a profile change into the rooms in the background).
pub(super) async fn rename(who: &MatrixUser, room: &str, name: &str) {
    who.set_display_name(name).await;
    let deadline = Instant::now() + WAIT;
    while who.member_display_name(room, &who.user_id).await.as_deref() != Some(name) {
        assert!(
            Instant::now() < deadline,
            "the rename never reached the room"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every message of `room` in the view of `bearer`, newest first: a personal token's
/// pages follow `nextCursor`, a native session's (which have none) go on `before` the
/// oldest one read until a page is empty.
async fn all_messages(app: &TestApp, bearer: &str, room: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut query = format!("roomId={}&limit=100", enc(room));
    for _ in 0..20 {
        let page = expect_json(
            app.get_auth(&format!("/api/messages?{query}"), bearer)
                .await,
            200,
        )
        .await;
        let items = page["messages"].as_array().unwrap();
        out.extend(items.iter().cloned());
        let oldest = items.last().and_then(|m| m["timestamp"].as_i64());
        query = match (page.get("nextCursor"), oldest) {
            (Some(Value::String(c)), _) => format!("roomId={}&limit=100&cursor={c}", enc(room)),
            (None, Some(t)) => format!("roomId={}&limit=100&before={t}", enc(room)),
            _ => return out,
        };
    }
    panic!("the history of {room} does not end");
}

fn find<'a>(messages: &'a [Value], event: &str) -> &'a Value {
    messages
        .iter()
        .find(|m| m["eventId"] == event)
        .unwrap_or_else(|| panic!("{event} not in the history"))
}

/// Waits until the newest message of `room` is stored (the sync ingested the first timeline).
async fn wait_for_text(app: &TestApp, token: &str, room: &str, body: &str) {
    let path = format!("/api/messages?roomId={}&limit=1", enc(room));
    let deadline = Instant::now() + WAIT;
    loop {
        let resp = app.get_auth(&path, token).await;
        if resp.status() == 200 {
            let page: Value = resp.json().await.unwrap();
            if page["messages"][0]["text"] == body {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{room} not synced");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the server stored the message of `event` (read-only look at its database).
fn stored(app: &TestApp, event: &str) -> bool {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(
        "SELECT COUNT(*) FROM messages WHERE event_id = ?1",
        [event],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

#[tokio::test]
async fn back_filled_lines_carry_the_name_of_their_time_in_both_views() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("names.backfill").await;
    let (_, token) = crate::search::token_with_id(&app, &session).await;
    let secret = register_key(&app, &session).await;
    let me = crate::search::me_on_matrix(&session);
    let anna = mx::register("annabf").await;
    anna.set_display_name("Anna Berg").await;
    let room = anna.create_room(Some("Old times"), &[], false).await;
    let old = anna.send_text(&room, "the old line").await;
    rename(&anna, &room, "Anna B. Svensson").await;
    let new = anna.send_text(&room, "the new line").await;
    let mut newest = String::new();
    for i in 0..FILLERS {
        newest = format!("filler {i}");
        anna.send_text(&room, &newest).await;
    }
    anna.invite(&room, &me.user_id).await;
    me.join(&room).await;
    wait_for_text(&app, &token, &room, &newest).await;
    // The first sync brought only the latest events: both lines come by back-fill.
    assert!(
        !stored(&app, &old) && !stored(&app, &new),
        "the lines must not come with the sync"
    );

    let readable = all_messages(&app, &token, &room).await;
    assert_eq!(readable.len(), FILLERS + 2, "every line once");
    assert!(
        app.log()
            .lines()
            .any(|l| l.contains(FETCHED) && l.contains(&room)),
        "paged back from the homeserver"
    );
    let (o, n) = (find(&readable, &old), find(&readable, &new));
    assert_eq!(
        (&o["text"], &o["senderName"]),
        (&"the old line".into(), &"Anna Berg".into()),
        "{o}"
    );
    assert_eq!(n["senderName"], "Anna B. Svensson", "{n}");
    assert_eq!(
        readable[0]["senderName"], "Anna B. Svensson",
        "the newest line"
    );

    // The native view: the same names, sealed with the text, opened with the user's key.
    let native = all_messages(&app, &session.access_token, &room).await;
    let (o, n) = (find(&native, &old), find(&native, &new));
    assert!(o.get("senderName").is_none(), "nothing in the clear: {o}");
    let (o, n) = (decrypt(&secret, o), decrypt(&secret, n));
    assert_eq!(
        (&o["body"], &o["senderName"]),
        (&"the old line".into(), &"Anna Berg".into()),
        "{o}"
    );
    assert_eq!(
        (&n["body"], &n["senderName"]),
        (&"the new line".into(), &"Anna B. Svensson".into()),
        "{n}"
    );
}
