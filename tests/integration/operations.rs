//! What an operator of a public instance relies on (issue 21, DESIGN §17): keep-alive
//! connections that never close without a word, an access log without the users' words,
//! and `/metrics`.

use std::process::Command;

use crate::common::*;

/// Walks every operation of the document on ONE `requests.Session` (no retries), with no
/// token, a garbage token, a forged `alg: none` JWT, a native session and a personal token,
/// each with no body, a small and a 70 KB body; the rate limit is set so that the walk runs
/// into 429s too. Not one request may meet a silent close.
#[tokio::test]
async fn one_keep_alive_session_walks_every_operation_without_a_silent_close() {
    let app = TestApp::start_with_mail_and("\n[rate_limit]\nrequests = 2500\n".into()).await;
    let session = app.sign_up("walk").await;
    let token = personal_token(&app, &session).await;
    let base = app.base.clone();
    let jwt = session.access_token.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python())
            .arg(repo_root().join("tests/support/keepalive_walk.py"))
            .args([&base, "5000", &jwt, &token])
            .output()
            .expect("run keepalive_walk.py")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "walk printed no report: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(report["requests"].as_u64().unwrap() >= 5000, "{report}");
    assert_eq!(report["errors"], 0, "silent closes: {report}");
    // The walk reached handlers and early refusals alike.
    for status in ["200", "401", "429"] {
        assert!(
            report["statuses"][status].as_u64().unwrap_or(0) > 0,
            "no {status} in {report}"
        );
    }
    assert!(out.status.success(), "{report}");
}
