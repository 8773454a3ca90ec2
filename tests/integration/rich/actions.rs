//! Reactions, replies, edits and deletion for everyone in a plain room, both ways.

use reqwest::Method;
use serde_json::{json, Value};

use super::*;
use crate::sync::Sse;

fn path(room: &str, rest: &str) -> String {
    format!("/api/rooms/{}/messages{rest}", enc(room))
}

/// `method` on the room's messages path + `rest`, as the Switchboard user.
async fn call(p: &Plain, method: Method, rest: &str, body: Option<Value>) -> reqwest::Response {
    p.app
        .send(method, &path(&p.room, rest), Some(&p.token), body)
        .await
}

/// The call, expected to answer `status` with a JSON body.
async fn ok(p: &Plain, method: Method, rest: &str, body: Option<Value>, status: u16) -> Value {
    expect_json(call(p, method, rest, body).await, status).await
}

/// The call, expected to be refused with `status` and the error `code`.
async fn refused(
    p: &Plain,
    (method, rest, body): (Method, &str, Option<Value>),
    status: u16,
    code: &str,
) -> Value {
    expect_error(call(p, method, rest, body).await, status, code).await
}

fn reactions(m: &Value) -> Value {
    m["reactions"].clone()
}

fn react(key: &str) -> Option<Value> {
    Some(json!({"key": key}))
}

/// Waits until the message `event_id` carries exactly `expected` reactions.
async fn wait_reactions(p: &Plain, what: &str, event_id: &str, expected: Value) {
    wait_message(&p.app, &p.token, &p.room, what, |m| {
        m["eventId"] == event_id && reactions(m) == expected
    })
    .await;
}

async fn wait_room_updated(sse: &mut Sse, what: &str, room: &str) {
    sse.wait_for(what, |e| {
        e.event == "room.updated" && e.data["roomId"] == room
    })
    .await;
}

#[tokio::test]
async fn reactions_replies_edits_and_deletions_both_ways() {
    let p = plain("").await;
    let hello = p.bob.send_text(&p.room, "hello from bob").await;
    let mut sse = crate::sync::open_sse(&p.app, &p.token, None).await;
    reactions_both_ways(&p, &hello, &mut sse).await;
    let mine = replies_both_ways(&p, &hello).await;
    edits_of_own_messages_only(&p, &hello, &mine).await;
    deletion_for_everyone_of_own_messages_only(&p, &hello, &mine, &mut sse).await;
}

/// Bob's reaction shows; mine is sent once per key, announced, refused for bad keys and
/// targets, and both are removed again (mine through the API, bob's on Synapse).
async fn reactions_both_ways(p: &Plain, hello: &str, sse: &mut Sse) {
    let (room, bob) = (p.room.as_str(), &p.bob);
    let bob_reaction = bob
        .send(
            room,
            "m.reaction",
            json!({"m.relates_to": {"rel_type": "m.annotation",
            "event_id": hello, "key": "👍"}}),
        )
        .await;
    // Synapse → Switchboard: bob's reaction shows.
    let bobs_only = json!([{"key": "👍", "count": 1, "mine": false}]);
    wait_reactions(p, "bob's reaction", hello, bobs_only.clone()).await;

    // Switchboard → Synapse: the same key (once per key). Announced on /api/sync.
    let reactions_path = format!("/{}/reactions", enc(hello));
    let r = ok(p, Method::POST, &reactions_path, react("👍"), 201).await;
    assert_eq!(r["duplicate"], false, "{r}");
    wait_room_updated(sse, "room.updated after the reaction", room).await;
    let my_reaction = r["eventId"].as_str().unwrap().to_owned();
    let again = ok(p, Method::POST, &reactions_path, react("👍"), 201).await;
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
    let both = json!([{"key": "👍", "count": 2, "mine": true}]);
    wait_reactions(p, "both reactions", hello, both).await;

    // Bad keys and targets.
    let long = "a".repeat(65);
    let post_long = (Method::POST, reactions_path.as_str(), react(&long));
    let e = refused(p, post_long, 400, "invalid_request").await;
    assert!(e["message"].as_str().unwrap().starts_with("key:"), "{e}");
    let unknown = (
        Method::POST,
        "/%24unknown%3Alocalhost/reactions",
        react("x"),
    );
    refused(p, unknown, 404, "not_found").await;

    // Removal: mine through the API, bob's on Synapse.
    let mine_path = format!("/{}/reactions/{}", enc(hello), enc("👍"));
    ok(p, Method::DELETE, &mine_path, None, 200).await;
    let gone = bob.event(room, &my_reaction).await;
    assert!(gone["unsigned"]["redacted_because"].is_object(), "{gone}");
    assert_eq!(gone["content"], json!({}), "{gone}");
    wait_reactions(p, "my reaction removed", hello, bobs_only).await;
    refused(p, (Method::DELETE, &mine_path, None), 404, "not_found").await;
    bob.redact(room, &bob_reaction).await;
    wait_reactions(p, "bob's reaction removed", hello, json!([])).await;
}

/// My reply reaches Synapse as one, bob's shows as one; a reply to an unknown event is
/// refused. Returns my reply's event id.
async fn replies_both_ways(p: &Plain, hello: &str) -> String {
    let (room, bob) = (p.room.as_str(), &p.bob);
    let body = json!({"content": "hi bob", "txnId": "rep-1", "replyTo": hello});
    let sent = ok(p, Method::POST, "", Some(body), 200).await;
    let mine = sent["eventId"].as_str().unwrap().to_owned();
    let seen = bob.event(room, &mine).await;
    assert_eq!(
        seen["content"]["m.relates_to"]["m.in_reply_to"]["event_id"], hello,
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
    let m = wait_event_id(&p.app, &p.token, room, &bobs_reply).await;
    assert_eq!(m["replyTo"], mine.as_str(), "{m}");
    let body = json!({"content": "x", "txnId": "rep-2", "replyTo": "$nope:localhost"});
    let e = refused(p, (Method::POST, "", Some(body)), 400, "invalid_request").await;
    assert!(
        e["message"].as_str().unwrap().starts_with("replyTo:"),
        "{e}"
    );
    mine
}

/// Edits: mine, seen on Synapse and in the history; others' refused; empty refused.
async fn edits_of_own_messages_only(p: &Plain, hello: &str, mine: &str) {
    let mine_path = format!("/{}", enc(mine));
    let body = json!({"content": "hi bob (edited)"});
    let edited = ok(p, Method::PUT, &mine_path, Some(body), 200).await;
    let edit_ev = p
        .bob
        .event(&p.room, edited["eventId"].as_str().unwrap())
        .await;
    assert_eq!(
        edit_ev["content"]["m.new_content"]["body"], "hi bob (edited)",
        "{edit_ev}"
    );
    assert_eq!(
        edit_ev["content"]["m.relates_to"],
        json!({"rel_type": "m.replace", "event_id": mine})
    );
    let m = wait_message(&p.app, &p.token, &p.room, "the edit", |m| {
        m["eventId"] == mine && m["text"] == "hi bob (edited)"
    })
    .await;
    assert!(m["editedAt"].as_i64().is_some_and(|t| t > 0), "{m}");
    let others = format!("/{}", enc(hello));
    let body = Some(json!({"content": "not yours"}));
    refused(p, (Method::PUT, &others, body), 403, "not_own_message").await;
    let body = Some(json!({"content": "  "}));
    let e = refused(p, (Method::PUT, &mine_path, body), 400, "invalid_request").await;
    assert!(
        e["message"].as_str().unwrap().starts_with("content:"),
        "{e}"
    );
}

/// Deletion for everyone: mine is redacted on Synapse and announced; bob's refused.
async fn deletion_for_everyone_of_own_messages_only(
    p: &Plain,
    hello: &str,
    mine: &str,
    sse: &mut Sse,
) {
    let others = format!("/{}", enc(hello));
    refused(p, (Method::DELETE, &others, None), 403, "not_own_message").await;
    // What was announced so far is read first: the next room.updated is the deletion's.
    while sse
        .next(std::time::Duration::from_millis(300))
        .await
        .is_some()
    {}
    let del = ok(p, Method::DELETE, &format!("/{}", enc(mine)), None, 200).await;
    assert_eq!(del["redactedEventId"], mine);
    wait_room_updated(sse, "room.updated after the deletion", &p.room).await;
    let redacted = p.bob.event(&p.room, mine).await;
    assert_eq!(redacted["content"], json!({}), "{redacted}");
    wait_message(&p.app, &p.token, &p.room, "the deletion", |m| {
        m["eventId"] == mine && m["text"] == ""
    })
    .await;
    let unknown = (Method::DELETE, "/%24unknown%3Alocalhost", None);
    refused(p, unknown, 404, "not_found").await;
}
