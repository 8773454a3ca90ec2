//! The `log` mail transport: reported by `/health`, and loudly warned about at start when
//! the server listens beyond loopback.

use std::time::{Duration, Instant};

use crate::common::*;

const INFO_LINE: &str = "sign-in codes are written to this log, not mailed";
const WARN_LINE: &str = "INSECURE: mail transport \"log\" on a non-loopback address";

async fn wait_for_log(app: &TestApp, from: usize, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = app.log()[from..].to_owned();
        if let Some(line) = log.lines().find(|l| l.contains(needle)) {
            return line.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in the log:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_log_transport_on_loopback_is_reported_without_a_warning() {
    let app = TestApp::start().await;
    let line = wait_for_log(&app, 0, INFO_LINE).await;
    assert!(line.contains("INFO"), "{line}");
    assert!(!app.log().contains("INSECURE"), "{}", app.log());
    let health = expect_json(app.get("/health").await, 200).await;
    assert_eq!(health["status"], "ok");
    assert_eq!(health["checks"]["mail"]["status"], "log_only", "{health}");

    // With SMTP the check is ok and nothing is said about codes in the log.
    let smtp = TestApp::start_with_mail().await;
    let health = expect_json(smtp.get("/health").await, 200).await;
    assert_eq!(health["checks"]["mail"]["status"], "ok", "{health}");
    assert!(health["checks"]["mail"].get("error").is_none(), "{health}");
    wait_for_log(&smtp, 0, "switchboard starting").await;
    assert!(!smtp.log().contains(INFO_LINE) && !smtp.log().contains("INSECURE"));
}

#[tokio::test]
async fn the_log_transport_on_a_public_address_warns_at_start_and_health_stays_200() {
    let mut app = TestApp::start().await;
    app.signal("TERM");
    let config = std::fs::read_to_string(&app.config_path).unwrap();
    assert!(config.contains("listen = \"127.0.0.1:0\""), "{config}");
    std::fs::write(
        &app.config_path,
        config.replace("listen = \"127.0.0.1:0\"", "listen = \"0.0.0.0:0\""),
    )
    .unwrap();
    let from = app.log().len();
    app.spawn().await;

    let line = wait_for_log(&app, from, WARN_LINE).await;
    assert!(line.contains("WARN"), "{line}");
    assert!(line.contains("anyone who can read the log"), "{line}");
    let health = expect_json(app.get("/health").await, 200).await;
    assert_eq!(
        health["status"], "ok",
        "log_only alone is not a 503: {health}"
    );
    assert_eq!(health["checks"]["mail"]["status"], "log_only", "{health}");
    assert!(
        health["checks"]["mail"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("log")),
        "{health}"
    );
}
