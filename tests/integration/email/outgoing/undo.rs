//! Undo send: a held message is cancelled (nothing reaches SMTP) or goes out exactly
//! once at its time, also across a restart.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use super::*;

async fn outbox(app: &TestApp, tok: &str, id: &str) -> Value {
    expect_json(
        app.get_auth(&format!("/api/email/outbox/{id}"), tok).await,
        200,
    )
    .await
}

async fn wait_status(app: &TestApp, tok: &str, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let o = outbox(app, tok, id).await;
        if o["status"] == status {
            return o;
        }
        assert!(Instant::now() < deadline, "never {status}: {o}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn cancel(app: &TestApp, tok: &str, id: &str) -> reqwest::Response {
    app.send(
        Method::DELETE,
        &format!("/api/email/outbox/{id}"),
        Some(tok),
        None,
    )
    .await
}

#[tokio::test]
async fn undo_cancels_and_a_held_mail_goes_out_once_across_a_restart() {
    let mut app = app().await;
    let (tok, _, _) = user_with_mailbox(&app, "undo").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let mail = |subject: &str, undo: u32| json!({"to": ["frank@example.org"], "subject": subject, "text": "held", "undoSeconds": undo});

    // Out of range.
    let e = expect_error(
        app.post_json("/api/email/compose", Some(&tok), mail("x", 61))
            .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().starts_with("undoSeconds"),
        "{e}"
    );

    // Held 2 s, undone at once: 204, and it never leaves.
    let undone = format!("Undone {run}");
    let held = expect_json(
        app.post_json("/api/email/compose", Some(&tok), mail(&undone, 2))
            .await,
        202,
    )
    .await;
    let id = held["outboxId"].as_str().unwrap().to_owned();
    assert!(held["sendAt"].is_string(), "{held}");
    assert_eq!(outbox(&app, &tok, &id).await["status"], "pending");
    assert_eq!(cancel(&app, &tok, &id).await.status(), 204);
    assert_eq!(
        cancel(&app, &tok, &id).await.status(),
        204,
        "a second undo changes nothing"
    );
    assert_eq!(outbox(&app, &tok, &id).await["status"], "cancelled");
    // Another user cannot see or cancel it; an unknown id is 404.
    let other = app.sign_up("undo-other").await;
    expect_error(
        app.get_auth(&format!("/api/email/outbox/{id}"), &other.access_token)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        cancel(&app, &other.access_token, &id).await,
        404,
        "not_found",
    )
    .await;

    // A marker held 3 s, sent after the undone one's time: once it is at the sink, the
    // undone one would be there too had it been sent.
    let marker = format!("Marker {run}");
    let m = expect_json(
        app.post_json("/api/email/compose", Some(&tok), mail(&marker, 3))
            .await,
        202,
    )
    .await;
    wait_sink(&marker).await;
    let sent = wait_status(&app, &tok, m["outboxId"].as_str().unwrap(), "sent").await;
    assert!(sent["error"].is_null(), "{sent}");
    assert!(sink_with(&undone).is_empty(), "an undone mail was sent");
    // After it went: 409 already_sent.
    expect_error(
        cancel(&app, &tok, m["outboxId"].as_str().unwrap()).await,
        409,
        "already_sent",
    )
    .await;

    // Held 4 s, then the server stops and starts again: it goes out once, after start.
    let survivor = format!("Survivor {run}");
    let h = expect_json(
        app.post_json("/api/email/compose", Some(&tok), mail(&survivor, 4))
            .await,
        202,
    )
    .await;
    let hid = h["outboxId"].as_str().unwrap().to_owned();
    let status = app.signal("TERM");
    assert!(status.success(), "{status:?}");
    assert!(sink_with(&survivor).is_empty(), "sent before its time");
    app.spawn().await;
    wait_status(&app, &tok, &hid, "sent").await;
    wait_sink(&survivor).await;
    // A later look still finds exactly one: the scheduler claimed it once.
    let later = format!("Later {run}");
    let l = expect_json(
        app.post_json("/api/email/compose", Some(&tok), mail(&later, 1))
            .await,
        202,
    )
    .await;
    wait_status(&app, &tok, l["outboxId"].as_str().unwrap(), "sent").await;
    assert_eq!(sink_with(&survivor).len(), 1, "sent exactly once");
}
