//! Error bodies name a failing dependency, never its internal address.

use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn health_and_503_bodies_do_not_show_the_homeserver_address() {
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: format!(
            "[matrix]\nhomeserver_url = \"http://{address}/internal-hs\"\nserver_name = \"localhost\"\n\
             registration_shared_secret = \"x\"\n\n{}",
            mail::smtp_config()
        ),
    })
    .await;

    let health = expect_json(app.get("/health").await, 503).await;
    assert_eq!(health["checks"]["matrix"]["status"], "down");
    let error = health["checks"]["matrix"]["error"].as_str().unwrap();
    assert!(
        error.contains("homeserver"),
        "names the dependency: {error}"
    );
    let text = health.to_string();
    assert!(
        !text.contains(&port.to_string()) && !text.contains("internal-hs"),
        "/health shows the homeserver address: {text}"
    );

    // Sign-in needs the homeserver to create the Matrix account: 503.
    let email = unique_email("upstream");
    let before = mail::messages_to(&email).len();
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": email}))
            .await,
        200,
    )
    .await;
    let code = mail::wait_for_code(&email, before).await;
    let resp = app
        .post_json(
            "/api/auth/verify",
            None,
            json!({"email": email, "code": code}),
        )
        .await;
    let body = expect_error(resp, 503, "homeserver_unavailable").await;
    let text = body.to_string();
    assert!(text.contains("homeserver"), "{text}");
    assert!(
        !text.contains(&port.to_string()) && !text.contains("internal-hs"),
        "the 503 body shows the homeserver address: {text}"
    );
    // The operator still gets the detail, in the log.
    assert!(
        app.log().contains(&address),
        "the log names the unreachable address"
    );
}
