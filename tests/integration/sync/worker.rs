//! The sync worker against the real Synapse: rooms and messages stored once, restart safety, edits and redactions, homeserver errors, gaps filled when paging back.

use super::*;

#[tokio::test]
async fn the_worker_stores_accepted_rooms_and_messages_once() {
    let c = convo(None, true).await;
    let mine = MatrixUser::from_token(&c.me, c.session.matrix_access_token.as_deref().unwrap());
    let mut sent = vec![
        c.bob.send_text(&c.room, "hello from bob").await,
        mine.send_text(&c.room, "hello from me").await,
        c.bob.send_text(&c.room, "urgent: call me").await,
    ];
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "messages", |r| {
        has_all(r, &sent)
    })
    .await;
    assert_eq!(rows.len(), 3, "{rows:#?}");
    for row in &rows {
        assert_eq!(row.is_mine, row.sender == c.me, "{row:?}");
        assert!(!row.edited && !row.redacted);
    }
    let conn = db(&c.app);
    let (membership, is_direct, recipient, members): (String, bool, Option<String>, i64) = conn
        .query_row(
            "SELECT membership, is_direct, recipient_id, member_count FROM rooms \
             WHERE user_id = ?1 AND room_id = ?2",
            [&c.user_id, &c.room],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(membership, "join");
    assert!(is_direct, "a direct invite makes a direct room");
    assert_eq!(recipient.as_deref(), Some(c.bob.user_id.as_str()));
    assert_eq!(members, 2);
    let (category, importance): (String, f64) = conn
        .query_row(
            "SELECT category, importance FROM messages WHERE event_id = ?1",
            [&sent[2]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(category, "urgent");
    assert!(importance > 0.5);
    let opener = Opener::new(&c.app, &c.user_id);
    assert_eq!(
        opener.room_name(&c.app, &c.user_id, &c.room).as_deref(),
        Some("Bob Example")
    );
    let bob_row = rows.iter().find(|r| r.event_id == sent[0]).unwrap();
    assert_eq!(opener.body(&c.app, &bob_row.id), "hello from bob");

    // A second room with a name; nothing is stored twice.
    let named = c.bob.create_room(Some("Team chat"), &[&c.me], false).await;
    accept_invite(&c.app, &c.session.access_token, &named).await;
    c.bob.wait_for_member(&named, &c.me, WAIT).await;
    sent.push(c.bob.send_text(&named, "welcome").await);
    wait_for_messages(&c.app, &c.user_id, &named, "message", |r| r.len() == 1).await;
    assert_eq!(
        opener.room_name(&c.app, &c.user_id, &named).as_deref(),
        Some("Team chat")
    );
    let total: i64 = db(&c.app)
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE user_id = ?1",
            [&c.user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(total, 4);
}

#[tokio::test]
async fn a_kill_9_restart_resumes_without_losing_or_duplicating_messages() {
    let mut c = convo(Some("Crash test"), false).await;
    let mut sent = Vec::new();
    for i in 0..3 {
        sent.push(c.bob.send_text(&c.room, &format!("before {i}")).await);
    }
    wait_for_messages(&c.app, &c.user_id, &c.room, "first messages", |r| {
        has_all(r, &sent)
    })
    .await;

    c.app.kill9();
    for i in 0..3 {
        sent.push(c.bob.send_text(&c.room, &format!("while down {i}")).await);
    }
    c.app.spawn().await;
    for i in 0..2 {
        sent.push(c.bob.send_text(&c.room, &format!("after {i}")).await);
    }
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "all messages", |r| {
        has_all(r, &sent)
    })
    .await;
    // Positive marker: one more message is stored, so further polls have happened; then
    // nothing was added twice.
    let marker = c.bob.send_text(&c.room, "marker").await;
    let rows_after = wait_for_messages(&c.app, &c.user_id, &c.room, "the marker", |r| {
        has_all(r, std::slice::from_ref(&marker))
    })
    .await;
    assert_eq!(rows.len() + 1, rows_after.len());
    for event_id in &sent {
        let n = rows_after
            .iter()
            .filter(|r| &r.event_id == event_id)
            .count();
        assert_eq!(n, 1, "{event_id} stored {n} times");
    }
    assert_eq!(
        rows_after.len(),
        sent.len() + 1,
        "the sent messages and the marker"
    );
    let since: Option<String> = db(&c.app)
        .query_row(
            "SELECT since FROM sync_state WHERE user_id = ?1",
            [&c.user_id],
            |r| r.get(0),
        )
        .unwrap();
    assert!(since.is_some());
}

#[tokio::test]
async fn an_edit_rewrites_the_message_and_a_redaction_empties_it() {
    let c = convo(Some("Edits"), false).await;
    let typo = c.bob.send_text(&c.room, "helo wrld").await;
    let secret = c.bob.send_text(&c.room, "my password is hunter2").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "messages", |r| {
        has_all(r, &[typo.clone(), secret.clone()])
    })
    .await;

    c.bob.edit(&c.room, &typo, "hello world").await;
    c.bob.redact(&c.room, &secret).await;
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "edit and redaction", |r| {
        r.iter().any(|m| m.event_id == typo && m.edited)
            && r.iter().any(|m| m.event_id == secret && m.redacted)
    })
    .await;
    assert_eq!(rows.len(), 2, "an edit adds no row: {rows:#?}");
    let opener = Opener::new(&c.app, &c.user_id);
    let edited = rows.iter().find(|m| m.event_id == typo).unwrap();
    assert_eq!(opener.body(&c.app, &edited.id), "hello world");
    let redacted = rows.iter().find(|m| m.event_id == secret).unwrap();
    assert_eq!(opener.body(&c.app, &redacted.id), "");
}

#[tokio::test]
async fn homeserver_errors_are_recorded_and_stored_data_is_still_served() {
    let mut c = convo(Some("Outage"), false).await;
    let event_id = c.bob.send_text(&c.room, "before the outage").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "message", |r| {
        has_all(r, std::slice::from_ref(&event_id))
    })
    .await;

    // Restart pointing at a homeserver that is down.
    let config = std::fs::read_to_string(&c.app.config_path).unwrap();
    let down = format!("homeserver_url = \"http://127.0.0.1:{}\"", free_port());
    let config = config
        .lines()
        .map(|l| {
            if l.starts_with("homeserver_url") {
                down.clone()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    c.app.signal("TERM");
    std::fs::write(&c.app.config_path, config).unwrap();
    c.app.spawn().await;

    let deadline = Instant::now() + WAIT;
    let error = loop {
        let error: Option<String> = db(&c.app)
            .query_row(
                "SELECT last_error FROM sync_state WHERE user_id = ?1",
                [&c.user_id],
                |r| r.get(0),
            )
            .unwrap();
        if let Some(e) = error {
            break e;
        }
        assert!(Instant::now() < deadline, "no last_error recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(error.contains("unreachable"), "{error}");
    let me = expect_json(
        c.app
            .get_auth("/api/auth/me", &c.session.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(me["id"], c.user_id.as_str());
    let _sse = open_sse(&c.app, &c.session.access_token, None).await;
    assert_eq!(stored_messages(&c.app, &c.user_id, &c.room).len(), 1);
    assert!(c.app.log().contains("sync failed; retrying with backoff"));
}

/// The worker is down while more happens than one timeline holds: the limited sync after
/// the restart brings the latest events and records the gap, which is fetched when a
/// reader pages into it; every message reads back once, in order, none skipped.
#[tokio::test]
async fn a_gap_after_downtime_is_filled_when_paging_back() {
    let mut c = convo(Some("Busy room"), false).await;
    let token = personal_token(&c.app, &c.session).await;
    let first = c.bob.send_text(&c.room, "before").await;
    wait_for_messages(&c.app, &c.user_id, &c.room, "first message", |r| {
        has_all(r, std::slice::from_ref(&first))
    })
    .await;
    c.app.kill9();
    // More than the worker's per-room timeline limit (100) while it is down.
    let mut sent = vec![(first, "before".to_owned())];
    for i in 0..150 {
        let body = format!("busy {i}");
        sent.push((c.bob.send_text(&c.room, &body).await, body));
    }
    c.app.spawn().await;
    let newest = sent.last().unwrap().0.clone();
    let rows = wait_for_messages(&c.app, &c.user_id, &c.room, "the newest message", |r| {
        has_all(r, std::slice::from_ref(&newest))
    })
    .await;
    assert!(rows.len() < sent.len(), "the gap is not fetched at sync");
    assert!(
        c.app.log().contains("recorded a timeline gap"),
        "{}",
        c.app.log()
    );

    // Paging back from the newest message fills the gap.
    let mut read: Vec<(String, String)> = Vec::new();
    let mut query = format!(
        "?roomId={}&limit=40",
        switchboard::clients::matrix::encode(&c.room)
    );
    loop {
        let resp = c
            .app
            .get_auth(&format!("/api/messages{query}"), &token)
            .await;
        let page = expect_json(resp, 200).await;
        for m in page["messages"].as_array().unwrap() {
            let id = m["eventId"].as_str().unwrap().to_owned();
            read.push((id, m["text"].as_str().unwrap().to_owned()));
        }
        match page["nextCursor"].as_str() {
            Some(cur) => {
                query = format!(
                    "?roomId={}&limit=40&cursor={cur}",
                    switchboard::clients::matrix::encode(&c.room)
                )
            }
            None => break,
        }
    }
    sent.reverse();
    assert_eq!(read, sent, "every message once, newest first");
    assert_eq!(
        stored_messages(&c.app, &c.user_id, &c.room).len(),
        sent.len()
    );
    assert!(
        c.app
            .log()
            .contains("fetched older history from the homeserver"),
        "{}",
        c.app.log()
    );
}
