//! Labels of the mailbox: created, listed, added and removed as IMAP mailboxes; an action
//! on a mailbox another client deleted.

use super::super::*;
use super::World;
use crate::common::dovecot;
use crate::common::*;
use serde_json::json;

/// Labels: create, list, add, remove; unknown labels and actions refused.
pub(super) async fn labels(w: &World) {
    let World {
        app,
        tok,
        email,
        run,
        tid,
        ..
    } = w;
    // Labels: create, list, add, remove.
    let label = format!("Projects-{}", &run[..6]);
    let l = expect_json(
        app.post_json("/api/email/labels", Some(tok), json!({"name": label}))
            .await,
        201,
    )
    .await;
    assert_eq!(
        l,
        json!({"id": label, "name": label, "type": "user", "unread": 0, "total": 0})
    );
    expect_error(
        app.post_json("/api/email/labels", Some(tok), json!({"name": label}))
            .await,
        409,
        "label_exists",
    )
    .await;
    expect_error(
        app.post_json("/api/email/labels", Some(tok), json!({"name": "a*b"}))
            .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(dovecot::mailbox_names(email, IMAP_PASSWORD)
        .await
        .contains(&label));
    let t = expect_json(
        act(app, tok, tid, json!({"action": "addLabel", "label": label})).await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX", label]));
    let labeled = dovecot::list(email, IMAP_PASSWORD, &label).await;
    assert_eq!(labeled.len(), 3, "{labeled:?}");
    let labels = expect_json(app.get_auth("/api/email/labels", tok).await, 200).await;
    let get = |id: &str| {
        labels["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(get("INBOX")["type"], "system");
    assert_eq!(get("INBOX")["total"], 4);
    assert_eq!(get("Sent")["type"], "system");
    assert_eq!(get(&label)["type"], "user");
    assert_eq!(get(&label)["total"], 3);
    let t = expect_json(
        act(
            app,
            tok,
            tid,
            json!({"action": "removeLabel", "label": label}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX"]));
    assert!(dovecot::list(email, IMAP_PASSWORD, &label).await.is_empty());
    expect_error(
        act(
            app,
            tok,
            tid,
            json!({"action": "addLabel", "label": "Nope"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        act(app, tok, tid, json!({"action": "addLabel"})).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(
        act(app, tok, tid, json!({"action": "explode"}))
            .await
            .status(),
        400
    );
}

/// An action on a mailbox another client deleted: 502 with the server's words, or 404 once the cache knows.
pub(super) async fn an_action_the_server_refuses(w: &World) {
    let World {
        app,
        tok,
        email,
        run,
        tid,
        ..
    } = w;
    // An action the server refuses: the label's mailbox was deleted by another client.
    let gone = format!("Gone-{}", &run[..6]);
    expect_json(
        app.post_json("/api/email/labels", Some(tok), json!({"name": gone}))
            .await,
        201,
    )
    .await;
    dovecot::delete_mailbox(email, IMAP_PASSWORD, &gone).await;
    // Either the action reaches the server first (502 with its words), or a sync round
    // saw the deletion first and the label is gone from the cache (404): then it must be
    // gone from the label list too.
    let resp = act(app, tok, tid, json!({"action": "addLabel", "label": gone})).await;
    if resp.status() == 404 {
        expect_error(resp, 404, "not_found").await;
        let labels = expect_json(app.get_auth("/api/email/labels", tok).await, 200).await;
        assert!(
            !labels.to_string().contains(&gone),
            "404 only once the label left the cache: {labels}"
        );
    } else {
        let e = expect_error(resp, 502, "mail_action_failed").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("mailbox"),
            "the server's words: {e}"
        );
    }
}
