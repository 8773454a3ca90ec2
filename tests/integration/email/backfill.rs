//! Older e-mail on demand (issue #10) against the real Dovecot: the first sync caches only
//! `[email] first_sync_limit` messages per mailbox; paging `GET /api/email/threads` past
//! them fetches the next older batch, down to the mailbox's first mail, and pagers that
//! reach the end together trigger one fetch.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::dovecot::{self, add_user};
use crate::common::*;

const PASSWORD: &str = "imap-backfill-3Kp";
const SMALL_FIRST_SYNC: &str = "[email]\nfirst_sync_limit = 5\n";

/// `count` unrelated mails, the i-th sent at minute i (UID order = date order).
async fn fill_inbox(email: &str, run: &str, count: usize) -> Vec<String> {
    let mut subjects = Vec::new();
    for i in 0..count {
        let subject = format!("Old {i:02} {run}");
        let raw = format!(
            "From: Erin <erin@example.org>\nTo: {email}\nSubject: {subject}\n\
             Message-ID: <old.{i}.{run}@example.org>\nDate: Tue, 1 Jul 2025 10:{i:02}:00 +0000\n\
             Content-Type: text/plain; charset=utf-8\n\nNumber {i}\n"
        );
        dovecot::deliver(email, PASSWORD, "INBOX", &raw).await;
        subjects.push(subject);
    }
    subjects
}

/// Connects the mailbox and waits for the end of its first sync (`status: ok`).
async fn connect_synced(app: &TestApp, token: &str, email: &str) -> String {
    let body = json!({
        "email": email,
        "imap": {"host": "127.0.0.1", "port": dovecot::dovecot().port, "security": "none",
                 "username": email, "password": PASSWORD},
        "smtp": {"host": "127.0.0.1", "port": mail::smtp().port, "security": "none"},
    });
    let account = expect_json(
        app.post_json("/api/email/accounts", Some(token), body)
            .await,
        201,
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", token).await, 200).await;
        if l["accounts"][0]["status"] == "ok" {
            break;
        }
        assert!(Instant::now() < deadline, "never synced: {l}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    account["id"].as_str().unwrap().to_owned()
}

/// Cached messages in INBOX, as the label list counts them.
async fn inbox_total(app: &TestApp, token: &str) -> u64 {
    let labels = expect_json(app.get_auth("/api/email/labels", token).await, 200).await;
    labels["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == "INBOX")
        .and_then(|l| l["total"].as_u64())
        .unwrap_or_else(|| panic!("no INBOX label: {labels}"))
}

fn subjects(page: &Value) -> Vec<String> {
    page["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["subject"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn paging_past_the_cached_mail_fetches_older_mail_down_to_the_first() {
    let app = TestApp::start_with_mail_and(SMALL_FIRST_SYNC.into()).await;
    let user = app.sign_up("mail-backfill").await;
    let tok = user.access_token.clone();
    let email = add_user("backfill", PASSWORD);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let mut sent = fill_inbox(&email, &run, 13).await;
    connect_synced(&app, &tok, &email).await;
    assert_eq!(
        inbox_total(&app, &tok).await,
        5,
        "the first sync is bounded"
    );

    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..20 {
        let path = match &cursor {
            Some(c) => format!("/api/email/threads?label=INBOX&limit=4&cursor={c}"),
            None => "/api/email/threads?label=INBOX&limit=4".to_owned(),
        };
        let page = expect_json(app.get_auth(&path, &tok).await, 200).await;
        seen.extend(subjects(&page));
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    sent.reverse();
    assert_eq!(
        seen, sent,
        "every mail once, newest first, down to the first"
    );
    assert_eq!(inbox_total(&app, &tok).await, 13);
    // Nothing older is left: the end of the list stays the end.
    let last = expect_json(
        app.get_auth(
            &format!(
                "/api/email/threads?label=INBOX&limit=4&cursor={}",
                cursor.unwrap()
            ),
            &tok,
        )
        .await,
        200,
    )
    .await;
    assert!(last["nextCursor"].is_null(), "{last}");
}

#[tokio::test]
async fn pagers_reaching_the_end_together_trigger_one_fetch() {
    let app = TestApp::start_with_mail_and(SMALL_FIRST_SYNC.into()).await;
    let user = app.sign_up("mail-backfill-race").await;
    let tok = user.access_token.clone();
    let email = add_user("backfill-race", PASSWORD);
    let run = uuid::Uuid::new_v4().simple().to_string();
    fill_inbox(&email, &run, 16).await;
    connect_synced(&app, &tok, &email).await;
    assert_eq!(inbox_total(&app, &tok).await, 5);
    // The first page leaves one cached thread below its cursor.
    let first = expect_json(app.get_auth("/api/email/threads?limit=4", &tok).await, 200).await;
    let cursor = first["nextCursor"].as_str().unwrap().to_owned();

    // Four pagers (different limits: four different pages, none served from another's
    // rendering) reach the end of the cache at once.
    let page = |limit: u32| {
        let path = format!("/api/email/threads?limit={limit}&cursor={cursor}");
        let (app, tok) = (&app, &tok);
        async move { expect_json(app.get_auth(&path, tok).await, 200).await }
    };
    let (a, b, c, d) = tokio::join!(page(4), page(3), page(2), page(1));
    for (p, n) in [(&a, 4), (&b, 3), (&c, 2), (&d, 1)] {
        let s = subjects(p);
        assert_eq!(s.len(), n, "a full page after the back-fill: {p}");
        assert_eq!(s[0], format!("Old 11 {run}"), "{p}");
        assert!(p["nextCursor"].is_string(), "older mail remains: {p}");
    }
    assert_eq!(
        inbox_total(&app, &tok).await,
        10,
        "one batch of first_sync_limit fetched for all four pagers"
    );
}
