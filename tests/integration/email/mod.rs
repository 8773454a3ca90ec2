//! E-mail (issue #10) against a real Dovecot (scripts/dovecot.sh) and the run's SMTP sink.
//! Test mail is delivered by IMAP APPEND, never written into the cache. One file per topic:
//! connecting an account ([`accounts`]), one mailbox lived in from sync to sealing at rest
//! ([`mailbox`]), an outage and key deletion ([`outage`]), paging into older mail
//! ([`backfill`]), label names at rest ([`names`]), other users' ids and hostile input
//! ([`safety`]), hostile servers ([`hostile`]), large mail read from its structure
//! ([`large`]), outgoing mail ([`outgoing`]) and search ([`search`]).

mod accounts;
mod backfill;
mod hostile;
mod large;
mod mailbox;
mod names;
mod outage;
mod outgoing;
mod safety;
mod search;

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::dovecot;
use crate::common::*;

pub(crate) const IMAP_PASSWORD: &str = "imap-secret-7Qx";

pub(super) fn account_body(
    email: &str,
    imap_port: u16,
    imap_password: &str,
    smtp_password: &str,
) -> Value {
    json!({
        "email": email,
        "displayName": "Box Owner",
        "imap": {"host": "127.0.0.1", "port": imap_port, "security": "none",
                 "username": email, "password": imap_password},
        "smtp": {"host": "127.0.0.1", "port": mail::smtp().port, "security": "none",
                 "username": email, "password": smtp_password},
    })
}

pub(super) fn thread_mail(
    mid: &str,
    reply_to: Option<&str>,
    refs: &str,
    subject: &str,
    text: &str,
) -> String {
    // One minute apart per reply level, so the thread's order is the conversation's.
    let minute = refs.matches('<').count();
    let mut m = format!(
        "From: Alice Example <alice@example.org>\nTo: Box Owner <box@example.test>\n\
         Subject: {subject}\nMessage-ID: <{mid}>\nDate: Tue, 1 Jul 2025 10:{minute:02}:00 +0000\n"
    );
    if let Some(r) = reply_to {
        m.push_str(&format!("In-Reply-To: <{r}>\nReferences: {refs}\n"));
    }
    m.push_str(&format!(
        "Content-Type: text/plain; charset=utf-8\n\n{text}\n"
    ));
    m
}

/// Polls `GET /api/email/threads` until `pred` holds.
pub(super) async fn wait_threads(
    app: &TestApp,
    token: &str,
    query: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = expect_json(
            app.get_auth(&format!("/api/email/threads{query}"), token)
                .await,
            200,
        )
        .await;
        if pred(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "threads never matched: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(super) fn find_thread<'a>(list: &'a Value, subject: &str) -> Option<&'a Value> {
    list["threads"]
        .as_array()?
        .iter()
        .find(|t| t["subject"] == subject)
}

pub(super) async fn act(
    app: &TestApp,
    token: &str,
    thread: &str,
    body: Value,
) -> reqwest::Response {
    app.send(
        Method::PUT,
        &format!("/api/email/threads/{thread}"),
        Some(token),
        Some(body),
    )
    .await
}

pub(super) async fn connect(app: &TestApp, token: &str, email: &str) -> Value {
    let body = account_body(email, dovecot::dovecot().port, IMAP_PASSWORD, "smtp-pass");
    connect_account(app, token, body).await
}

/// Connects the Dovecot mailbox `email` (IMAP password `imap_password`, no display name)
/// to the caller: the account as answered (201).
pub(crate) async fn connect_mailbox(
    app: &TestApp,
    token: &str,
    email: &str,
    imap_password: &str,
) -> Value {
    let mut body = account_body(email, dovecot::dovecot().port, imap_password, "smtp-pass");
    body.as_object_mut().unwrap().remove("displayName");
    connect_account(app, token, body).await
}

pub(super) async fn connect_account(app: &TestApp, token: &str, body: Value) -> Value {
    let resp = app
        .post_json("/api/email/accounts", Some(token), body)
        .await;
    expect_json(resp, 201).await
}

/// Waits for a message in the SMTP sink matching `pred`; returns it.
pub(super) async fn wait_sink(pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(dir) = std::fs::read_dir(&mail::smtp().maildir) {
            for e in dir.filter_map(Result::ok) {
                if let Ok(text) = std::fs::read_to_string(e.path()) {
                    if pred(&text) {
                        return text;
                    }
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no such message in the SMTP sink"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
