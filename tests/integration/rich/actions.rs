//! Reactions, replies, edits and deletion for everyone in a plain room, both ways.

use serde_json::{json, Value};

use super::*;

fn path(room: &str, rest: &str) -> String {
    format!("/api/rooms/{}/messages{rest}", enc(room))
}

async fn call(
    app: &TestApp,
    token: &str,
    method: reqwest::Method,
    p: &str,
    body: Option<Value>,
) -> reqwest::Response {
    app.send(method, p, Some(token), body).await
}

fn reactions(m: &Value) -> Value {
    m["reactions"].clone()
}

#[tokio::test]
async fn reactions_replies_edits_and_deletions_both_ways() {
    let p = plain("").await;
    let (app, token, room, bob) = (&p.app, p.token.as_str(), p.room.as_str(), &p.bob);
    let hello = bob.send_text(room, "hello from bob").await;
    let bob_reaction = bob
        .send(
            room,
            "m.reaction",
            json!({"m.relates_to": {"rel_type": "m.annotation",
            "event_id": hello, "key": "👍"}}),
        )
        .await;
    // Synapse → Switchboard: bob's reaction shows.
    wait_message(app, token, room, "bob's reaction", |m| {
        m["eventId"] == hello.as_str()
            && reactions(m) == json!([{"key": "👍", "count": 1, "mine": false}])
    })
    .await;

    // Switchboard → Synapse: the same key (once per key). Announced on /api/sync.
    let mut sse = crate::sync::open_sse(app, token, None).await;
    let react = |key: &str| json!({"key": key});
    let r = expect_json(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, &format!("/{}/reactions", enc(&hello))),
            Some(react("👍")),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(r["duplicate"], false, "{r}");
    sse.wait_for("room.updated after the reaction", |e| {
        e.event == "room.updated" && e.data["roomId"] == room
    })
    .await;
    let my_reaction = r["eventId"].as_str().unwrap().to_owned();
    let again = expect_json(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, &format!("/{}/reactions", enc(&hello))),
            Some(react("👍")),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(
        (again["eventId"].as_str(), again["duplicate"].as_bool()),
        (Some(my_reaction.as_str()), Some(true))
    );
    let seen = bob.event(room, &my_reaction).await;
    assert_eq!(seen["type"], "m.reaction");
    assert_eq!(
        seen["content"]["m.relates_to"],
        json!({"rel_type": "m.annotation", "event_id": hello, "key": "👍"})
    );
    wait_message(app, token, room, "both reactions", |m| {
        m["eventId"] == hello.as_str()
            && reactions(m) == json!([{"key": "👍", "count": 2, "mine": true}])
    })
    .await;
    // Bad keys and targets.
    let long = "a".repeat(65);
    let e = expect_error(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, &format!("/{}/reactions", enc(&hello))),
            Some(react(&long)),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("key:"), "{e}");
    expect_error(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, "/%24unknown%3Alocalhost/reactions"),
            Some(react("x")),
        )
        .await,
        404,
        "not_found",
    )
    .await;

    // Removal: mine through the API, bob's on Synapse.
    expect_json(
        call(
            app,
            token,
            reqwest::Method::DELETE,
            &path(room, &format!("/{}/reactions/{}", enc(&hello), enc("👍"))),
            None,
        )
        .await,
        200,
    )
    .await;
    let gone = bob.event(room, &my_reaction).await;
    assert!(gone["unsigned"]["redacted_because"].is_object(), "{gone}");
    assert_eq!(gone["content"], json!({}), "{gone}");
    wait_message(app, token, room, "my reaction removed", |m| {
        m["eventId"] == hello.as_str()
            && reactions(m) == json!([{"key": "👍", "count": 1, "mine": false}])
    })
    .await;
    expect_error(
        call(
            app,
            token,
            reqwest::Method::DELETE,
            &path(room, &format!("/{}/reactions/{}", enc(&hello), enc("👍"))),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    bob.redact(room, &bob_reaction).await;
    wait_message(app, token, room, "bob's reaction removed", |m| {
        m["eventId"] == hello.as_str() && reactions(m) == json!([])
    })
    .await;

    // Replies both ways.
    let sent = expect_json(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, ""),
            Some(json!({"content": "hi bob", "txnId": "rep-1", "replyTo": hello})),
        )
        .await,
        200,
    )
    .await;
    let mine = sent["eventId"].as_str().unwrap().to_owned();
    let seen = bob.event(room, &mine).await;
    assert_eq!(
        seen["content"]["m.relates_to"]["m.in_reply_to"]["event_id"],
        hello.as_str(),
        "{seen}"
    );
    let bobs_reply = bob
        .send(
            room,
            "m.room.message",
            json!({"msgtype": "m.text", "body": "hi back",
            "m.relates_to": {"m.in_reply_to": {"event_id": mine}}}),
        )
        .await;
    let m = wait_event_id(app, token, room, &bobs_reply).await;
    assert_eq!(m["replyTo"], mine.as_str(), "{m}");
    let e = expect_error(
        call(
            app,
            token,
            reqwest::Method::POST,
            &path(room, ""),
            Some(json!({"content": "x", "txnId": "rep-2", "replyTo": "$nope:localhost"})),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().starts_with("replyTo:"),
        "{e}"
    );

    // Edits: mine, seen on Synapse and in the history; others' refused; empty refused.
    let edited = expect_json(
        call(
            app,
            token,
            reqwest::Method::PUT,
            &path(room, &format!("/{}", enc(&mine))),
            Some(json!({"content": "hi bob (edited)"})),
        )
        .await,
        200,
    )
    .await;
    let edit_ev = bob.event(room, edited["eventId"].as_str().unwrap()).await;
    assert_eq!(
        edit_ev["content"]["m.new_content"]["body"], "hi bob (edited)",
        "{edit_ev}"
    );
    assert_eq!(
        edit_ev["content"]["m.relates_to"],
        json!({"rel_type": "m.replace", "event_id": mine})
    );
    let m = wait_message(app, token, room, "the edit", |m| {
        m["eventId"] == mine.as_str() && m["text"] == "hi bob (edited)"
    })
    .await;
    assert!(m["editedAt"].as_i64().is_some_and(|t| t > 0), "{m}");
    expect_error(
        call(
            app,
            token,
            reqwest::Method::PUT,
            &path(room, &format!("/{}", enc(&hello))),
            Some(json!({"content": "not yours"})),
        )
        .await,
        403,
        "not_own_message",
    )
    .await;
    let e = expect_error(
        call(
            app,
            token,
            reqwest::Method::PUT,
            &path(room, &format!("/{}", enc(&mine))),
            Some(json!({"content": "  "})),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().starts_with("content:"),
        "{e}"
    );

    // Deletion for everyone: mine is redacted on Synapse; bob's refused.
    expect_error(
        call(
            app,
            token,
            reqwest::Method::DELETE,
            &path(room, &format!("/{}", enc(&hello))),
            None,
        )
        .await,
        403,
        "not_own_message",
    )
    .await;
    // What was announced so far is read first: the next room.updated is the deletion's.
    while sse
        .next(std::time::Duration::from_millis(300))
        .await
        .is_some()
    {}
    let del = expect_json(
        call(
            app,
            token,
            reqwest::Method::DELETE,
            &path(room, &format!("/{}", enc(&mine))),
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(del["redactedEventId"], mine.as_str());
    sse.wait_for("room.updated after the deletion", |e| {
        e.event == "room.updated" && e.data["roomId"] == room
    })
    .await;
    let redacted = bob.event(room, &mine).await;
    assert_eq!(redacted["content"], json!({}), "{redacted}");
    wait_message(app, token, room, "the deletion", |m| {
        m["eventId"] == mine.as_str() && m["text"] == ""
    })
    .await;
    expect_error(
        call(
            app,
            token,
            reqwest::Method::DELETE,
            &path(room, "/%24unknown%3Alocalhost"),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
}
