//! What an operator of a public instance relies on (issue 21; docs/operations.md): keep-alive
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
    // Low enough that the walk meets 429s however slow the machine (a slow walk spreads
    // its 5,000 requests over several windows), high enough that every kind of caller
    // reaches handlers first.
    let app = TestApp::start_with_mail_and("\n[rate_limit]\nrequests = 500\n".into()).await;
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

/// Waits until the server log has a line containing every one of `parts`; returns the log.
async fn log_with(app: &TestApp, parts: &[&str]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = app.log();
        if log.lines().any(|l| parts.iter().all(|p| l.contains(p))) {
            return log;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no log line with {parts:?}:\n{log}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Requests that carry a search word in the query and an id in the path.
async fn private_traffic(app: &TestApp, bearer: &str, word: &str, room: &str) {
    let resp = app.get_auth(&format!("/api/search?q={word}"), bearer).await;
    assert!(resp.status().is_success(), "{}", resp.status());
    let resp = app
        .get_auth(&format!("/api/email/threads?q={word}"), bearer)
        .await;
    assert!(resp.status().as_u16() < 500, "{}", resp.status());
    let resp = app.get_auth(&format!("/api/rooms/{room}"), bearer).await;
    assert_eq!(resp.status(), 404);
    let resp = app.get_auth(&format!("/api/no/such/{word}"), bearer).await;
    assert_eq!(resp.status(), 404);
    // Outside /api an unknown path is one of the web app's own routes (its index.html).
    let resp = app.get_auth(&format!("/no/such/{word}"), bearer).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn search_words_and_ids_never_reach_the_access_log() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("quiet").await;
    let word = format!("zanzibarword{}", std::process::id());
    let room = format!("!roomsecret{}:localhost", std::process::id());
    private_traffic(&app, &session.access_token, &word, &room).await;
    // The positive markers: each request's access line, with its template.
    let log = log_with(
        &app,
        &["switchboard::access", "route=\"/api/search\"", "status=200"],
    )
    .await;
    log_with(&app, &["route=\"/api/email/threads\""]).await;
    log_with(&app, &["route=\"/api/rooms/{roomId}\"", "status=404"]).await;
    let log = log_with(&app, &["route=\"unmatched\"", "status=404"])
        .await
        .max(log);
    assert!(log.contains("duration_us="), "{log}");
    assert!(
        !log.contains(&word),
        "the search word reached the log:\n{log}"
    );
    assert!(
        !log.contains("roomsecret"),
        "the room id reached the log:\n{log}"
    );
}

#[tokio::test]
async fn access_false_writes_no_access_line() {
    let mut app = TestApp::start_with_mail_and("\n[log]\naccess = false\n".into()).await;
    let session = app.sign_up("noaccess").await;
    let resp = app.get_auth("/api/rooms", &session.access_token).await;
    assert_eq!(resp.status(), 200);
    // The positive marker: the shutdown's last line, written after every request.
    assert!(app.signal("TERM").success());
    let log = log_with(&app, &["stopped"]).await;
    assert!(log.contains("listening on"), "{log}");
    assert!(!log.contains("switchboard::access"), "{log}");
}

/// The series every scrape must have after some traffic.
const EXPECTED_SERIES: &[&str] = &[
    "switchboard_http_requests_total{method=\"GET\",route=\"/api/search\",status=\"200\"}",
    "switchboard_http_request_duration_seconds_bucket{method=\"GET\",route=\"/api/rooms/{roomId}\",le=\"+Inf\"}",
    "switchboard_http_requests_total{method=\"*\",route=\"unmatched\",status=\"404\"}",
    "switchboard_cache_requests_total{cache=\"pages\",result=\"miss\"}",
    "switchboard_cache_requests_total{cache=\"auth\",result=\"hit\"}",
    "switchboard_sync_rounds_total{worker=\"matrix\"}",
    "switchboard_sync_errors_total{worker=\"matrix\"}",
    "switchboard_sync_workers{worker=\"matrix\"}",
    "switchboard_sync_lag_seconds{worker=\"matrix\"}",
    "switchboard_db_wait_seconds_count",
    "switchboard_scheduler_pending ",
    "switchboard_scheduler_due ",
];

fn assert_exposition(text: &str, forbidden: &[&str]) {
    for series in EXPECTED_SERIES {
        assert!(text.contains(series), "{series} missing:\n{text}");
    }
    for word in forbidden {
        assert!(!text.contains(word), "{word} in the metrics:\n{text}");
    }
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (_, value) = line.rsplit_once(' ').expect("series value");
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
}

#[tokio::test]
async fn metrics_are_for_administrators_and_carry_no_ids_or_words() {
    let port = free_port();
    let (app, admin) =
        crate::server::admin::admin_app(&format!("[metrics]\nlisten = \"127.0.0.1:{port}\"\n"))
            .await;
    let user = app.sign_up("plain").await;
    let word = format!("quokkaword{}", std::process::id());
    let room = format!("!metricroom{}:localhost", std::process::id());
    private_traffic(&app, &user.access_token, &word, &room).await;
    // Cached pages and tokens: a second read of the same page.
    for _ in 0..2 {
        assert_eq!(
            app.get_auth("/api/rooms", &user.access_token)
                .await
                .status(),
            200
        );
    }
    let forbidden = [
        word.as_str(),
        "metricroom",
        user.user["id"].as_str().unwrap(),
        admin.user["id"].as_str().unwrap(),
    ];

    let resp = app.get_auth("/metrics", &admin.access_token).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/plain"));
    assert_exposition(&resp.text().await.unwrap(), &forbidden);

    expect_error(app.get("/metrics").await, 401, "unauthorized").await;
    let resp = app.get_auth("/metrics", &user.access_token).await;
    expect_error(resp, 403, "admin_required").await;
    let token = personal_token(&app, &admin).await;
    let resp = app.get_auth("/metrics", &token).await;
    expect_error(resp, 403, "forbidden_for_api_token").await;

    // The separate listener answers without authentication, and only /metrics.
    let separate = format!("http://127.0.0.1:{port}");
    let resp = app
        .http
        .get(format!("{separate}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .contains("version=0.0.4"));
    assert_exposition(&resp.text().await.unwrap(), &forbidden);
    let resp = app
        .http
        .get(format!("{separate}/api/rooms"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
}
