//! Hostile mail servers against the real binary (issue #21): a literal of 500 MB in the
//! greeting or a FETCH (the process's peak RSS read from /proc stays flat), servers that
//! accept and stay silent (every step has a deadline: connecting, sending, actions, the
//! sync worker), a server inventing UIDs on every listing (bounded by the caps and
//! the quota), and large mail whose structure is missing or unreadable (fetched whole).

mod server;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use server::Behaviour;

use crate::common::*;
use crate::email::connect_account;

fn account(imap_port: u16, imap_security: &str, smtp_port: u16) -> Value {
    json!({
        "email": unique_email("hostile"),
        "imap": {"host": "127.0.0.1", "port": imap_port, "security": imap_security,
                 "username": "u", "password": "p"},
        "smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none"},
    })
}

/// The peak resident memory of the process so far (KiB).
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// Polls the user's only account until `done` holds; returns it.
async fn wait_account(app: &TestApp, tok: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
        let a = l["accounts"][0].clone();
        if done(&a) {
            return a;
        }
        assert!(Instant::now() < deadline, "account never got there: {a}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_literal_of_500_mb_is_refused_without_growing_memory() {
    let app = TestApp::start_with_mail_and("[email]\nnetwork_timeout = \"3s\"\n".into()).await;
    let user = app.sign_up("hostile-literal").await;
    let tok = &user.access_token;
    let before = peak_rss_kib(app.pid());

    // In the greeting: connecting fails at once, naming the refusal.
    let greeting = server::imap(Behaviour::GreetingLiteral(500_000_000)).await;
    let started = Instant::now();
    let e = expect_error(
        app.post_json(
            "/api/email/accounts",
            Some(tok),
            account(greeting.port, "none", mail::smtp().port),
        )
        .await,
        400,
        "mail_login_failed",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "refused when announced"
    );
    assert!(e["message"].as_str().unwrap().contains("500000000"), "{e}");

    // In a FETCH of the first sync: the account connects, the sync fails and says why.
    let fetch = server::imap(Behaviour::FetchLiteral(500_000_000)).await;
    connect_account(&app, tok, account(fetch.port, "none", mail::smtp().port)).await;
    let a = wait_account(&app, tok, 30, |a| {
        a["error"].as_str().is_some_and(|e| e.contains("500000000"))
    })
    .await;
    assert_eq!(a["status"], "unreachable", "{a}");
    assert!(
        fetch
            .bodies_fetched
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1
    );

    let grown_mib = (peak_rss_kib(app.pid()).saturating_sub(before)) / 1024;
    assert!(grown_mib < 32, "peak RSS grew by {grown_mib} MiB");
    // The server goes on serving.
    expect_json(app.get_auth("/api/email/threads", tok).await, 200).await;
}

#[tokio::test]
async fn silent_servers_meet_the_deadline_everywhere() {
    let app = TestApp::start_with_mail_and(
        "[email]\nnetwork_timeout = \"2s\"\npoll_interval = \"1s\"\n".into(),
    )
    .await;
    let user = app.sign_up("hostile-silent").await;
    let tok = &user.access_token;
    let silent = server::silent().await;
    let honest = server::imap(Behaviour::InventUids { n: 1, size: 600 }).await;

    // Connecting: a silent IMAP server (plain and TLS) and a silent SMTP server.
    for (body, what) in [
        (account(silent, "none", mail::smtp().port), "IMAP greeting"),
        (
            account(silent, "tls", mail::smtp().port),
            "IMAP TLS handshake",
        ),
        (account(honest.port, "none", silent), "SMTP greeting"),
    ] {
        let started = Instant::now();
        let e = expect_error(
            app.post_json("/api/email/accounts", Some(tok), body).await,
            400,
            "mail_server_unreachable",
        )
        .await;
        let took = started.elapsed();
        assert!(took < Duration::from_secs(8), "{what}: {took:?}");
        assert!(
            e["message"].as_str().unwrap().contains("no answer")
                || e["message"].as_str().unwrap().contains("timed out"),
            "{what}: {e}"
        );
    }

    // Sending through an SMTP server that answered the connection check, then went quiet.
    let smtp = server::smtp_once_then_silent().await;
    let a = connect_account(&app, tok, account(honest.port, "none", smtp)).await;
    let started = Instant::now();
    expect_error(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"accountId": a["id"], "to": ["x@example.org"], "subject": "s", "text": "t"}),
        )
        .await,
        502,
        "mail_send_failed",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A thread action, and the sync worker, once the IMAP server stops answering.
    let deadline = Instant::now() + Duration::from_secs(30);
    let thread = loop {
        let l = expect_json(app.get_auth("/api/email/threads", tok).await, 200).await;
        if let Some(t) = l["threads"].as_array().and_then(|t| t.first()) {
            break t["id"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "no thread synced: {l}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    honest
        .silent
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    let resp = app
        .send(
            reqwest::Method::PUT,
            &format!("/api/email/threads/{thread}"),
            Some(tok),
            Some(json!({"action": "read"})),
        )
        .await;
    expect_error(resp, 503, "mail_unreachable").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let a = wait_account(&app, tok, 30, |a| a["status"] == "unreachable").await;
    assert!(a["error"].as_str().unwrap().contains("no answer"), "{a}");
}

async fn thread_count(app: &TestApp, tok: &str) -> usize {
    let l = expect_json(app.get_auth("/api/email/threads?limit=100", tok).await, 200).await;
    l["threads"].as_array().unwrap().len()
}

#[tokio::test]
async fn invented_uids_are_bounded_by_the_caps_and_the_quota() {
    let app = TestApp::start_with_mail_and(
        "[email]\npoll_interval = \"1s\"\nround_max_messages = 20\nmax_messages_per_account = 50\n"
            .into(),
    )
    .await;
    let user = app.sign_up("hostile-uids").await;
    let tok = &user.access_token;
    let flood = server::imap(Behaviour::InventUids { n: 30, size: 1500 }).await;
    connect_account(&app, tok, account(flood.port, "none", mail::smtp().port)).await;
    let a = wait_account(&app, tok, 60, |a| {
        a["error"]
            .as_str()
            .is_some_and(|e| e.contains("max_messages_per_account"))
    })
    .await;
    assert_eq!(a["status"], "ok", "{a}");
    assert_eq!(thread_count(&app, tok).await, 50);
    // The server keeps inventing; nothing more is cached.
    let listed = flood.next_uid.load(std::sync::atomic::Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(20);
    while flood.next_uid.load(std::sync::atomic::Ordering::SeqCst) < listed + 60 {
        assert!(Instant::now() < deadline, "no further rounds");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(thread_count(&app, tok).await, 50);

    // The user's quota: 1 MiB of 100 KB mails.
    let app =
        TestApp::start_with_mail_and("[email]\npoll_interval = \"1s\"\nquota_mb = 1\n".into())
            .await;
    let user = app.sign_up("hostile-quota").await;
    let tok = &user.access_token;
    let flood = server::imap(Behaviour::InventUids {
        n: 8,
        size: 100_000,
    })
    .await;
    connect_account(&app, tok, account(flood.port, "none", mail::smtp().port)).await;
    let a = wait_account(&app, tok, 60, |a| {
        a["error"].as_str().is_some_and(|e| e.contains("quota"))
    })
    .await;
    let (used, limit) = (
        a["quota"]["usedBytes"].as_u64().unwrap(),
        a["quota"]["limitBytes"].as_u64().unwrap(),
    );
    assert_eq!(limit, 1024 * 1024, "{a}");
    assert!(used > 800_000 && used <= limit, "{a}");
    let n = thread_count(&app, tok).await;
    assert!((8..=10).contains(&n), "{n} mails of 100 KB in 1 MiB");
}

#[tokio::test]
async fn a_large_mail_without_a_readable_structure_is_fetched_whole() {
    let app = TestApp::start_with_mail_and(
        "[email]\nlarge_message_kb = 1\nnetwork_timeout = \"3s\"\npoll_interval = \"1s\"\n".into(),
    )
    .await;
    for (behaviour, why) in [
        // Answered without BODYSTRUCTURE: fetched whole on the same connection.
        (Behaviour::NoStructure, "the server sent no structure"),
        // A structure the IMAP parser cannot read ends the connection (here at the
        // deadline): the next sync fetches the message whole.
        (Behaviour::BadStructure, "it is fetched whole next time"),
    ] {
        let user = app.sign_up("hostile-structure").await;
        let tok = &user.access_token;
        let imap = server::imap(behaviour).await;
        connect_account(&app, tok, account(imap.port, "none", mail::smtp().port)).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let l = loop {
            let l = expect_json(app.get_auth("/api/email/threads", tok).await, 200).await;
            if l["threads"].as_array().is_some_and(|t| !t.is_empty()) {
                break l;
            }
            assert!(
                Instant::now() < deadline,
                "{behaviour:?}: never cached: {l}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(l["threads"][0]["subject"], "invented 1", "{behaviour:?}");
        assert!(l["threads"][0]["snippet"]
            .as_str()
            .unwrap()
            .starts_with("xxx"));
        assert!(
            imap.bodies_fetched
                .load(std::sync::atomic::Ordering::SeqCst)
                >= 1,
            "{behaviour:?}: fetched whole"
        );
        let log = app.log();
        let said: Vec<&str> = log.lines().filter(|l| l.contains("large mail")).collect();
        assert!(
            log.contains(why),
            "{behaviour:?}: the log says why: {said:?}"
        );
        let a = wait_account(&app, tok, 30, |a| a["status"] == "ok").await;
        assert!(a["error"].is_null(), "{a}");
    }
}
