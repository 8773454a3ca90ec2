//! The `GET /api/sync` event stream: delivery, replay after a reconnect, who may stream, shutdown.

use super::*;

/// The worker's long poll (30 s) returns as soon as the homeserver has the message, so the
/// event arrives well before the poll would have ended by itself. How fast it arrives is a
/// figure for the benchmarks, not an assertion here: a loaded CI machine may take seconds.
#[tokio::test]
async fn a_message_from_another_user_reaches_the_event_stream_before_the_long_poll_ends() {
    let c = convo(Some("Sync latency"), false).await;
    let mut sse = open_sse(&c.app, &c.session.access_token, None).await;
    // Let the worker finish the join and go back to its long-poll: one message first.
    let warm_up = c.bob.send_text(&c.room, "warming up").await;
    sse.wait_for("message.created", |e| is_message_created(e, &warm_up))
        .await;

    let started = Instant::now();
    let event_id = c.bob.send_text(&c.room, "is anyone there?").await;
    let send_took = started.elapsed();
    let e = sse
        .wait_for("message.created", |e| is_message_created(e, &event_id))
        .await;
    let latency = started.elapsed();
    eprintln!("message.created arrived {latency:?} after sending began (the send itself took {send_took:?})");
    assert!(
        latency < Duration::from_secs(15),
        "took {latency:?}: the long poll did not return on the message"
    );
    assert_eq!(e.data["type"], "message.created");
    assert_eq!(e.data["roomId"], c.room.as_str());
    assert!(e.data["messageId"].as_str().is_some_and(|m| m.len() == 36));
    assert!(e.id.as_deref().is_some_and(|id| id.parse::<u64>().is_ok()));
    let updated = sse
        .wait_for("room.updated", |e| {
            e.event == "room.updated" && e.data["roomId"] == c.room.as_str()
        })
        .await;
    assert_eq!(updated.data["type"], "room.updated");
}

#[tokio::test]
async fn reconnecting_with_last_event_id_replays_missed_events_or_asks_for_a_rescan() {
    let c = convo(Some("Replay"), false).await;
    let token = c.session.access_token.clone();
    let mut sse = open_sse(&c.app, &token, None).await;
    let first = c.bob.send_text(&c.room, "one").await;
    let seen = sse
        .wait_for("first message", |e| is_message_created(e, &first))
        .await;
    drop(sse);

    let missed = vec![
        c.bob.send_text(&c.room, "two").await,
        c.bob.send_text(&c.room, "three").await,
    ];
    wait_for_messages(&c.app, &c.user_id, &c.room, "missed messages", |r| {
        has_all(r, &missed)
    })
    .await;
    let mut resumed = open_sse(&c.app, &token, seen.id.as_deref()).await;
    let mut replayed = Vec::new();
    while replayed.len() < missed.len() {
        let e = resumed
            .next(Duration::from_secs(5))
            .await
            .expect("replayed events");
        assert_ne!(e.event, "resync");
        assert!(
            !is_message_created(&e, &first),
            "the acknowledged event is not repeated"
        );
        if e.event == "message.created" {
            replayed.push(e.data["eventId"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(replayed, missed);

    // An id from before this process started: the client must rescan.
    let mut stale = open_sse(&c.app, &token, Some("1")).await;
    let e = stale.next(Duration::from_secs(5)).await.expect("resync");
    assert_eq!(e.event, "resync");
    assert_eq!(e.data["type"], "resync");
}

#[tokio::test]
async fn personal_tokens_may_stream_and_anonymous_callers_may_not() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("ssetoken").await;
    let token = personal_token(&app, &session).await;
    let _sse = open_sse(&app, &token, None).await;
    expect_error(app.get("/api/sync").await, 401, "unauthorized").await;
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_exits_within_ten_seconds() {
    let mut app = TestApp::start_with_mail().await;
    let session = app.sign_up("term").await;
    let mut sse = open_sse(&app, &session.access_token, None).await;
    let started = Instant::now();
    let status = app.signal("TERM");
    let took = started.elapsed();
    eprintln!("exited {took:?} after SIGTERM with an open stream");
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    // The process is gone by now, so the stream has ended either way; what shows that the
    // server ended it (rather than the 10 s grace running out with it open) is the time.
    assert!(
        took < Duration::from_secs(5),
        "the open stream held the shutdown for {took:?}"
    );
    assert!(
        sse.ends_within(Duration::from_secs(1)).await,
        "the stream ended"
    );
}
