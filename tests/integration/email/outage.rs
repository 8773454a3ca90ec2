//! A mail server outage keeps cached mail readable (actions answer 503, never 500), and
//! deleting the keys drops the accounts and their cached mail.

use serde_json::json;

use super::*;
use crate::common::dovecot;
use crate::common::*;

#[tokio::test]
async fn an_outage_keeps_cached_mail_readable_and_key_deletion_drops_the_accounts() {
    // A Dovecot of this test's own, so it can be stopped.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let script = repo_root().join("scripts/dovecot.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(dir.path())
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stop = || {
        let _ = std::process::Command::new("bash")
            .arg(&script)
            .arg("--stop")
            .arg(dir.path())
            .output();
    };
    let email = unique_email("outage");
    let added = std::process::Command::new("bash")
        .arg(&script)
        .arg("--add-user")
        .arg(dir.path())
        .arg(&email)
        .arg(IMAP_PASSWORD)
        .output()
        .unwrap();
    assert!(added.status.success());
    let mut ep = dovecot::endpoint(&email, IMAP_PASSWORD);
    ep.port = port;
    let mut s =
        switchboard::clients::mail::imap::connect(&ep, &dovecot::harness_config(), "test-harness")
            .await
            .unwrap();
    let raw = thread_mail(
        "outage.1@example.org",
        None,
        "",
        "Before the outage",
        "Still here",
    )
    .replace('\n', "\r\n");
    switchboard::clients::mail::imap::append(&mut s, "INBOX", "()", raw.as_bytes())
        .await
        .unwrap();
    switchboard::clients::mail::imap::logout(s).await;

    let app = TestApp::start_with_mail().await;
    // With a registered key, so that DELETE /api/keys can run.
    let key = {
        use base64::Engine;
        let mut b = uuid::Uuid::new_v4().as_bytes().to_vec();
        b.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let user = app.sign_in(&unique_email("mail-outage"), Some(&key)).await;
    let tok = user.access_token.clone();
    let resp = app
        .post_json(
            "/api/email/accounts",
            Some(&tok),
            account_body(&email, port, IMAP_PASSWORD, "x"),
        )
        .await;
    let account = expect_json(resp, 201).await;
    let list = wait_threads(&app, &tok, "", |b| {
        b["threads"].as_array().is_some_and(|t| t.len() == 1)
    })
    .await;
    let tid = list["threads"][0]["id"].as_str().unwrap().to_owned();
    let mid = list["threads"][0]["messageIds"][0]
        .as_str()
        .unwrap()
        .to_owned();

    stop();
    // The sync task notices and says so; the cache stays readable.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", &tok).await, 200).await;
        if l["accounts"][0]["status"] == "unreachable" {
            assert!(l["accounts"][0]["error"].is_string(), "{l}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "status never became unreachable: {l}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let l = expect_json(app.get_auth("/api/email/threads", &tok).await, 200).await;
    assert_eq!(l["threads"][0]["subject"], "Before the outage");
    let m = expect_json(
        app.get_auth(&format!("/api/email/messages/{mid}"), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(m["text"].as_str().unwrap().trim(), "Still here");
    // Actions need the server: 503, never 500.
    expect_error(
        act(&app, &tok, &tid, json!({"action": "read"})).await,
        503,
        "mail_unreachable",
    )
    .await;

    // DELETE /api/keys drops the accounts and their cached mail with the old data key.
    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(&tok)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    for table in [
        "email_accounts",
        "email_mailboxes",
        "email_messages",
        "email_threads",
        "email_locations",
        "email_thread_refs",
    ] {
        let n: i64 = db
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{table} still has rows after DELETE /api/keys");
    }
    let _ = account;
}
