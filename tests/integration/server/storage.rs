//! What is stored: nothing sensitive in clear, and acknowledged writes survive `kill -9`.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn the_database_holds_no_email_token_code_or_matrix_token_in_clear() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("secret.keeper");
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": email}))
            .await,
        200,
    )
    .await;
    let code = mail::wait_for_code(&email, 0).await;
    let signed = expect_json(
        app.post_json(
            "/api/auth/verify",
            None,
            json!({"email": email, "code": code}),
        )
        .await,
        200,
    )
    .await;
    let refresh = signed["refreshToken"].as_str().unwrap();
    let access = signed["accessToken"].as_str().unwrap();
    let matrix = signed["matrixAccessToken"].as_str().unwrap();

    let bytes = database_bytes(&app);
    assert!(bytes.len() > 4096, "database files were read");
    let lower = email.to_lowercase();
    for (what, secret) in [
        ("e-mail", lower.as_str()),
        ("e-mail local part", lower.split('@').next().unwrap()),
        ("refresh token", refresh),
        ("access token", access),
        ("matrix access token", matrix),
        ("sign-in code", code.as_str()),
    ] {
        assert!(
            !contains(&bytes, secret),
            "{what} found in clear in the database files"
        );
    }
    // The user id (not secret) is there, proving the search looks at real rows.
    assert!(contains(&bytes, signed["user"]["id"].as_str().unwrap()));
}

#[tokio::test]
async fn an_acknowledged_write_survives_kill_9() {
    let mut app = TestApp::start_with_mail().await;
    let session = app.sign_up("durable").await;
    let profile = json!({"displayName": "Written Before The Crash"});
    app.user(&session).session().profile(profile).await.unwrap();
    app.restart_after_kill9().await;
    let me = app.user(&session).me().await.unwrap();
    assert_eq!(me["displayName"], "Written Before The Crash");
    // Tokens issued before the crash still work: the JWT key is derived from the master key.
    let refresh = app.anonymous().session();
    refresh.refresh(&session.refresh_token).await.unwrap();
}

#[test]
fn backup_and_restore_round_trip_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let data = data.to_str().unwrap();
    let (status, _, err) = run_cli(&["migrate", "--data-dir", data], dir.path());
    assert!(status.success(), "{err}");
    let backup = dir.path().join("copy.db");
    let (status, out, err) = run_cli(
        &["backup", backup.to_str().unwrap(), "--data-dir", data],
        dir.path(),
    );
    assert!(status.success(), "{err}");
    assert!(
        out.contains("master.key"),
        "the backup reminds about the key: {out}"
    );
    let (status, _, err) = run_cli(
        &["backup", backup.to_str().unwrap(), "--data-dir", data],
        dir.path(),
    );
    assert!(!status.success() && err.contains("already exists"), "{err}");
    let other = dir.path().join("restored");
    let (status, _, err) = run_cli(
        &[
            "restore",
            backup.to_str().unwrap(),
            "--data-dir",
            other.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(status.success(), "{err}");
    let (status, out, _) = run_cli(
        &["check-config", "--data-dir", other.to_str().unwrap()],
        dir.path(),
    );
    assert!(status.success());
    assert!(
        out.contains(&format!(
            "schema version {}",
            switchboard::store::SCHEMA_VERSION
        )),
        "{out}"
    );
}
