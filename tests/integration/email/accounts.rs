//! Connecting a mailbox: bad credentials, unreachable servers and malformed input are
//! refused with the field named; the first sync; personal tokens and other users.

use reqwest::Method;
use serde_json::{json, Value};

use super::*;
use crate::common::dovecot::{self, add_user};
use crate::common::*;

#[tokio::test]
async fn connecting_refuses_bad_credentials_unreachable_servers_and_malformed_input() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("mail-connect").await;
    let tok = &user.access_token;
    let email = add_user("connect", IMAP_PASSWORD);
    let port = dovecot::dovecot().port;
    let post = |body: Value| app.post_json("/api/email/accounts", Some(tok), body);

    let e = expect_error(
        post(account_body(&email, port, "wrong", "x")).await,
        400,
        "mail_login_failed",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("IMAP"), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("authentication failed"),
        "the server's words: {e}"
    );
    let e = expect_error(
        post(account_body(
            &email,
            port,
            IMAP_PASSWORD,
            "wrong-smtp-password",
        ))
        .await,
        400,
        "mail_login_failed",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("SMTP"), "{e}");
    expect_error(
        post(account_body(&email, free_port(), IMAP_PASSWORD, "x")).await,
        400,
        "mail_server_unreachable",
    )
    .await;
    let e = expect_error(
        post(account_body("not an address", port, IMAP_PASSWORD, "x")).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("email"), "{e}");
    let mut body = account_body(&email, port, IMAP_PASSWORD, "x");
    body["imap"]["host"] = json!("bad host");
    let e = expect_error(post(body).await, 400, "invalid_request").await;
    assert!(e["message"].as_str().unwrap().contains("imap.host"), "{e}");
    let mut body = account_body(&email, port, IMAP_PASSWORD, "x");
    body["smtp"]["security"] = json!("ssl");
    assert_eq!(post(body).await.status(), 400);
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(
        listed["accounts"],
        json!([]),
        "nothing stored after refusals"
    );

    let a = connect(&app, tok, &email).await;
    assert_eq!(a["email"], email.as_str());
    assert_eq!(a["displayName"], "Box Owner");
    assert!(a.get("password").is_none() && !a.to_string().contains(IMAP_PASSWORD));
    let id = a["id"].as_str().unwrap();
    // The first sync ends with status ok and lastSyncAt.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
        if l["accounts"][0]["status"] == "ok" {
            assert!(l["accounts"][0]["lastSyncAt"].is_string());
            break;
        }
        assert!(Instant::now() < deadline, "never synced: {l}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Personal tokens never reach the account routes.
    let pat = personal_token(&app, &user).await;
    expect_error(
        app.get_auth("/api/email/accounts", &pat).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.post_json(
            "/api/email/accounts",
            Some(&pat),
            account_body(&email, port, IMAP_PASSWORD, "x"),
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(&pat),
            None,
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    // Another user cannot remove it.
    let other = app.sign_up("mail-connect-other").await;
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(&other.access_token),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_json(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(tok),
            None,
        )
        .await,
        200,
    )
    .await;
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(listed["accounts"], json!([]));
}
