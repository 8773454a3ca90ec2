//! The installable app in Chromium (tests/web/pwa.py): manifest, service worker, a push
//! delivered through DevTools shown as a notification, offline start with its notice. And
//! what the server sends for those files.

use serde_json::{json, Value};

use crate::common::chromium::{run_script, CHROMIUM};
use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_installs_works_offline_and_shows_pushes_in_chromium() {
    let app = TestApp::start().await;

    // The server side: both files with the app's headers and their types.
    for (path, content_type) in [
        ("/manifest.webmanifest", "application/manifest+json"),
        ("/sw.js", "text/javascript"),
        ("/icons/icon-maskable-512.png", "image/png"),
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        let h = resp.headers();
        assert!(
            h["content-type"]
                .to_str()
                .unwrap()
                .starts_with(content_type),
            "{path}: {h:?}"
        );
        assert!(h["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'self'"));
        assert_eq!(h["x-content-type-options"], "nosniff");
    }
    let sw = app.get("/sw.js").await.text().await.unwrap();
    assert!(
        !sw.contains("__SHELL_VERSION__") && !sw.contains("__SHELL_FILES__"),
        "filled in"
    );
    assert!(
        sw.contains("\"/app.js\""),
        "the shell lists the app's files"
    );
    let index = app.get("/inbox").await.text().await.unwrap();
    assert!(index.contains(r#"<link rel="manifest" href="/manifest.webmanifest">"#));

    let report = run_script(
        "tests/web/pwa.py",
        json!({"base": app.url(""), "chromium": CHROMIUM}),
        async |verb: &str, _arg: &str| panic!("unexpected request from pwa.py: {verb}"),
    )
    .await;
    let problems = report["problems"].as_array().unwrap();
    assert!(problems.is_empty(), "problems: {problems:#?}");
    let steps: Vec<&str> = report["steps"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for want in [
        "manifest_without_errors",
        "icons_served",
        "service_worker_registered",
        "shell_cached_without_api",
        "push_shows_notification",
        "same_chat_replaces",
        "offline_opens_with_notice",
    ] {
        assert!(
            steps.contains(&want),
            "step {want} missing; report {report:#}"
        );
    }
    assert_eq!(
        report["notification"]["tag"],
        Value::from("!garden:example.org")
    );
}
