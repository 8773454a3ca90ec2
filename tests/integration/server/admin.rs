//! Operator endpoints `/api/admin/*` and the `switchboard user …` commands they share
//! logic with, against the running binary.

use reqwest::Method;
use serde_json::json;

use crate::common::client::{ApiResult, Refusal};
use crate::common::*;

/// A server whose `auth.admin_emails` lists a fresh address, and that administrator signed
/// in. `extra` is appended to the config.
pub async fn admin_app(extra: &str) -> (TestApp, Session) {
    let email = unique_email("admin");
    let app =
        TestApp::start_with_mail_and(format!("[auth]\nadmin_emails = [\"{email}\"]\n\n{extra}"))
            .await;
    let admin = app.sign_in(&email, None).await;
    assert_eq!(admin.user["isAdmin"], true, "{}", admin.user);
    (app, admin)
}

pub fn user_id(s: &Session) -> String {
    s.user["id"].as_str().expect("user id").to_owned()
}

/// `PUT /api/admin/users/{user_id}/subscription` as `admin`.
pub async fn put_subscription(
    app: &TestApp,
    admin: &Session,
    user_id: &str,
    body: serde_json::Value,
) -> ApiResult {
    app.user(admin)
        .admin()
        .set_subscription(user_id, body)
        .await
}

/// Runs `switchboard user ARGS… --config <the app's config>` while the server runs.
pub fn user_cli(app: &TestApp, args: &[&str]) -> String {
    let config = app.config_path.to_str().unwrap();
    let mut all = vec!["user"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--config", config]);
    let (status, out, err) = run_cli(&all, app.dir.path());
    assert!(status.success(), "switchboard {all:?} failed: {out}{err}");
    out
}

fn assert_user_shape(u: &serde_json::Value) {
    // Exactly the user's own profile object (`/api/auth/me`): no sealed column or key
    // material (`emailEnc`, `dekWrapped`, …) can slip into the admin view unnoticed.
    let mut keys: Vec<&str> = u
        .as_object()
        .expect("object")
        .keys()
        .map(|k| k.as_str())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "avatarUrl",
            "createdAt",
            "displayName",
            "email",
            "id",
            "isAdmin",
            "matrixUserId",
            "onboardingCompleted",
            "subscription",
            "updatedAt",
            "username",
        ],
        "{u}"
    );
    assert!(u["subscription"]["active"].is_boolean(), "{u}");
    assert!(u["subscription"].get("until").is_some(), "{u}");
    assert!(u["isAdmin"].is_boolean(), "{u}");
}

#[tokio::test]
async fn an_admin_from_the_config_lists_users_with_pagination() {
    let (app, admin) = admin_app("").await;
    let a = app.sign_up("listed-a").await;
    let b = app.sign_up("listed-b").await;

    let admin_api = app.user(&admin).admin();
    let body = admin_api.users("").await.unwrap();
    let users = body["users"].as_array().expect("users");
    assert_eq!(users.len(), 3, "{body}");
    users.iter().for_each(assert_user_shape);
    assert_eq!(
        body["pagination"],
        json!({"total": 3, "limit": 50, "offset": 0, "hasMore": false})
    );
    let find = |id: &serde_json::Value| {
        users
            .iter()
            .find(|u| &u["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {body}"))
    };
    let listed_admin = find(&admin.user["id"]);
    assert_eq!(listed_admin["isAdmin"], true);
    assert_eq!(listed_admin["email"], admin.email.to_lowercase());
    assert_eq!(find(&a.user["id"])["isAdmin"], false);
    let listed_b = find(&b.user["id"]);
    assert_eq!(listed_b["email"], b.email.to_lowercase());
    assert!(listed_b["matrixUserId"]
        .as_str()
        .is_some_and(|m| m.starts_with('@')));
    assert_eq!(
        listed_b["subscription"],
        json!({"active": true, "until": null})
    );

    // Pages are slices of the same stable order.
    let page = admin_api.users("limit=1&offset=1").await.unwrap();
    assert_eq!(page["users"].as_array().unwrap().len(), 1);
    assert_eq!(page["users"][0]["id"], users[1]["id"]);
    assert_eq!(
        page["pagination"],
        json!({"total": 3, "limit": 1, "offset": 1, "hasMore": true})
    );
    let last = admin_api.users("limit=2&offset=2").await.unwrap();
    assert_eq!(last["users"].as_array().unwrap().len(), 1);
    assert_eq!(last["users"][0]["id"], users[2]["id"]);
    assert_eq!(last["pagination"]["hasMore"], false);
    let past = admin_api.users("offset=10").await.unwrap();
    assert_eq!(past["users"], json!([]));
    assert_eq!(past["pagination"]["hasMore"], false);
    let max = admin_api.users("limit=100").await.unwrap();
    assert_eq!(max["pagination"]["limit"], 100);
}

#[tokio::test]
async fn page_parameters_outside_their_range_are_400_not_clamped() {
    let (app, admin) = admin_app("").await;
    for query in [
        "limit=0",
        "limit=101",
        "limit=-1",
        "offset=-1",
        "limit=abc",
        "offset=1.5",
    ] {
        let users = app.user(&admin).admin().users(query).await;
        users.refused(400, "invalid_request");
    }
}

#[tokio::test]
async fn non_admins_get_403_admin_required_and_tokens_get_forbidden_for_api_token() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("plain").await;
    let uid = user_id(&user);
    let calls = [
        (Method::GET, "/api/admin/users".to_owned(), None),
        (Method::GET, format!("/api/admin/users/{uid}"), None),
        (
            Method::PUT,
            format!("/api/admin/users/{uid}/subscription"),
            Some(json!({"active": true})),
        ),
        (
            Method::POST,
            format!("/api/admin/users/{uid}/promote"),
            None,
        ),
    ];
    for (method, path, body) in &calls {
        let resp = app
            .send(method.clone(), path, Some(&user.access_token), body.clone())
            .await;
        let err = expect_error(resp, 403, "admin_required").await;
        assert!(
            err["message"].as_str().unwrap().contains("administrators"),
            "{err}"
        );
        let resp = app.send(method.clone(), path, None, body.clone()).await;
        expect_error(resp, 401, "unauthorized").await;
    }
    // A personal token of the administrator is not an administrator.
    let token = app.user(&admin).tokens().create_named("ops").await.token;
    for (method, path, body) in &calls {
        let resp = app
            .send(method.clone(), path, Some(&token), body.clone())
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    // The refused subscription change and promotion did not happen.
    let shown = app.user(&admin).admin().user(&uid).await.unwrap();
    assert_eq!(shown["subscription"]["active"], true);
    assert_eq!(shown["isAdmin"], false);
}

#[tokio::test]
async fn an_admin_promotes_a_user_over_the_api_and_unknown_ids_are_404() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("raised").await;
    let uid = user_id(&user);
    app.user(&user)
        .admin()
        .users("")
        .await
        .refused(403, "admin_required");

    let resp = app
        .send(
            Method::POST,
            &format!("/api/admin/users/{uid}/promote"),
            Some(&admin.access_token),
            None,
        )
        .await;
    let promoted = expect_json(resp, 200).await;
    assert_eq!(promoted["id"], uid.as_str());
    assert_eq!(promoted["isAdmin"], true);
    // The user's own session passes the admin check from its next request.
    let body = app.user(&user).admin().users("").await.unwrap();
    assert!(body["users"].as_array().unwrap().len() >= 2, "{body}");
    // An e-mail is not an id on the API, and unknown ids change nothing.
    for who in [uuid::Uuid::new_v4().to_string(), user.email.clone()] {
        let resp = app
            .send(
                Method::POST,
                &format!("/api/admin/users/{who}/promote"),
                Some(&admin.access_token),
                None,
            )
            .await;
        expect_error(resp, 404, "not_found").await;
    }
}

#[tokio::test]
async fn promoting_a_user_with_the_cli_makes_it_an_admin_at_once() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("promoted").await;
    assert_eq!(user.user["isAdmin"], false);
    let users = app.user(&user).admin().users("").await;
    users.refused(403, "admin_required");

    let out = user_cli(&app, &["promote", &user.email]);
    assert!(out.contains("promoted to admin"), "{out}");
    assert!(out.contains(&user_id(&user)), "{out}");

    // The same access token now passes the admin check.
    let body = app.user(&user).admin().users("").await.unwrap();
    assert_eq!(body["users"][0]["isAdmin"], true);
    let me = expect_json(app.get_auth("/api/auth/me", &user.access_token).await, 200).await;
    assert_eq!(me["isAdmin"], true);
}

#[tokio::test]
async fn showing_a_user_and_unknown_ids_are_404() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("shown").await;
    let uid = user_id(&user);
    let shown = app.user(&admin).admin().user(&uid).await.unwrap();
    assert_user_shape(&shown);
    assert_eq!(shown["id"], uid.as_str());
    assert_eq!(shown["email"], user.email.to_lowercase());
    assert_eq!(shown["matrixUserId"], user.user["matrixUserId"]);
    assert_eq!(shown["createdAt"], user.user["createdAt"]);
    // The admin view is the user's own profile, field for field.
    let me = expect_json(app.get_auth("/api/auth/me", &user.access_token).await, 200).await;
    assert_eq!(shown, me);

    let unknown = uuid::Uuid::new_v4();
    for path in [
        unknown.to_string(),
        "not-a-uuid".to_owned(),
        // An e-mail is not an id on the API (the CLI accepts both).
        user.email.clone(),
    ] {
        let shown = app.user(&admin).admin().user(&path).await;
        shown.refused(404, "not_found");
    }
    put_subscription(&app, &admin, &unknown.to_string(), json!({"active": false}))
        .await
        .refused(404, "not_found");
}

#[tokio::test]
async fn an_admin_sets_a_subscription_until_a_date_lapses_and_renews_it() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("subscriber").await;
    let uid = user_id(&user);

    let until_secs = chrono::Utc::now().timestamp() + 10 * 86_400;
    // Any offset is accepted; the answer is in UTC.
    let until = chrono::DateTime::from_timestamp(until_secs, 0)
        .unwrap()
        .with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap())
        .to_rfc3339();
    let body = put_subscription(&app, &admin, &uid, json!({"active": true, "until": until}))
        .await
        .unwrap();
    assert_user_shape(&body);
    assert_eq!(body["id"], uid.as_str());
    assert_eq!(body["subscription"]["active"], true);
    assert_eq!(secs(&body["subscription"]["until"]), until_secs);
    let me = expect_json(app.get_auth("/api/auth/me", &user.access_token).await, 200).await;
    assert_eq!(me["subscription"]["active"], true);
    assert_eq!(secs(&me["subscription"]["until"]), until_secs);

    let body = put_subscription(&app, &admin, &uid, json!({"active": false}))
        .await
        .unwrap();
    assert_eq!(
        body["subscription"],
        json!({"active": false, "until": null})
    );

    let body = put_subscription(&app, &admin, &uid, json!({"active": true}))
        .await
        .unwrap();
    assert_eq!(body["subscription"], json!({"active": true, "until": null}));

    // A date alone means the end of that day (UTC).
    let day = (chrono::Utc::now() + chrono::Duration::days(3))
        .format("%Y-%m-%d")
        .to_string();
    let body = put_subscription(&app, &admin, &uid, json!({"active": true, "until": day}))
        .await
        .unwrap();
    assert_eq!(
        secs(&body["subscription"]["until"]),
        secs(&json!(format!("{day}T23:59:59Z")))
    );
}

#[tokio::test]
async fn bad_subscription_input_is_400_and_changes_nothing() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("badsub").await;
    let uid = user_id(&user);
    let past = (chrono::Utc::now() - chrono::Duration::minutes(1)).to_rfc3339();
    let future = (chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339();
    for body in [
        json!({"active": true, "until": past}),
        json!({"active": true, "until": "next tuesday"}),
        json!({"active": true, "until": ""}),
        json!({"active": false, "until": future}),
        json!({"active": "yes"}),
        json!({"until": future}),
        json!({}),
    ] {
        let err = put_subscription(&app, &admin, &uid, body.clone()).await;
        assert_eq!(err.unwrap_err().pair(), (400, "invalid_request"), "{body}");
    }
    let resp = app
        .http
        .put(app.url(&format!("/api/admin/users/{uid}/subscription")))
        .bearer_auth(&admin.access_token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_request").await;
    let shown = app.user(&admin).admin().user(&uid).await.unwrap();
    assert_eq!(
        shown["subscription"],
        json!({"active": true, "until": null})
    );
}

#[tokio::test]
async fn the_cli_lists_shows_and_sets_subscriptions_on_the_same_data() {
    let (app, admin) = admin_app("").await;
    let user = app.sign_up("cli-sub").await;
    let uid = user_id(&user);
    let out = user_cli(&app, &["list"]);
    assert!(
        out.contains(&uid) && out.contains(&user.email.to_lowercase()),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{}  {}  admin=true",
            user_id(&admin),
            admin.email.to_lowercase()
        )),
        "{out}"
    );

    let out = user_cli(&app, &["subscription", &uid, "--until", "2999-12-31"]);
    assert!(out.contains("active until 2999-12-31T23:59:59"), "{out}");
    let shown = app.user(&admin).admin().user(&uid).await.unwrap();
    assert_eq!(shown["subscription"]["active"], true);
    assert_eq!(
        secs(&shown["subscription"]["until"]),
        secs(&json!("2999-12-31T23:59:59Z"))
    );
    let out = user_cli(&app, &["show", &user.email]);
    assert!(out.contains("subscription=active until"), "{out}");

    // A past end date is refused by the CLI as by the API.
    let config = app.config_path.to_str().unwrap();
    let (status, _, err) = run_cli(
        &[
            "user",
            "subscription",
            &uid,
            "--until",
            "2000-01-01",
            "--config",
            config,
        ],
        app.dir.path(),
    );
    assert!(!status.success());
    assert!(err.contains("until"), "{err}");
}

/// Unix seconds of an RFC 3339 string value.
fn secs(v: &serde_json::Value) -> i64 {
    let text = v.as_str().unwrap_or_else(|| panic!("not a date-time: {v}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .timestamp()
}
