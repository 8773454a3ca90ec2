//! Checks around the measured rows: that a page is what the row says it measures (full,
//! fresh, compressed), and that the machine is idle before measuring.

use std::time::{Duration, Instant};

/// Asserts that the page comes gzip-compressed when `accept` allows it (so the row
/// measures what it says), and prints its size in both forms.
pub async fn compressed(client: &reqwest::Client, url: &str, token: Option<&str>, accept: &str) {
    let get = |accept: Option<&str>| {
        let mut req = client.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(a) = accept {
            req = req.header(reqwest::header::ACCEPT_ENCODING, a);
        }
        req.send()
    };
    let zipped = get(Some(accept)).await.expect("request");
    let encoding = zipped
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .cloned();
    assert_eq!(
        encoding.as_ref().map(|v| v.as_bytes()),
        Some(&b"gzip"[..]),
        "{url}"
    );
    let zipped = zipped.bytes().await.expect("body").len();
    let plain = get(None)
        .await
        .expect("request")
        .bytes()
        .await
        .expect("body")
        .len();
    println!("  ({url}: {plain} bytes, {zipped} gzip-compressed)");
}

/// Asserts the page holds `limit` messages and, with `newest`, waits (up to 10 s) until one
/// of them has that text; returns how long that took.
pub async fn check(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    limit: usize,
    newest: Option<&str>,
) -> Duration {
    let began = Instant::now();
    loop {
        let resp = client
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .expect("request");
        let status = resp.status();
        let body: serde_json::Value = resp.json().await.expect("json");
        assert!(status.is_success(), "{status}: {body}");
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), limit, "{body}");
        let Some(text) = newest else {
            return began.elapsed();
        };
        if messages.iter().any(|m| m["text"] == text) {
            return began.elapsed();
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the last message sent ({text}) is not on the page after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (at most 60 s) until each of `pids` (0: none) used under 3% of a core over half
/// a second; says how long it took, or that it gave up.
pub fn settle(pids: &[u32]) -> String {
    let began = Instant::now();
    let window = Duration::from_millis(500);
    let busy = |pid: u32| {
        let before = super::load::process_cpu_secs(pid);
        std::thread::sleep(window);
        (super::load::process_cpu_secs(pid) - before) / window.as_secs_f64()
    };
    while began.elapsed() < Duration::from_secs(60) {
        if pids.iter().filter(|&&p| p != 0).all(|&p| busy(p) < 0.03) {
            return format!("{:.1} s", began.elapsed().as_secs_f64());
        }
    }
    "not within 60 s (measuring anyway)".into()
}
