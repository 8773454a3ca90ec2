//! The mailbox's outgoing side and its borders: replies and forwards through SMTP, personal
//! tokens, other users' ids, trash and delete, and nothing readable at rest.

use super::World;
use reqwest::Method;
use serde_json::json;

use super::super::*;
use crate::common::*;

/// A reply: through SMTP with In-Reply-To, into Sent and into the thread.
pub(super) async fn a_reply(w: &World, sig_id: &str) {
    let World {
        app,
        tok,
        subject,
        m1,
        m3,
        tid,
        ids,
        ..
    } = w;
    // A reply: through SMTP with In-Reply-To, into Sent and into the thread.
    let resp = app
        .post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["Alice Example <alice@example.org>"], "subject": format!("Re: {subject}"),
                   "text": "Sounds good to me", "replyTo": ids[2], "signatureId": sig_id}),
        )
        .await;
    let sent = expect_json(resp, 201).await;
    assert_eq!(sent["threadId"], tid.as_str(), "the reply joins the thread");
    let delivered = wait_sink(|m| m.contains("Sounds good to me")).await;
    assert!(
        delivered.contains(&format!("In-Reply-To: <{m3}>")),
        "{delivered}"
    );
    assert!(
        delivered.contains(&format!("<{m1}>")),
        "References carry the thread: {delivered}"
    );
    assert!(
        delivered.contains("Box Owner, Example Ltd"),
        "the signature: {delivered}"
    );
    assert!(
        delivered.starts_with("X-Rcpt-To: alice@example.org"),
        "{delivered}"
    );
    let sent_box = w.server("Sent").await;
    assert_eq!(sent_box.len(), 1, "APPENDed to Sent: {sent_box:?}");
    let t = expect_json(
        app.get_auth(&format!("/api/email/threads/{tid}"), tok)
            .await,
        200,
    )
    .await;
    assert_eq!(t["messageCount"], 4);
    assert_eq!(t["labels"], json!(["INBOX", "Sent"]));
    assert_eq!(t["messageIds"][3], sent["id"]);
}

/// A forward carries the original; bad addresses are 400 naming the field; an SMTP refusal is 502.
pub(super) async fn a_forward_and_bad_addresses(w: &World) {
    let World { app, tok, .. } = w;
    // A forward carries the original; bad addresses are 400 naming the field; an SMTP
    // refusal is 502.
    let resp = app
        .post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["carol@example.org"], "subject": "Fwd: lunch", "text": "FYI", "forward": w.lunch_id()}),
        )
        .await;
    expect_json(resp, 201).await;
    let fwd = wait_sink(|m| m.contains("FYI")).await;
    assert!(
        fwd.contains("Menu attached") && fwd.contains("Forwarded message"),
        "{fwd}"
    );
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["bob@"], "subject": "x", "text": "y"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("to[0]"), "{e}");
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["a@example.org"], "cc": ["x y z"], "subject": "x", "text": "y"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("cc[0]"), "{e}");
    expect_error(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["reject-me@example.org"], "subject": "x", "text": "y"}),
        )
        .await,
        502,
        "mail_send_failed",
    )
    .await;
    expect_error(
        app.post_json("/api/email/compose", Some(tok), json!({"to": ["a@example.org"], "subject": "x", "text": "y", "replyTo": uuid::Uuid::new_v4().to_string()})).await,
        404,
        "not_found",
    )
    .await;
}

/// Personal tokens: list, read, thread actions, compose, labels, signatures.
pub(super) async fn personal_tokens(w: &World) {
    let World {
        app,
        user,
        subject,
        tid,
        ids,
        ..
    } = w;
    // Personal tokens: list, read, thread actions, compose, labels, signatures.
    let pat = personal_token(app, user).await;
    let via_pat = expect_json(app.get_auth("/api/email/threads", &pat).await, 200).await;
    assert!(find_thread(&via_pat, subject).is_some());
    expect_json(
        app.get_auth(&format!("/api/email/threads/{tid}"), &pat)
            .await,
        200,
    )
    .await;
    expect_json(
        app.get_auth(&format!("/api/email/messages/{}", ids[0]), &pat)
            .await,
        200,
    )
    .await;
    expect_json(act(app, &pat, tid, json!({"action": "read"})).await, 200).await;
    expect_json(app.get_auth("/api/email/labels", &pat).await, 200).await;
    expect_json(app.get_auth("/api/email/signatures", &pat).await, 200).await;
}

/// Another user's ids are 404 everywhere.
pub(super) async fn other_users_ids(w: &World, sig_id: &str) {
    let World {
        app, tok, tid, ids, ..
    } = w;
    // Another user's ids are 404 everywhere.
    let other = app.sign_up("mail-e2e-other").await;
    let ot = &other.access_token;
    expect_error(
        app.get_auth(&format!("/api/email/threads/{tid}"), ot).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth(&format!("/api/email/messages/{}", ids[0]), ot)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth(
            &format!("/api/email/messages/{}/attachments/0", w.lunch_id()),
            ot,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        act(app, ot, tid, json!({"action": "delete"})).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.send(
            Method::PUT,
            &format!("/api/email/signatures/{sig_id}"),
            Some(ot),
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.post_json(
            "/api/email/compose",
            Some(ot),
            json!({"to": ["a@example.org"], "subject": "x", "text": "y", "replyTo": ids[0]}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let empty = expect_json(app.get_auth("/api/email/threads", ot).await, 200).await;
    assert_eq!(empty["threads"], json!([]));
    expect_error(
        app.get_auth("/api/email/threads/not-a-uuid", tok).await,
        404,
        "not_found",
    )
    .await;
}

/// trash, then delete for good.
pub(super) async fn trash_then_delete(w: &World) {
    let World {
        app, tok, lunch_t, ..
    } = w;
    // trash, then delete for good.
    let lid = lunch_t["id"].as_str().unwrap();
    let t = expect_json(act(app, tok, lid, json!({"action": "trash"})).await, 200).await;
    assert_eq!(t["labels"], json!(["Trash"]));
    assert!(w
        .server("INBOX")
        .await
        .iter()
        .all(|m| !m.3.contains("lunch")));
    assert_eq!(w.server("Trash").await.len(), 1);
    let t = expect_json(act(app, tok, lid, json!({"action": "delete"})).await, 200).await;
    assert_eq!(t["messageIds"], json!([]));
    assert!(w.server("Trash").await.is_empty(), "expunged for good");
    expect_error(
        app.get_auth(&format!("/api/email/threads/{lid}"), tok)
            .await,
        404,
        "not_found",
    )
    .await;
}

/// Nothing readable at rest: not the subject, the text, nor the IMAP password.
pub(super) async fn nothing_readable_at_rest(w: &World) {
    let World {
        app, subject, m1, ..
    } = w;
    // Nothing readable at rest: not the subject, the text, nor the IMAP password.
    let mut bytes = std::fs::read(app.data_dir().join("switchboard.db")).unwrap();
    bytes.extend(std::fs::read(app.data_dir().join("switchboard.db-wal")).unwrap_or_default());
    let hay = String::from_utf8_lossy(&bytes);
    for secret in [
        subject.as_str(),
        "One more thing",
        "Sounds good to me",
        IMAP_PASSWORD,
        m1.as_str(),
        "Box Owner, Example Ltd",
    ] {
        assert!(!hay.contains(secret), "{secret:?} is stored in plaintext");
    }
}
