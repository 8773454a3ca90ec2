//! Drafts in the Drafts mailbox: `\Draft`, replaced on save with a stable id, another
//! client's draft listed, attachments kept, sending removes it, other users' ids 404.

use reqwest::Method;
use serde_json::{json, Value};

use super::*;
use crate::common::dovecot;

/// `(subject line, has \Draft)` of every message in Drafts, as another client sees them.
async fn drafts_on_server(email: &str) -> Vec<(String, bool)> {
    use async_imap::types::Flag;
    use futures_util::TryStreamExt;
    let mut s = dovecot::login(email, IMAP_PASSWORD).await;
    s.select("Drafts").await.expect("SELECT Drafts");
    let fetched: Vec<_> = s
        .fetch("1:*", "(FLAGS BODY.PEEK[HEADER])")
        .await
        .expect("FETCH")
        .try_collect()
        .await
        .expect("FETCH");
    let out = fetched
        .iter()
        .map(|f| {
            let subject = mail_parser::MessageParser::default()
                .parse(f.header().unwrap_or_default())
                .and_then(|m| m.subject().map(str::to_owned))
                .unwrap_or_default();
            (subject, f.flags().any(|fl| matches!(fl, Flag::Draft)))
        })
        .collect();
    let _ = s.logout().await;
    out
}

async fn list(app: &TestApp, tok: &str) -> Value {
    expect_json(app.get_auth("/api/email/drafts", tok).await, 200).await
}

#[tokio::test]
async fn drafts_live_in_the_drafts_mailbox_and_are_sent_from_there() {
    let app = app().await;
    let (tok, email, account) = user_with_mailbox(&app, "drafts").await;
    let run = uuid::Uuid::new_v4().simple().to_string();

    // Saved with a file: in Drafts with \Draft.
    let pdf = super::pdf(40 * 1024);
    let up = expect_json(
        upload(&app, &tok, "plan.pdf", "application/pdf", &pdf).await,
        201,
    )
    .await;
    let first = format!("Plan {run}");
    let created = expect_json(
        app.post_json(
            "/api/email/drafts",
            Some(&tok),
            json!({"to": ["Gina <gina@example.org>"], "bcc": ["boss@example.org"], "subject": first,
                   "text": "half written", "attachments": [up["uploadId"]]}),
        )
        .await,
        201,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(drafts_on_server(&email).await, vec![(first.clone(), true)]);

    // Replaced on save: one message in Drafts, the new subject, the same id, the file kept.
    let second = format!("Plan v2 {run}");
    let saved = expect_json(
        app.send(
            Method::PUT,
            &format!("/api/email/drafts/{id}"),
            Some(&tok),
            Some(
                json!({"to": ["Gina <gina@example.org>"], "bcc": ["boss@example.org"],
                        "subject": second, "text": "now complete"}),
            ),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(saved["id"], id.as_str(), "the id stays across saves");
    assert_eq!(drafts_on_server(&email).await, vec![(second.clone(), true)]);
    let d = expect_json(
        app.get_auth(&format!("/api/email/drafts/{id}"), &tok).await,
        200,
    )
    .await;
    assert_eq!(d["subject"], second.as_str());
    assert_eq!(d["text"].as_str().unwrap().trim(), "now complete");
    assert_eq!(d["to"], json!(["Gina <gina@example.org>"]));
    assert_eq!(
        d["bcc"],
        json!(["boss@example.org"]),
        "Bcc kept in the draft"
    );
    assert_eq!(d["accountId"], account["id"]);
    assert_eq!(d["attachments"][0]["filename"], "plan.pdf", "{d}");
    assert_eq!(d["attachments"][0]["size"], pdf.len());

    let (phone_id, theirs) =
        a_draft_from_another_client_is_listed(&app, &tok, &email, &run, &second).await;
    another_users_draft_id_is_404(&app, &email, &id).await;

    // Sent: the message carries the draft's file and Bcc recipient; the draft is gone.
    let sent = expect_json(
        app.post_json(
            &format!("/api/email/drafts/{id}/send"),
            Some(&tok),
            json!({}),
        )
        .await,
        201,
    )
    .await;
    assert!(sent["threadId"].is_string());
    let at_sink = wait_sink(&second).await;
    assert_eq!(files_of(&at_sink), vec![("plan.pdf".to_owned(), pdf)]);
    let head = String::from_utf8_lossy(&at_sink)
        .lines()
        .next()
        .unwrap_or_default()
        .to_lowercase();
    assert!(
        head.contains("gina@example.org") && head.contains("boss@example.org"),
        "{head}"
    );
    assert!(
        !String::from_utf8_lossy(&at_sink).contains("Bcc:"),
        "Bcc is not sent as a header"
    );
    assert_eq!(
        drafts_on_server(&email).await,
        vec![(theirs.clone(), false)]
    );
    expect_error(
        app.get_auth(&format!("/api/email/drafts/{id}"), &tok).await,
        404,
        "not_found",
    )
    .await;

    // The other client's draft: deleted here, gone there.
    assert_eq!(
        app.send(
            Method::DELETE,
            &format!("/api/email/drafts/{phone_id}"),
            Some(&tok),
            None
        )
        .await
        .status(),
        204
    );
    assert!(drafts_on_server(&email).await.is_empty());
    assert_eq!(list(&app, &tok).await["drafts"], json!([]));
}

/// A draft another client wrote is listed, under an id that stays the same; returns its id
/// and subject.
async fn a_draft_from_another_client_is_listed(
    app: &TestApp,
    tok: &str,
    email: &str,
    run: &str,
    second: &str,
) -> (String, String) {
    let theirs = format!("Phone draft {run}");
    dovecot::deliver(email, IMAP_PASSWORD, "Drafts",
        &format!("From: {email}\nTo: hal@example.org\nSubject: {theirs}\nDate: Thu, 3 Jul 2025 09:00:00 +0000\n\nwritten on the phone\n")).await;
    let l = list(app, tok).await;
    let subjects: Vec<&str> = l["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["subject"].as_str().unwrap())
        .collect();
    assert!(
        subjects.contains(&theirs.as_str()) && subjects.contains(&second),
        "{l}"
    );
    let phone = l["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["subject"] == theirs.as_str())
        .unwrap();
    assert_eq!(phone["to"], json!(["hal@example.org"]));
    let phone_id = phone["id"].as_str().unwrap().to_owned();
    assert_eq!(
        list(app, tok).await["drafts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["subject"] == theirs.as_str())
            .unwrap()["id"],
        phone_id.as_str(),
        "listed ids are stable"
    );
    (phone_id, theirs)
}

/// Another user's draft id is 404, for every route; the drafts stay untouched.
async fn another_users_draft_id_is_404(app: &TestApp, email: &str, id: &str) {
    let other = app.sign_up("drafts-other").await;
    let ot = other.access_token.as_str();
    expect_error(
        app.get_auth(&format!("/api/email/drafts/{id}"), ot).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.send(
            Method::PUT,
            &format!("/api/email/drafts/{id}"),
            Some(ot),
            Some(json!({"subject": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/email/drafts/{id}"),
            Some(ot),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.post_json(&format!("/api/email/drafts/{id}/send"), Some(ot), json!({}))
            .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(drafts_on_server(email).await.len(), 2, "untouched");
}

/// The web app's order: the draft is autosaved without files, the file is added by the
/// save right before sending, the send is held and undone. The reopened draft still has
/// the file (its Message-ID, header and text did not change, only the files), and sending
/// it again carries the file.
#[tokio::test]
async fn a_file_added_to_a_draft_stays_through_an_undone_send() {
    let app = app().await;
    let (tok, _, _) = user_with_mailbox(&app, "draftfile").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let subject = format!("Undo me {run}");
    let fields = json!({"to": ["undo@example.org"], "subject": subject, "text": "never sent"});
    let created = expect_json(
        app.post_json("/api/email/drafts", Some(&tok), fields.clone())
            .await,
        201,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let up = expect_json(
        upload(&app, &tok, "note.txt", "text/plain", b"hello file").await,
        201,
    )
    .await;
    let mut with_file = fields.clone();
    with_file["attachments"] = json!([up["uploadId"]]);
    expect_json(
        app.send(
            Method::PUT,
            &format!("/api/email/drafts/{id}"),
            Some(&tok),
            Some(with_file),
        )
        .await,
        200,
    )
    .await;
    let file = |d: &Value| {
        (
            d["attachments"][0]["filename"].clone(),
            d["attachments"][0]["size"].clone(),
        )
    };
    let want = (json!("note.txt"), json!(10));
    let d = expect_json(
        app.get_auth(&format!("/api/email/drafts/{id}"), &tok).await,
        200,
    )
    .await;
    assert_eq!(file(&d), want, "the saved draft lists its file: {d}");
    let held = expect_json(
        app.post_json(
            &format!("/api/email/drafts/{id}/send"),
            Some(&tok),
            json!({"undoSeconds": 30}),
        )
        .await,
        202,
    )
    .await;
    let outbox = held["outboxId"].as_str().unwrap();
    let undone = app
        .send(
            Method::DELETE,
            &format!("/api/email/outbox/{outbox}"),
            Some(&tok),
            None,
        )
        .await;
    assert_eq!(undone.status(), 204);
    let d = expect_json(
        app.get_auth(&format!("/api/email/drafts/{id}"), &tok).await,
        200,
    )
    .await;
    assert_eq!(file(&d), want, "reopened after the undo: {d}");
    let listed = list(&app, &tok).await;
    let row = listed["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(file(row), want, "listed with its file: {row}");
    // Sent for real now: the file goes with it.
    expect_json(
        app.post_json(
            &format!("/api/email/drafts/{id}/send"),
            Some(&tok),
            json!({}),
        )
        .await,
        201,
    )
    .await;
    let at_sink = wait_sink(&subject).await;
    assert_eq!(
        files_of(&at_sink),
        vec![("note.txt".to_owned(), b"hello file".to_vec())]
    );
}
