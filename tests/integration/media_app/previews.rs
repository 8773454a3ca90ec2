//! Link previews through Synapse's `preview_url` of a page on loopback (the test Synapse
//! allows 127.0.0.1 and refuses every other private range), the image through Switchboard,
//! the cache in `/metrics`, and the refusals: other schemes, overlong URLs, the setting off,
//! the budget, and the setting's native-only routes.

use std::sync::atomic::Ordering;

use reqwest::Method;
use serde_json::{json, Value};

use super::{tiny_png, Site, DESCRIPTION, TITLE};
use crate::common::*;

fn preview_path(url: &str) -> String {
    format!(
        "/api/preview?url={}",
        switchboard::clients::matrix::encode(url)
    )
}

/// The value of one series of a Prometheus exposition (0 when absent).
fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_loopback_is_previewed_by_the_homeserver_with_its_image_through_switchboard() {
    let site = Site::start().await;
    let (app, admin) = crate::server::admin::admin_app("").await;
    let user = app.sign_up("preview").await;
    let token = personal_token(&app, &user).await;
    let url = format!("{}/page", site.base);

    let p = expect_json(app.get_auth(&preview_path(&url), &token).await, 200).await;
    assert_eq!(
        sorted_keys(&p),
        ["description", "imageUrl", "title", "url"],
        "{p}"
    );
    assert_eq!(
        (
            p["url"].as_str(),
            p["title"].as_str(),
            p["description"].as_str()
        ),
        (Some(url.as_str()), Some(TITLE), Some(DESCRIPTION)),
        "{p}"
    );
    let image_url = p["imageUrl"].as_str().unwrap();
    assert!(
        image_url.starts_with("/api/preview/image?url="),
        "the image is served by Switchboard, never the site: {image_url}"
    );
    let resp = app.get_auth(image_url, &token).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert_eq!(resp.bytes().await.unwrap().to_vec(), tiny_png());
    let fetched = site.page_hits.load(Ordering::SeqCst);
    assert!(fetched >= 1, "Synapse fetched the page");

    // Asked again: from Switchboard's cache (a hit in /metrics), the site not asked again.
    let again = expect_json(app.get_auth(&preview_path(&url), &token).await, 200).await;
    assert_eq!(again, p);
    assert_eq!(site.page_hits.load(Ordering::SeqCst), fetched);
    let metrics = app.get_auth("/metrics", &admin.access_token).await;
    let text = metrics.text().await.unwrap();
    assert!(
        series(
            &text,
            "switchboard_cache_requests_total{cache=\"previews\",result=\"hit\"}"
        ) >= 1.0,
        "{text}"
    );
    assert!(
        series(&text, "switchboard_cache_entries{cache=\"previews\"}") >= 1.0,
        "{text}"
    );
    assert!(
        series(&text, "switchboard_cache_bytes{cache=\"previews\"}") > 0.0,
        "{text}"
    );

    // A page with a title only: no imageUrl, and its image route says there is none.
    let plain = format!("{}/plain", site.base);
    let p = expect_json(app.get_auth(&preview_path(&plain), &token).await, 200).await;
    assert_eq!(p["title"], "Just a title", "{p}");
    assert!(p.get("imageUrl").is_none(), "{p}");
    let resp = app
        .get_auth(
            &format!(
                "/api/preview/image?url={}",
                switchboard::clients::matrix::encode(&plain)
            ),
            &token,
        )
        .await;
    expect_error(resp, 404, "no_preview").await;

    // Nothing listens there / an address the homeserver refuses: 404 no_preview.
    let closed = format!("http://127.0.0.1:{}/", free_port());
    expect_error(
        app.get_auth(&preview_path(&closed), &token).await,
        404,
        "no_preview",
    )
    .await;
    expect_error(
        app.get_auth(&preview_path("http://10.255.255.1/intranet"), &token)
            .await,
        404,
        "no_preview",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_schemes_long_urls_the_setting_off_and_the_budget_are_refused() {
    let site = Site::start().await;
    let app = TestApp::start_with_mail_and("[rate_limit]\npreviews_per_minute = 3\n".into()).await;
    let user = app.sign_up("previewno").await;
    let token = personal_token(&app, &user).await;

    for bad in [
        "ftp://example.org/file.txt",
        "javascript:alert(document.cookie)",
        "file:///etc/passwd",
        "data:text/html,<b>x</b>",
    ] {
        let e = expect_error(
            app.get_auth(&preview_path(bad), &token).await,
            400,
            "unsupported_url_scheme",
        )
        .await;
        assert!(e["message"].as_str().unwrap().starts_with("url"), "{e}");
    }
    let long = format!("{}/page?{}", site.base, "a".repeat(2100));
    let e = expect_error(
        app.get_auth(&preview_path(&long), &token).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("url:"), "{e}");
    for bad in [
        "/api/preview",
        "/api/preview?url=",
        "/api/preview?url=example.org",
    ] {
        let e = expect_error(app.get_auth(bad, &token).await, 400, "invalid_request").await;
        assert!(e["message"].as_str().unwrap().starts_with("url"), "{e}");
    }
    assert_eq!(site.page_hits.load(Ordering::SeqCst), 0);

    // The setting: on by default, native sessions only, stored per user.
    let native = user.access_token.as_str();
    let settings = "/api/settings/previews";
    let s = expect_json(app.get_auth(settings, native).await, 200).await;
    assert_eq!(s, json!({"enabled": true}));
    for method in [Method::GET, Method::PUT] {
        let resp = app
            .send(
                method,
                settings,
                Some(&token),
                Some(json!({"enabled": false})),
            )
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let resp = app
        .send(
            Method::PUT,
            settings,
            Some(native),
            Some(json!({"enabled": "no"})),
        )
        .await;
    assert_eq!(resp.status(), 400);
    let off = app
        .send(
            Method::PUT,
            settings,
            Some(native),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(expect_json(off, 200).await, json!({"enabled": false}));
    assert_eq!(
        expect_json(app.get_auth(settings, native).await, 200).await,
        json!({"enabled": false})
    );
    let url = format!("{}/page", site.base);
    expect_error(
        app.get_auth(&preview_path(&url), &token).await,
        403,
        "previews_disabled",
    )
    .await;
    let image = format!(
        "/api/preview/image?url={}",
        switchboard::clients::matrix::encode(&url)
    );
    expect_error(app.get_auth(&image, &token).await, 403, "previews_disabled").await;
    // Another user's setting is their own.
    let other = app.sign_up("previewyes").await;
    assert_eq!(
        expect_json(app.get_auth(settings, &other.access_token).await, 200).await,
        json!({"enabled": true})
    );
    assert_eq!(
        site.page_hits.load(Ordering::SeqCst),
        0,
        "nothing fetched while off"
    );

    // On again; the budget (3 a minute here) then runs out: 429 with Retry-After.
    let on = app
        .send(
            Method::PUT,
            settings,
            Some(native),
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(expect_json(on, 200).await, json!({"enabled": true}));
    for i in 0..3 {
        let u = format!("{}/plain?n={i}", site.base);
        let p: Value = expect_json(app.get_auth(&preview_path(&u), &token).await, 200).await;
        assert_eq!(p["title"], "Just a title");
    }
    let u = format!("{}/plain?n=9", site.base);
    let resp = app.get_auth(&preview_path(&u), native).await;
    assert!(resp.headers().get("retry-after").is_some());
    expect_error(resp, 429, "rate_limited").await;
}
