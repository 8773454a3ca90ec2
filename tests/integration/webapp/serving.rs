//! The web app's files at `/` (docs/security.md): headers, client-side routes, validators,
//! compression, HEAD, the separate budget, and paths that try to leave `assets/`.

use std::io::Read as _;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{assert_rate_headers, expect_error, MatrixMode, TestApp, TestConfig};

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' \
    data: blob:; media-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; \
    base-uri 'none'; form-action 'self'";

async fn app_with(extra: &str) -> TestApp {
    TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: extra.to_owned(),
    })
    .await
}

fn header<'a>(resp: &'a reqwest::Response, name: &str) -> &'a str {
    resp.headers()
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing on {}", resp.url()))
        .to_str()
        .unwrap()
}

fn assert_app_headers(resp: &reqwest::Response) {
    assert_eq!(header(resp, "content-security-policy"), CSP);
    assert_eq!(header(resp, "x-content-type-options"), "nosniff");
    assert_eq!(header(resp, "referrer-policy"), "no-referrer");
    assert_eq!(header(resp, "cache-control"), "no-cache");
    assert!(
        header(resp, "etag").starts_with('"'),
        "{:?}",
        resp.headers()
    );
    assert_rate_headers(resp);
}

async fn index_of(app: &TestApp) -> String {
    let resp = app.get("/").await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn the_app_its_files_and_its_routes_carry_the_headers() {
    let app = app_with("").await;
    let resp = app.get("/").await;
    assert_eq!(resp.status(), 200);
    assert_app_headers(&resp);
    assert_eq!(header(&resp, "content-type"), "text/html; charset=utf-8");
    let index = resp.text().await.unwrap();
    assert!(
        index.contains(r#"<script type="module" src="/app.js"></script>"#),
        "{index}"
    );
    // No inline script or style for the CSP to refuse.
    assert!(
        !index.contains("<script>") && !index.contains("<style"),
        "{index}"
    );

    for (path, ty) in [
        ("/app.js", "text/javascript; charset=utf-8"),
        ("/style.css", "text/css; charset=utf-8"),
        ("/index.html", "text/html; charset=utf-8"),
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_app_headers(&resp);
        assert_eq!(header(&resp, "content-type"), ty, "{path}");
        let disk =
            std::fs::read(crate::common::repo_root().join("assets").join(&path[1..])).unwrap();
        assert_eq!(resp.bytes().await.unwrap().as_ref(), disk, "{path}");
    }

    // Client-side routes answer the app itself.
    for path in [
        "/inbox",
        "/rooms/!abc:example.org",
        "/settings/tokens/",
        "/missing.js",
    ] {
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_app_headers(&resp);
        assert_eq!(header(&resp, "content-type"), "text/html; charset=utf-8");
        assert_eq!(resp.text().await.unwrap(), index, "{path}");
    }
}

#[tokio::test]
async fn api_paths_never_answer_html() {
    let app = app_with("").await;
    for path in ["/api/nope", "/api", "/api/", "/health/x", "/mcp/x"] {
        let resp = app.get(path).await;
        let content_type = header(&resp, "content-type").to_owned();
        assert!(content_type.starts_with("application/json"), "{path}");
        expect_error(resp, 404, "not_found").await;
    }
    // Unknown API routes stay behind the gate like every API call.
    let resp = app.get("/api/rooms").await;
    expect_error(resp, 401, "unauthorized").await;
    // The routes that keep their meaning.
    let spec = app.get("/openapi.yaml").await;
    assert_eq!(header(&spec, "content-type"), "application/yaml");
    let spec = spec.text().await.unwrap();
    assert!(spec.starts_with("openapi: 3.1.0"), "{}", &spec[..40]);
    // The document does not claim the app's files as operations.
    assert!(
        !spec.contains("/app.js") && !spec.contains("\n  /:\n"),
        "asset routes listed"
    );
    let health = app.get("/health").await;
    assert!(header(&health, "content-type").starts_with("application/json"));
    // Other methods on app paths are not the app: no operation is there.
    let resp = app.send(reqwest::Method::POST, "/inbox", None, None).await;
    expect_error(resp, 404, "not_found").await;
}

#[tokio::test]
async fn head_answers_the_headers_of_get_without_a_body() {
    let app = app_with("").await;
    for path in ["/", "/app.js", "/inbox"] {
        let get = app.get(path).await;
        let head = app.send(reqwest::Method::HEAD, path, None, None).await;
        assert_eq!(head.status(), 200, "{path}");
        assert_app_headers(&head);
        for name in ["etag", "content-type", "content-length"] {
            assert_eq!(header(&head, name), header(&get, name), "{path} {name}");
        }
        assert!(head.bytes().await.unwrap().is_empty(), "{path}");
    }
}

#[tokio::test]
async fn an_unchanged_file_is_304_and_a_changed_tag_gets_the_file() {
    let app = app_with("").await;
    for path in ["/", "/app.js", "/rooms/!x:y"] {
        let first = app.get(path).await;
        let etag = header(&first, "etag").to_owned();
        let again = app
            .http
            .get(app.url(path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_app_headers(&again);
        assert_eq!(header(&again, "etag"), etag);
        assert!(again.bytes().await.unwrap().is_empty());
        let list = format!("\"other\", {etag}");
        let listed = app
            .http
            .get(app.url(path))
            .header("if-none-match", list)
            .send()
            .await
            .unwrap();
        assert_eq!(listed.status(), 304, "{path}: a list naming the tag");
        let stale = app
            .http
            .get(app.url(path))
            .header("if-none-match", "\"0123456789abcdef\"")
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), 200, "{path}");
        assert!(!stale.bytes().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn gzip_when_accepted_and_identity_otherwise() {
    let app = app_with("").await;
    let plain = app.get("/").await;
    assert!(plain.headers().get("content-encoding").is_none());
    assert_eq!(
        header(&plain, "vary").to_ascii_lowercase(),
        "accept-encoding"
    );
    let plain_tag = header(&plain, "etag").to_owned();
    let index = plain.bytes().await.unwrap();

    let zipped = app
        .http
        .get(app.url("/"))
        .header("accept-encoding", "br, gzip;q=0.8")
        .send()
        .await
        .unwrap();
    assert_eq!(zipped.status(), 200);
    assert_app_headers(&zipped);
    assert_eq!(header(&zipped, "content-encoding"), "gzip");
    assert_eq!(
        header(&zipped, "vary").to_ascii_lowercase(),
        "accept-encoding"
    );
    let zipped_tag = header(&zipped, "etag").to_owned();
    assert_ne!(zipped_tag, plain_tag, "two representations, two tags");
    let body = zipped.bytes().await.unwrap();
    assert!(body.len() < index.len());
    let mut opened = Vec::new();
    flate2::read::GzDecoder::new(body.as_ref())
        .read_to_end(&mut opened)
        .unwrap();
    assert_eq!(opened, index.as_ref());

    let refused = app
        .http
        .get(app.url("/"))
        .header("accept-encoding", "gzip;q=0, identity")
        .send()
        .await
        .unwrap();
    assert!(refused.headers().get("content-encoding").is_none());
    assert_eq!(refused.bytes().await.unwrap(), index);
    // Either tag revalidates.
    let revalidated = app
        .http
        .get(app.url("/"))
        .header("accept-encoding", "gzip")
        .header("if-none-match", &plain_tag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), 304);
    assert_eq!(header(&revalidated, "etag"), zipped_tag);
}

#[tokio::test]
async fn loading_the_app_never_spends_the_api_budget() {
    let app = app_with("[rate_limit]\nrequests = 10\nstatic_requests = 40\n").await;
    // The address's API budget before (the harness's start-up probe spent some of it).
    let before = app.get("/api/attestation").await;
    let left: u32 = header(&before, "x-ratelimit-remaining").parse().unwrap();
    for i in 0..40 {
        let path = ["/", "/app.js", "/style.css", "/inbox"][i % 4];
        let resp = app.get(path).await;
        assert_eq!(resp.status(), 200, "static load {i}");
        assert_eq!(header(&resp, "x-ratelimit-limit"), "40");
        assert_eq!(header(&resp, "x-ratelimit-remaining"), (39 - i).to_string());
    }
    // The app's own budget is spent: 429 with the JSON body, like the API's.
    let over = app.get("/").await;
    assert!(header(&over, "retry-after").parse::<u64>().unwrap() > 0);
    expect_error(over, 429, "rate_limited").await;
    // The API budget of the same address is untouched.
    let api = app.get("/api/attestation").await;
    assert_eq!(api.status(), 200);
    assert_eq!(header(&api, "x-ratelimit-limit"), "10");
    assert_eq!(
        header(&api, "x-ratelimit-remaining"),
        (left - 1).to_string()
    );
}

/// Sends `path` exactly as written (no client normalises `..` or `%2e` away) and returns
/// the status and body.
async fn raw_get(app: &TestApp, path: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    let mut request = b"GET ".to_vec();
    request.extend_from_slice(path);
    request.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(&request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"));
    let body = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| answer[at + 4..].to_vec())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn paths_that_leave_assets_answer_the_app_or_404_never_a_file() {
    let app = app_with("").await;
    let index = index_of(&app).await;
    let outside = ["[package]", "fn main", "[storage]", "root:", "PRIVATE KEY"];
    for path in [
        &b"/..%2fCargo.toml"[..],
        b"/..%2f..%2f..%2fetc%2fpasswd",
        b"/%2e%2e/Cargo.toml",
        b"/%2e%2e/%2e%2e/src/main.rs",
        b"/../Cargo.toml",
        b"/assets/../Cargo.toml",
        b"/..\\Cargo.toml",
        b"/app.js%00",
        b"/%00",
        b"/app.js%00.html",
        b"/%2fetc%2fpasswd",
        b"//etc/passwd",
        b"/switchboard.toml",
        b"/data/master.key",
    ] {
        let shown = String::from_utf8_lossy(path).into_owned();
        let (status, body) = raw_get(&app, path).await;
        let body = String::from_utf8_lossy(&body).into_owned();
        assert!(
            status == 404 || status == 400 || (status == 200 && body == index),
            "{shown}: {status} {body}"
        );
        for marker in outside {
            assert!(!body.contains(marker), "{shown} answered a file: {body}");
        }
    }
}
