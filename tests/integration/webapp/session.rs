//! The web session: `X-Switchboard-Client: web` keeps the refresh token in an HttpOnly
//! cookie scoped to `/api/auth`, refreshes by that cookie, refuses other sites, and logout
//! removes it; without the header everything is as before.

use serde_json::{json, Value};

use crate::common::{expect_error, expect_json, mail, unique_email, TestApp};

const WEB: (&str, &str) = ("x-switchboard-client", "web");

/// `(web, matrix_device_id)` of the session of refresh token `token`, from the database.
fn session_row(app: &TestApp, token: &str) -> (bool, Option<String>) {
    let conn = rusqlite::Connection::open_with_flags(
        app.data_dir().join("switchboard.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let hash = switchboard::crypto::sha256_hex(token);
    conn.query_row(
        "SELECT web, matrix_device_id FROM refresh_tokens WHERE token_hash = ?1",
        [hash],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// The attributes of a `Set-Cookie` value: (name=value, lower-cased attributes).
fn parse_set_cookie(resp: &reqwest::Response) -> (String, Vec<String>) {
    let values: Vec<&str> = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(values.len(), 1, "one Set-Cookie: {values:?}");
    let mut parts = values[0].split(';').map(str::trim);
    let pair = parts.next().unwrap().to_owned();
    (pair, parts.map(str::to_ascii_lowercase).collect())
}

async fn web_verify(app: &TestApp, email: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let before = mail::messages_to(email).len();
    let code = app.auth().mailed_code(email, before).await;
    let mut req = app
        .http
        .post(app.url("/api/auth/verify"))
        .json(&json!({"email": email, "code": code}));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

async fn refresh(app: &TestApp, headers: &[(&str, &str)], body: Value) -> reqwest::Response {
    let mut req = app.http.post(app.url("/api/auth/refresh")).json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn a_web_sign_in_keeps_the_refresh_token_in_an_http_only_cookie() {
    let app = TestApp::start_with_mail().await;
    let origin = app.base.clone();
    let email = unique_email("websession");
    let resp = web_verify(&app, &email, &[WEB, ("origin", &origin)]).await;
    assert_eq!(resp.status(), 200);
    let (pair, attrs) = parse_set_cookie(&resp);
    let body = expect_json(resp, 200).await;
    assert_eq!(
        body["refreshToken"], "",
        "the body never carries it: {body}"
    );
    assert!(body["accessToken"].as_str().is_some_and(|t| !t.is_empty()));
    assert!(body["expiresIn"].as_u64().is_some() && body["user"]["email"] == email.as_str());
    let token = pair.strip_prefix("sb_refresh=").expect("sb_refresh cookie");
    assert!(token.len() >= 32, "{pair}");
    for want in [
        "httponly",
        "samesite=strict",
        "path=/api/auth",
        "max-age=2592000",
    ] {
        assert!(attrs.iter().any(|a| a == want), "{want} missing: {attrs:?}");
    }
    // Always Secure, also on plain http and without base_url (a TLS proxy in front is
    // invisible to the server); browsers accept it on localhost and 127.0.0.1.
    assert!(
        attrs.iter().any(|a| a == "secure"),
        "Secure on plain http too: {attrs:?}"
    );
    let cookie = format!("sb_refresh={token}");

    // No Matrix token for page scripts: none in the body, none from /accounts/active, and
    // no Matrix device was opened for the session.
    assert!(body["matrixAccessToken"].is_null(), "{body}");
    let access0 = body["accessToken"].as_str().unwrap().to_owned();
    let active = expect_json(app.get_auth("/api/accounts/active", &access0).await, 200).await;
    assert!(active["matrixAccessToken"].is_null(), "{active}");
    assert_eq!(active["account"]["email"], email.as_str(), "{active}");
    let (web, device): (bool, Option<String>) = session_row(&app, token);
    assert!(
        web && device.is_none(),
        "web session without a device: {web} {device:?}"
    );

    // The app's silent refresh: header, cookie, `{}`.
    let same_site = [
        WEB,
        ("cookie", cookie.as_str()),
        ("origin", origin.as_str()),
        ("sec-fetch-site", "same-origin"),
    ];
    let fresh = expect_json(refresh(&app, &same_site, json!({})).await, 200).await;
    let access = fresh["accessToken"].as_str().unwrap().to_owned();
    assert!(fresh["expiresIn"].as_u64().unwrap() > 0);
    expect_json(app.get_auth("/api/auth/me", &access).await, 200).await;

    // The cookie alone is not enough: without the header it is never read.
    let plain = [("cookie", cookie.as_str())];
    let err = expect_error(
        refresh(&app, &plain, json!({})).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(err["message"], "refreshToken: required");
    // Another site cannot use it, whatever it sends.
    for headers in [
        vec![
            WEB,
            ("cookie", cookie.as_str()),
            ("origin", "https://evil.example"),
        ],
        vec![WEB, ("cookie", cookie.as_str()), ("origin", "null")],
        vec![
            WEB,
            ("cookie", cookie.as_str()),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![
            WEB,
            ("cookie", cookie.as_str()),
            ("sec-fetch-site", "same-site"),
        ],
    ] {
        let resp = refresh(&app, &headers, json!({})).await;
        assert!(resp.headers().get("set-cookie").is_none());
        expect_error(resp, 403, "cross_site_request").await;
    }
    // With the header, only the cookie counts (a body token does not replace it).
    let no_cookie = refresh(&app, &[WEB], json!({"refreshToken": token})).await;
    expect_error(no_cookie, 401, "unauthorized").await;
    let forged = [WEB, ("cookie", "sb_refresh=not-a-token")];
    expect_error(refresh(&app, &forged, json!({})).await, 401, "unauthorized").await;

    // Logout removes the cookie, and the token behind it is revoked.
    let out = app
        .http
        .post(app.url("/api/auth/logout"))
        .bearer_auth(&access)
        .header(WEB.0, WEB.1)
        .send()
        .await
        .unwrap();
    let (pair, attrs) = parse_set_cookie(&out);
    expect_json(out, 200).await;
    assert_eq!(pair, "sb_refresh=");
    for want in ["max-age=0", "path=/api/auth", "httponly", "samesite=strict"] {
        assert!(attrs.iter().any(|a| a == want), "{want} missing: {attrs:?}");
    }
    let after = refresh(&app, &same_site, json!({})).await;
    expect_error(after, 401, "unauthorized").await;
}

#[tokio::test]
async fn a_web_sign_in_from_another_site_is_refused_before_the_code_is_used() {
    let app = TestApp::start_with_mail().await;
    let email = unique_email("webcross");
    let before = mail::messages_to(&email).len();
    let code = app.auth().mailed_code(&email, before).await;
    let body = json!({"email": email, "code": code});
    let cross = app
        .http
        .post(app.url("/api/auth/verify"))
        .header(WEB.0, WEB.1)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(cross.headers().get("set-cookie").is_none());
    expect_error(cross, 403, "cross_site_request").await;
    // The code was not spent: the user's own client still signs in with it.
    let ok = app.post_json("/api/auth/verify", None, body).await;
    assert!(ok.headers().get("set-cookie").is_none());
    let signed = expect_json(ok, 200).await;
    assert!(signed["refreshToken"]
        .as_str()
        .is_some_and(|t| t.len() >= 32));
}

#[tokio::test]
async fn without_the_web_header_sign_in_and_refresh_are_unchanged() {
    let app = TestApp::start_with_mail().await;
    for client in [None, Some("ios")] {
        let email = unique_email("nonweb");
        let headers: Vec<(&str, &str)> = client
            .map(|c| vec![("x-switchboard-client", c)])
            .unwrap_or_default();
        let resp = web_verify(&app, &email, &headers).await;
        assert!(resp.headers().get("set-cookie").is_none(), "{client:?}");
        let body = expect_json(resp, 200).await;
        let token = body["refreshToken"].as_str().unwrap().to_owned();
        assert!(token.len() >= 32, "{body}");
        // Native sessions keep their Matrix device and token (the contract's field).
        assert!(
            body["matrixAccessToken"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "{body}"
        );
        let (web, device) = session_row(&app, &token);
        assert!(!web && device.is_some(), "{web} {device:?}");
        let fresh = refresh(&app, &headers, json!({"refreshToken": token})).await;
        assert!(fresh.headers().get("set-cookie").is_none());
        let fresh = expect_json(fresh, 200).await;
        assert_eq!(
            crate::common::sorted_keys(&fresh),
            ["accessToken", "expiresIn"]
        );
    }
    let err = expect_error(
        refresh(&app, &[], json!({"refreshToken": null})).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(err["message"], "refreshToken: required");
}

#[tokio::test]
async fn over_https_the_cookie_is_secure_and_the_public_origin_is_same_site() {
    let app =
        TestApp::start_with_mail_and("[server]\nbase_url = \"https://sb.example\"\n".into()).await;
    let email = unique_email("websecure");
    let resp = web_verify(&app, &email, &[WEB, ("origin", "https://sb.example")]).await;
    let (pair, attrs) = parse_set_cookie(&resp);
    let body = expect_json(resp, 200).await;
    assert!(attrs.iter().any(|a| a == "secure"), "{attrs:?}");
    let access = body["accessToken"].as_str().unwrap().to_owned();

    // Switching accounts in the web app moves the cookie to the new account's session.
    let added = crate::common::add_account(
        &app,
        &crate::common::Session {
            email: email.clone(),
            access_token: access.clone(),
            refresh_token: String::new(),
            matrix_access_token: None,
            user: body["user"].clone(),
        },
        &unique_email("websecure-added"),
    )
    .await;
    let id = added["id"].as_str().unwrap();
    let switched = app
        .http
        .post(app.url(&format!("/api/accounts/{id}/switch")))
        .bearer_auth(&access)
        .header(WEB.0, WEB.1)
        .header("origin", "https://sb.example")
        .send()
        .await
        .unwrap();
    let (new_pair, attrs) = parse_set_cookie(&switched);
    let switched = expect_json(switched, 200).await;
    assert_eq!(switched["refreshToken"], "");
    assert!(switched["matrixAccessToken"].is_null(), "{switched}");
    assert_eq!(switched["account"]["id"], id);
    assert_ne!(new_pair, pair);
    assert!(attrs.iter().any(|a| a == "secure") && attrs.iter().any(|a| a == "httponly"));
    let cookie = new_pair.clone();
    let fresh = refresh(&app, &[WEB, ("cookie", &cookie)], json!({})).await;
    let fresh = expect_json(fresh, 200).await;
    let me = app
        .get_auth("/api/auth/me", fresh["accessToken"].as_str().unwrap())
        .await;
    assert_eq!(expect_json(me, 200).await["id"], id);
    // A switch without the header still hands the token over in the body.
    let plain = app
        .http
        .post(app.url(&format!("/api/accounts/{id}/switch")))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    assert!(plain.headers().get("set-cookie").is_none());
    let plain = expect_json(plain, 200).await;
    assert!(plain["refreshToken"]
        .as_str()
        .is_some_and(|t| t.len() >= 32));
}
