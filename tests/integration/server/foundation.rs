//! Health, OpenAPI document, auth gate, rate limits and shutdown of the running binary.

use std::time::{Duration, Instant};

use crate::common::*;

#[tokio::test]
async fn health_is_ok_with_the_real_homeserver() {
    let app = TestApp::start().await;
    let resp = app.get("/health").await;
    assert_rate_headers(&resp);
    let body = expect_json(resp, 200).await;
    assert_eq!(body["status"], "ok");
    assert_eq!(body["checks"]["matrix"]["status"], "ok");
    assert!(body["checks"]["matrix"]["latencyMs"].as_u64().is_some());
    assert_eq!(body["checks"]["database"]["status"], "ok");
    assert_eq!(body["checks"]["cache"]["status"], "ok");
    assert_eq!(body["checks"]["ai"]["status"], "disabled");
    assert!(body["version"].as_str().is_some());
}

#[tokio::test]
async fn health_is_503_when_the_homeserver_is_unreachable() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Unreachable,
        ..TestConfig::default()
    })
    .await;
    let started = Instant::now();
    let body = expect_json(app.get("/health").await, 503).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "health check must be bounded"
    );
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["matrix"]["status"], "down");
    assert!(body["checks"]["matrix"]["error"].as_str().is_some());
    assert_eq!(body["checks"]["database"]["status"], "ok");
}

#[tokio::test]
async fn health_is_503_with_the_homeserver_not_configured() {
    let app = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        ..TestConfig::default()
    })
    .await;
    let body = expect_json(app.get("/health").await, 503).await;
    assert_eq!(body["checks"]["matrix"]["status"], "not_configured");
    assert_eq!(body["checks"]["database"]["status"], "ok");
}

#[tokio::test]
async fn health_reports_a_configured_ai_service_that_is_down() {
    let app = TestApp::start_with(TestConfig {
        extra: format!(
            "[ai]\nurl = \"http://127.0.0.1:{}/v1\"\nmodel = \"m\"\n",
            free_port()
        ),
        ..TestConfig::default()
    })
    .await;
    let body = expect_json(app.get("/health").await, 503).await;
    assert_eq!(body["checks"]["ai"]["status"], "down");
    assert_eq!(body["checks"]["matrix"]["status"], "ok");
}

#[tokio::test]
async fn the_openapi_document_is_valid_openapi_31_version_2() {
    let app = TestApp::start().await;
    let resp = app.get("/openapi.yaml").await;
    assert_rate_headers(&resp);
    assert_eq!(resp.status(), 200);
    let yaml = resp.text().await.unwrap();
    let doc: serde_json::Value = serde_yaml::from_str(&yaml).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "2.0.0");
    let file = app.dir.path().join("openapi.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let out = std::process::Command::new(python())
        .arg(repo_root().join("scripts/validate-openapi.py"))
        .arg(&file)
        .output()
        .expect("run the validator");
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn protected_routes_answer_401_and_unknown_ones_404_json_with_rate_headers() {
    let app = TestApp::start().await;
    for path in ["/api/rooms", "/api/auth/me", "/api/keys/info"] {
        let resp = app.get(path).await;
        expect_error(resp, 401, "unauthorized").await;
    }
    // No operation there: 404 JSON for anyone (`/` is the web app, tests/integration/webapp).
    let resp = app.get("/api/no-such-route").await;
    expect_error(resp, 404, "not_found").await;
    let resp = app.get_auth("/api/rooms", "not-a-valid-token").await;
    expect_error(resp, 401, "unauthorized").await;
    let resp = app
        .get_auth(
            "/api/rooms",
            "csk_000000000000000000000000000000000000000000000000",
        )
        .await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_wrong_method_on_a_public_route_is_a_json_405() {
    let app = TestApp::start().await;
    let resp = app.send(reqwest::Method::POST, "/health", None, None).await;
    expect_error(resp, 405, "method_not_allowed").await;
}

#[tokio::test]
async fn the_general_rate_limit_answers_429_with_retry_after() {
    let app = TestApp::start_with(TestConfig {
        extra: "[rate_limit]\nrequests = 3\nwindow = \"60s\"\n".into(),
        ..TestConfig::default()
    })
    .await;
    // The harness polled during startup, so count down from wherever the window stands.
    let mut last: Option<u64> = None;
    loop {
        let resp = app.get("/api/rooms").await;
        if resp.status() == 429 {
            assert_eq!(last, Some(0), "429 only once the budget is spent");
            break;
        }
        assert_eq!(resp.status(), 401);
        let remaining: u64 = resp.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        if let Some(prev) = last {
            assert_eq!(remaining + 1, prev, "each request costs one");
        }
        last = Some(remaining);
    }
    let resp = app.get("/health").await;
    assert_eq!(resp.headers()["x-ratelimit-limit"], "3");
    let retry_after: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after));
    let reset: u64 = resp.headers()["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        reset > now && reset <= now + 61,
        "reset is a Unix time within the window"
    );
    expect_error(resp, 429, "rate_limited").await;
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let app = TestApp::start().await;
    let big = "x".repeat(3 * 1024 * 1024);
    let resp = app
        .http
        .post(app.url("/api/auth/code"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    expect_error(resp, 413, "payload_too_large").await;
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let mut app = TestApp::start().await;
    assert_eq!(app.get("/health").await.status(), 200);
    let started = Instant::now();
    let status = app.signal("TERM");
    assert!(status.success(), "exit status {status}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(app.log().contains("shutdown signal received"));
}

#[tokio::test]
async fn the_data_directory_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::start().await;
    let dir = app.data_dir();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for file in [
        "master.key",
        "server_x25519.key",
        "server_ed25519.key",
        "switchboard.db",
    ] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
}

#[tokio::test]
async fn tls_is_served_when_a_certificate_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    let out = std::process::Command::new(python())
        .arg(repo_root().join("tests/support/self_signed.py"))
        .args([&cert, &key])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = free_port();
    let data = dir.path().join("data");
    let config = dir.path().join("tls.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:{port}\"\ntls_cert = \"{}\"\ntls_key = \"{}\"\n[storage]\ndata_dir = \"{}\"\n",
            cert.display(),
            key.display(),
            data.display()
        ),
    )
    .unwrap();
    let mut child = std::process::Command::new(binary())
        .args(["serve", "--config", config.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pem = std::fs::read(&cert).unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap();
    let url = format!("https://localhost:{port}/openapi.yaml");
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(resp) = client.get(&url).send().await {
            answered = Some(resp.status().as_u16());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(
        answered,
        Some(200),
        "HTTPS request with the configured certificate"
    );
}

#[tokio::test]
async fn email_routes_are_behind_auth_and_none_answers_501() {
    let app = TestApp::start_with_mail().await;
    expect_error(app.get("/api/email/threads").await, 401, "unauthorized").await;
    let session = app.sign_up("mailer").await;
    let token = app.user(&session).tokens().create_named("mail").await.token;
    for (method, path) in [
        (reqwest::Method::GET, "/api/email/threads"),
        (reqwest::Method::PUT, "/api/email/threads/t1"),
        (reqwest::Method::GET, "/api/email/messages/m1"),
        (reqwest::Method::POST, "/api/email/compose"),
        (reqwest::Method::GET, "/api/email/labels"),
        (reqwest::Method::POST, "/api/email/labels"),
        (reqwest::Method::GET, "/api/email/signatures"),
        (reqwest::Method::POST, "/api/email/signatures"),
        (reqwest::Method::GET, "/api/email/accounts"),
    ] {
        for bearer in [&session.access_token, &token] {
            let resp = app.send(method.clone(), path, Some(bearer), None).await;
            let status = resp.status().as_u16();
            assert!(
                (200..500).contains(&status) && status != 401,
                "{method} {path}: {status}"
            );
        }
    }
}

/// poem-openapi would read `5` or `true` sent for a string field as the text "5"/"true";
/// the service refuses them with a 400 naming the field (see `api::strict_json`).
#[tokio::test]
async fn numbers_or_booleans_for_string_fields_are_400_naming_the_field() {
    let app = TestApp::start_with_mail().await;
    let body = expect_error(
        app.post_json("/api/auth/code", None, serde_json::json!({"email": 12345}))
            .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("email: must be a string"),
        "{body}"
    );

    let session = app.sign_up("strict").await;
    let token = Some(session.access_token.as_str());
    for (method, path, sent, field) in [
        (
            reqwest::Method::PATCH,
            "/api/auth/profile",
            serde_json::json!({"displayName": 42}),
            "displayName: must be a string",
        ),
        (
            reqwest::Method::POST,
            "/api/messages/send-multi",
            serde_json::json!({"roomIds": ["!a:localhost", true], "body": "hi"}),
            "roomIds: must be an array of strings",
        ),
        (
            reqwest::Method::POST,
            "/api/developer/tokens",
            serde_json::json!({"name": false}),
            "name: must be a string",
        ),
    ] {
        let body = expect_error(
            app.send(method, path, token, Some(sent)).await,
            400,
            "invalid_request",
        )
        .await;
        assert!(
            body["message"].as_str().unwrap().contains(field),
            "{path}: {body}"
        );
    }
    // The same fields as strings are accepted.
    let resp = app
        .send(
            reqwest::Method::PATCH,
            "/api/auth/profile",
            token,
            Some(serde_json::json!({"displayName": "42"})),
        )
        .await;
    expect_json(resp, 200).await;
    let me = expect_json(
        app.get_auth("/api/auth/me", &session.access_token).await,
        200,
    )
    .await;
    assert_eq!(me["displayName"], "42");
}
