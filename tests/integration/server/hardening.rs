//! Attacks a public service meets, performed against the real binary: each test is the
//! attack, and passes only when it is repelled. Here the requests (the allowlist of
//! personal tokens, sign-in codes, rate budgets, forwarded addresses, floods); attacks on
//! the connections themselves are in `connections.rs`.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use crate::common::*;

fn extra(app_config: &str) -> TestConfig {
    TestConfig {
        matrix: MatrixMode::Real,
        extra: format!("{}{app_config}", mail::smtp_config()),
    }
}

fn remaining(resp: &reqwest::Response) -> u64 {
    resp.headers()["x-ratelimit-remaining"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn head_and_unlisted_methods_obey_the_personal_token_allowlist() {
    let app = TestApp::start_with_mail().await;
    let session = app.sign_up("head").await;
    let token = personal_token(&app, &session).await;
    // GET of these is refused to tokens; HEAD used to run the GET handler.
    for path in [
        "/api/keys/recovery",
        "/api/accounts/active",
        "/api/developer/tokens",
    ] {
        let resp = app.send(Method::HEAD, path, Some(&token), None).await;
        assert_eq!(resp.status(), 403, "HEAD {path}");
        assert_rate_headers(&resp);
        let get = app.send(Method::GET, path, Some(&token), None).await;
        expect_error(get, 403, "forbidden_for_api_token").await;
    }
    // A method the document does not list on a known path is denied too.
    let resp = app
        .send(Method::OPTIONS, "/api/keys", Some(&token), None)
        .await;
    expect_error(resp, 403, "forbidden_for_api_token").await;
    // HEAD of an allowed route still works, and the native session keeps HEAD.
    let resp = app
        .send(Method::HEAD, "/api/rooms", Some(&token), None)
        .await;
    assert_eq!(resp.status(), 200);
    let resp = app
        .send(
            Method::HEAD,
            "/api/developer/tokens",
            Some(&session.access_token),
            None,
        )
        .await;
    assert_eq!(resp.status(), 200);
}

async fn request_code(app: &TestApp, email: &str) -> String {
    let before = mail::messages_to(email).len();
    let resp = app
        .post_json("/api/auth/code", None, json!({"email": email}))
        .await;
    expect_json(resp, 200).await;
    mail::wait_for_code(email, before).await
}

async fn verify(app: &TestApp, email: &str, code: &str) -> reqwest::Response {
    app.post_json(
        "/api/auth/verify",
        None,
        json!({"email": email, "code": code}),
    )
    .await
}

#[tokio::test]
async fn a_newer_code_kills_every_older_one_used_or_not() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("supersede");
    let a = request_code(&app, &email).await;
    let b = request_code(&app, &email).await;
    expect_json(verify(&app, &email, &b).await, 200).await;
    // B is used; A was never used, and must not come back.
    if a != b {
        expect_error(verify(&app, &email, &a).await, 400, "invalid_code").await;
    }
    // And an unused older code dies as soon as a newer one is sent (another address:
    // three codes per ten minutes each).
    let email = unique_email("supersede2");
    let c = request_code(&app, &email).await;
    let d = request_code(&app, &email).await;
    if c != d {
        expect_error(verify(&app, &email, &c).await, 400, "invalid_code").await;
    }
    expect_json(verify(&app, &email, &d).await, 200).await;
}

fn wrong(code: &str) -> String {
    let n: u32 = code.parse().unwrap();
    format!("{:06}", (n + 1) % 1_000_000)
}

#[tokio::test]
async fn concurrent_wrong_guesses_use_at_most_five_tries_of_a_code() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("race");
    let code = request_code(&app, &email).await;
    let guess = wrong(&code);
    let guesses = (0..30).map(|_| verify(&app, &email, &guess));
    for resp in futures_util::future::join_all(guesses).await {
        expect_error(resp, 400, "invalid_code").await;
    }
    // The code is burned, and no more than five guesses were ever checked against it.
    expect_error(verify(&app, &email, &code).await, 400, "invalid_code").await;
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    let attempts: i64 = db
        .query_row("SELECT MAX(attempts) FROM login_codes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(attempts, 5, "tries taken from the code");
    let failures: i64 = db
        .query_row("SELECT COUNT(*) FROM code_failures", [], |r| r.get(0))
        .unwrap();
    assert_eq!(failures, 5, "wrong codes counted against the address");
}

#[tokio::test]
async fn an_address_accepts_only_so_many_wrong_codes_a_day() {
    // The default is 20 per 24 h (3 codes per 10 minutes would make 20 slow to reach here).
    let app = TestApp::start_with(extra("[auth]\nmax_code_failures = 4\n")).await;
    let email = unique_email("guesser");
    let first = request_code(&app, &email).await;
    for _ in 0..4 {
        expect_error(
            verify(&app, &email, &wrong(&first)).await,
            400,
            "invalid_code",
        )
        .await;
    }
    // Even the right code of a fresh mail is refused now, with the time to wait.
    let fresh = request_code(&app, &email).await;
    let resp = verify(&app, &email, &fresh).await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 86_000 && retry <= 86_400, "retry-after {retry}");
    expect_error(resp, 429, "too_many_attempts").await;
    // Another address is not affected.
    let other = unique_email("owner");
    let code = request_code(&app, &other).await;
    expect_json(verify(&app, &other, &code).await, 200).await;
}

#[tokio::test]
async fn a_bearer_token_does_not_move_a_public_route_off_the_address_budget() {
    let app = TestApp::start_with(extra("[rate_limit]\nrequests = 8\nwindow = \"60s\"\n")).await;
    let session = app.sign_up("budget").await;
    // Whatever the start-up and sign-in left of the address budget, each refresh takes one.
    let mut left = None;
    for n in 0..8 {
        let resp = app
            .post_json(
                "/api/auth/refresh",
                Some(&session.access_token),
                json!({"refreshToken": "not-a-token"}),
            )
            .await;
        if resp.status() == 429 {
            assert!(n > 0, "the address had no budget at all");
            break;
        }
        let now = remaining(&resp);
        if let Some(before) = left {
            assert_eq!(now + 1, before, "address budget after refresh {n}");
        }
        left = Some(now);
        expect_error(resp, 401, "unauthorized").await;
    }
    assert_eq!(left, Some(0), "the refreshes spent the address budget");
    let resp = app
        .post_json(
            "/api/auth/refresh",
            Some(&session.access_token),
            json!({"refreshToken": "not-a-token"}),
        )
        .await;
    expect_error(resp, 429, "rate_limited").await;
    // The user's own budget was not touched.
    let resp = app.get_auth("/api/rooms", &session.access_token).await;
    assert_eq!(remaining(&resp), 7);
    expect_json(resp, 200).await;
}

#[tokio::test]
async fn all_personal_tokens_of_a_user_share_one_budget() {
    let app = TestApp::start_with(extra("[rate_limit]\nrequests = 10\nwindow = \"60s\"\n")).await;
    let session = app.sign_up("tokens").await;
    let a = personal_token(&app, &session).await; // 1 of the user's 10
    let b = personal_token(&app, &session).await; // 2
    for _ in 0..4 {
        expect_json(app.get_auth("/api/rooms", &a).await, 200).await;
        expect_json(app.get_auth("/api/rooms", &b).await, 200).await;
    }
    // 10 used: a third token, or the app itself, gets no fresh budget.
    let resp = app.get_auth("/api/rooms", &b).await;
    expect_error(resp, 429, "rate_limited").await;
    let resp = app.get_auth("/api/rooms", &session.access_token).await;
    expect_error(resp, 429, "rate_limited").await;
}

async fn health_as(app: &TestApp, forwarded_for: &str) -> reqwest::Response {
    app.http
        .get(app.url("/health"))
        .header("x-forwarded-for", forwarded_for)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn forwarded_for_is_believed_only_from_trusted_proxies() {
    let limits = "[rate_limit]\nrequests = 3\nwindow = \"60s\"\n";
    let proxied = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Real,
        extra: limits.to_owned(),
    })
    .await;
    // Not trusted yet: the header is ignored and every caller is the peer, so distinct
    // forwarded addresses still spend one budget (the harness's start-up checks took some).
    let mut refused = false;
    for n in 0..4 {
        let resp = health_as(&proxied, &format!("198.51.100.{n}")).await;
        if resp.status() == 429 {
            refused = true;
            break;
        }
    }
    assert!(refused, "forged addresses must not buy budgets");
    drop(proxied);

    let trusting = TestApp::start_with(TestConfig {
        matrix: MatrixMode::Real,
        extra: format!("[server]\ntrusted_proxies = [\"127.0.0.0/8\"]\n{limits}"),
    })
    .await;
    for _ in 0..3 {
        assert!(health_as(&trusting, "198.51.100.7")
            .await
            .status()
            .is_success());
    }
    expect_error(
        health_as(&trusting, "198.51.100.7").await,
        429,
        "rate_limited",
    )
    .await;
    // A forged left-most hop does not buy a new budget: the right-most untrusted hop counts.
    expect_error(
        health_as(&trusting, "203.0.113.5, 198.51.100.7").await,
        429,
        "rate_limited",
    )
    .await;
    // Another client behind the same proxy has its own budget.
    let resp = health_as(&trusting, "198.51.100.8").await;
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(remaining(&resp), 2, "{:?}", resp.headers());
}

#[tokio::test]
async fn a_flood_of_sign_in_requests_leaves_other_users_fast() {
    let app = TestApp::start_with(extra(
        "[rate_limit]\nrequests = 1000000\nwindow = \"60s\"\n",
    ))
    .await;
    let session = app.sign_up("victim").await;
    let flooding = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let statuses = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut flood = Vec::new();
    for client in 0..64 {
        let http = reqwest::Client::new();
        let url = app.url("/api/auth/code");
        let flooding = flooding.clone();
        let statuses = statuses.clone();
        flood.push(tokio::spawn(async move {
            let mut n = 0;
            while flooding.load(std::sync::atomic::Ordering::Relaxed) {
                let email = format!("flood{client}.{n}.{}@example.test", std::process::id());
                n += 1;
                if let Ok(resp) = http.post(&url).json(&json!({"email": email})).send().await {
                    statuses.lock().unwrap().push(resp.status().as_u16());
                }
            }
        }));
    }
    // Let the flood build up its queue first.
    while statuses.lock().unwrap().len() < 64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        expect_json(app.get_auth("/api/rooms", &session.access_token).await, 200).await;
        latencies.push(started.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    flooding.store(false, std::sync::atomic::Ordering::Relaxed);
    for task in flood {
        task.await.unwrap();
    }
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let worst = *latencies.last().unwrap();
    assert!(
        median <= Duration::from_millis(250) && worst <= Duration::from_secs(2),
        "GET /api/rooms under the flood: median {median:?}, worst {worst:?}"
    );
    let statuses = statuses.lock().unwrap();
    assert!(statuses.contains(&200), "some codes were sent");
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "only sent or busy: {:?}",
        statuses
            .iter()
            .filter(|s| **s != 200 && **s != 503)
            .collect::<Vec<_>>()
    );
}
