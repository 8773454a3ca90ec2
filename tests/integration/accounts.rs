//! Account groups: adding e-mail identities by mailed code (real SMTP), listing, switching
//! (tokens checked on the API and on the real Synapse), editing and removing.

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;

async fn list(app: &TestApp, token: &str) -> Value {
    expect_json(app.get_auth("/api/accounts", token).await, 200).await
}

fn ids(list: &Value) -> Vec<String> {
    list["accounts"]
        .as_array()
        .expect("accounts")
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn matrix_whoami(token: &str) -> Value {
    reqwest::Client::new()
        .get(format!(
            "{}/_matrix/client/v3/account/whoami",
            synapse().base_url
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_address_added_by_mailed_code_can_be_listed_and_switched_to() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-primary").await;
    let primary_id = primary.user["id"].as_str().unwrap().to_owned();
    let second_email = unique_email("Acc-Second");

    let added = add_account(&app, &primary, &second_email).await;
    assert_eq!(added["email"], second_email.to_lowercase());
    assert_eq!(added["isPrimary"], false);
    assert_eq!(added["isActive"], false);
    let second_id = added["id"].as_str().unwrap().to_owned();
    assert_ne!(second_id, primary_id);

    // Listed with the primary first and the caller active.
    let listed = list(&app, &primary.access_token).await;
    assert_eq!(ids(&listed), vec![primary_id.clone(), second_id.clone()]);
    let accounts = listed["accounts"].as_array().unwrap();
    assert_eq!(accounts[0]["isPrimary"], true);
    assert_eq!(accounts[0]["isActive"], true);
    assert_eq!(accounts[0]["email"], primary.email.to_lowercase());
    assert_eq!(accounts[1]["isPrimary"], false);
    assert_eq!(accounts[1]["isActive"], false);
    assert_eq!(listed["activeAccount"]["id"], primary_id.as_str());

    // Switching gives the second account's own tokens.
    let path = format!("/api/accounts/{second_id}/switch");
    let switched = expect_json(
        app.post_json(&path, Some(&primary.access_token), json!({}))
            .await,
        200,
    )
    .await;
    assert_eq!(switched["account"]["id"], second_id.as_str());
    assert_eq!(switched["account"]["isActive"], true);
    let access = switched["accessToken"]
        .as_str()
        .expect("accessToken")
        .to_owned();
    let refresh = switched["refreshToken"]
        .as_str()
        .expect("refreshToken")
        .to_owned();
    let matrix = switched["matrixAccessToken"]
        .as_str()
        .expect("matrixAccessToken")
        .to_owned();

    let me = expect_json(app.get_auth("/api/auth/me", &access).await, 200).await;
    assert_eq!(me["id"], second_id.as_str());
    assert_eq!(me["email"], second_email.to_lowercase());
    let whoami = matrix_whoami(&matrix).await;
    assert_eq!(whoami["user_id"], me["matrixUserId"]);
    assert_ne!(me["matrixUserId"], primary.user["matrixUserId"]);

    let resp = app
        .post_json("/api/auth/refresh", None, json!({"refreshToken": refresh}))
        .await;
    expect_json(resp, 200).await;

    // From the switched token the second account is the active one.
    let active = expect_json(app.get_auth("/api/accounts/active", &access).await, 200).await;
    assert_eq!(active["account"]["id"], second_id.as_str());
    assert_eq!(active["account"]["isActive"], true);
    assert_eq!(active["account"]["isPrimary"], false);
    assert_eq!(active["matrixAccessToken"], matrix.as_str());
    let listed = list(&app, &access).await;
    assert_eq!(ids(&listed), vec![primary_id.clone(), second_id.clone()]);
    assert_eq!(listed["accounts"][0]["isActive"], false);
    assert_eq!(listed["accounts"][1]["isActive"], true);
    assert_eq!(listed["activeAccount"]["id"], second_id.as_str());

    // The active account of the primary's token is the primary, with its Matrix token.
    let active = expect_json(
        app.get_auth("/api/accounts/active", &primary.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(active["account"]["id"], primary_id.as_str());
    assert_eq!(active["account"]["isPrimary"], true);
    let token = active["matrixAccessToken"].as_str().unwrap();
    assert_eq!(
        matrix_whoami(token).await["user_id"],
        primary.user["matrixUserId"]
    );

    // Switching back from the second account works too.
    let path = format!("/api/accounts/{primary_id}/switch");
    let back = expect_json(app.post_json(&path, Some(&access), json!({})).await, 200).await;
    let me = expect_json(
        app.get_auth("/api/auth/me", back["accessToken"].as_str().unwrap())
            .await,
        200,
    )
    .await;
    assert_eq!(me["id"], primary_id.as_str());
}

#[tokio::test]
async fn adding_an_address_twice_or_the_own_address_is_account_already_added() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-twice").await;
    let email = unique_email("acc-twice-2");
    add_account(&app, &primary, &email).await;

    for address in [email.clone(), email.to_uppercase(), primary.email.clone()] {
        let resp = app
            .post_json(
                "/api/accounts/add/code",
                Some(&primary.access_token),
                json!({"email": address}),
            )
            .await;
        expect_error(resp, 400, "account_already_added").await;
        let resp = app
            .post_json(
                "/api/accounts/add/verify",
                Some(&primary.access_token),
                json!({"email": address, "code": "123456"}),
            )
            .await;
        expect_error(resp, 400, "account_already_added").await;
    }
    assert_eq!(
        list(&app, &primary.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn a_wrong_code_is_invalid_code_and_the_right_one_still_works() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-wrong").await;
    let email = unique_email("acc-wrong-2");
    let resp = app
        .post_json(
            "/api/accounts/add/code",
            Some(&primary.access_token),
            json!({"email": email}),
        )
        .await;
    expect_json(resp, 200).await;
    let code = mail::wait_for_code(&email, 0).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let verify = |code: String| {
        let app = &app;
        let token = primary.access_token.clone();
        let email = email.clone();
        async move {
            app.post_json(
                "/api/accounts/add/verify",
                Some(&token),
                json!({"email": email, "code": code}),
            )
            .await
        }
    };
    expect_error(verify(wrong.to_owned()).await, 400, "invalid_code").await;
    assert_eq!(
        list(&app, &primary.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let ok = expect_json(verify(code.clone()).await, 200).await;
    assert_eq!(ok["account"]["email"], email.to_lowercase());
    // Single use.
    expect_error(verify(code).await, 400, "account_already_added").await;
}

#[tokio::test]
async fn sign_in_codes_and_codes_requested_by_another_group_do_not_add_accounts() {
    let app = TestApp::start_with_mail().await;
    let mine = app.sign_up("acc-mine").await;
    let theirs = app.sign_up("acc-theirs").await;
    let email = unique_email("acc-contested");

    // A sign-in code for the address is not an add-account code.
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": email}))
            .await,
        200,
    )
    .await;
    let sign_in_code = mail::wait_for_code(&email, 0).await;
    let resp = app
        .post_json(
            "/api/accounts/add/verify",
            Some(&mine.access_token),
            json!({"email": email, "code": sign_in_code}),
        )
        .await;
    expect_error(resp, 400, "invalid_code").await;

    // A code I requested cannot be used by another group, and stays usable for me.
    let resp = app
        .post_json(
            "/api/accounts/add/code",
            Some(&mine.access_token),
            json!({"email": email}),
        )
        .await;
    expect_json(resp, 200).await;
    let code = mail::wait_for_code(&email, 1).await;
    let body = json!({"email": email, "code": code});
    let resp = app
        .post_json(
            "/api/accounts/add/verify",
            Some(&theirs.access_token),
            body.clone(),
        )
        .await;
    expect_error(resp, 400, "invalid_code").await;
    assert_eq!(
        list(&app, &theirs.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let resp = app
        .post_json("/api/accounts/add/verify", Some(&mine.access_token), body)
        .await;
    let added = expect_json(resp, 200).await;
    assert_eq!(added["account"]["email"], email.to_lowercase());
}

#[tokio::test]
async fn an_existing_stand_alone_user_can_be_added_but_not_a_member_of_another_group() {
    let app = TestApp::start_with_mail().await;
    let mine = app.sign_up("acc-grp-a").await;
    let loner = app.sign_up("acc-loner").await;
    let loner_id = loner.user["id"].as_str().unwrap().to_owned();

    // The stand-alone user joins my group and keeps its identity.
    let added = add_account(&app, &mine, &loner.email).await;
    assert_eq!(added["id"], loner_id.as_str());
    let from_loner = list(&app, &loner.access_token).await;
    assert_eq!(
        ids(&from_loner),
        vec![
            mine.user["id"].as_str().unwrap().to_owned(),
            loner_id.clone()
        ]
    );
    assert_eq!(from_loner["activeAccount"]["id"], loner_id.as_str());
    let again = app.sign_in(&loner.email, None).await;
    assert_eq!(again.user["id"], loner_id.as_str());
    assert_eq!(
        list(&app, &again.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Another user can add neither my added account nor me (a primary with accounts).
    let other = app.sign_up("acc-grp-b").await;
    for address in [loner.email.clone(), mine.email.clone()] {
        let resp = app
            .post_json(
                "/api/accounts/add/code",
                Some(&other.access_token),
                json!({"email": address}),
            )
            .await;
        expect_error(resp, 400, "account_in_other_group").await;
    }
    // Any account of a group may add: my added account invites a stand-alone user.
    let resp = app
        .post_json(
            "/api/accounts/add/code",
            Some(&loner.access_token),
            json!({"email": other.email}),
        )
        .await;
    expect_json(resp, 200).await;
}

#[tokio::test]
async fn the_primary_cannot_be_removed_and_a_removed_account_stands_alone() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-rm").await;
    let primary_id = primary.user["id"].as_str().unwrap().to_owned();
    let email = unique_email("acc-rm-2");
    let added = add_account(&app, &primary, &email).await;
    let added_id = added["id"].as_str().unwrap().to_owned();
    let switched = expect_json(
        app.post_json(
            &format!("/api/accounts/{added_id}/switch"),
            Some(&primary.access_token),
            json!({}),
        )
        .await,
        200,
    )
    .await;

    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/accounts/{primary_id}"),
            Some(&primary.access_token),
            None,
        )
        .await;
    let body = expect_error(resp, 400, "cannot_remove_primary").await;
    assert!(body["message"].as_str().unwrap().contains("primary"));

    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/accounts/{added_id}"),
            Some(&primary.access_token),
            None,
        )
        .await;
    let body = expect_json(resp, 200).await;
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(
        ids(&list(&app, &primary.access_token).await),
        vec![primary_id.clone()]
    );

    // Its switched session's refresh token is revoked; removing again is 404.
    let resp = app
        .post_json(
            "/api/auth/refresh",
            None,
            json!({"refreshToken": switched["refreshToken"]}),
        )
        .await;
    expect_error(resp, 401, "unauthorized").await;
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/accounts/{added_id}"),
            Some(&primary.access_token),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // The address still signs in, as a stand-alone account of its own.
    let alone = app.sign_in(&email, None).await;
    assert_eq!(alone.user["id"], added_id.as_str());
    let listed = list(&app, &alone.access_token).await;
    assert_eq!(ids(&listed), vec![added_id.clone()]);
    assert_eq!(listed["accounts"][0]["isPrimary"], true);
}

#[tokio::test]
async fn an_added_account_can_remove_itself() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-self").await;
    let added = add_account(&app, &primary, &unique_email("acc-self-2")).await;
    let added_id = added["id"].as_str().unwrap();
    let switched = expect_json(
        app.post_json(
            &format!("/api/accounts/{added_id}/switch"),
            Some(&primary.access_token),
            json!({}),
        )
        .await,
        200,
    )
    .await;
    let token = switched["accessToken"].as_str().unwrap();
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/accounts/{added_id}"),
            Some(token),
            None,
        )
        .await;
    expect_json(resp, 200).await;
    assert_eq!(ids(&list(&app, token).await), vec![added_id.to_owned()]);
    assert_eq!(
        list(&app, &primary.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn patch_updates_display_name_and_avatar_of_an_account_in_the_group() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-patch").await;
    let added = add_account(&app, &primary, &unique_email("acc-patch-2")).await;
    let added_id = added["id"].as_str().unwrap().to_owned();
    let path = format!("/api/accounts/{added_id}");
    let patch = |body: Value| {
        let app = &app;
        let token = primary.access_token.clone();
        let path = path.clone();
        async move {
            app.send(Method::PATCH, &path, Some(&token), Some(body))
                .await
        }
    };

    let body = expect_json(
        patch(json!({"displayName": "  Work  ", "avatarUrl": "https://example.org/w.png"})).await,
        200,
    )
    .await;
    assert_eq!(body["account"]["id"], added_id.as_str());
    assert_eq!(body["account"]["displayName"], "Work");
    assert_eq!(body["account"]["avatarUrl"], "https://example.org/w.png");
    let body = expect_json(patch(json!({"displayName": "Work 2"})).await, 200).await;
    assert_eq!(body["account"]["displayName"], "Work 2");
    assert_eq!(body["account"]["avatarUrl"], "https://example.org/w.png");
    let listed = list(&app, &primary.access_token).await;
    assert_eq!(listed["accounts"][1]["displayName"], "Work 2");

    for bad in [
        json!({"displayName": ""}),
        json!({"displayName": "x".repeat(256)}),
        json!({"avatarUrl": "http://insecure.example/a.png"}),
        json!({"avatarUrl": "not a uri"}),
    ] {
        expect_error(patch(bad).await, 400, "invalid_request").await;
    }
    // The own (primary) account can be edited too.
    let primary_path = format!("/api/accounts/{}", primary.user["id"].as_str().unwrap());
    let resp = app
        .send(
            Method::PATCH,
            &primary_path,
            Some(&primary.access_token),
            Some(json!({"displayName": "Home"})),
        )
        .await;
    assert_eq!(
        expect_json(resp, 200).await["account"]["displayName"],
        "Home"
    );
    let me = expect_json(
        app.get_auth("/api/auth/me", &primary.access_token).await,
        200,
    )
    .await;
    assert_eq!(me["displayName"], "Home");
}

#[tokio::test]
async fn another_group_cannot_switch_to_patch_or_remove_my_accounts() {
    let app = TestApp::start_with_mail().await;
    let mine = app.sign_up("acc-own").await;
    let added = add_account(&app, &mine, &unique_email("acc-own-2")).await;
    let stranger = app.sign_up("acc-stranger").await;
    let token = stranger.access_token.as_str();
    for id in [
        added["id"].as_str().unwrap(),
        mine.user["id"].as_str().unwrap(),
    ] {
        let resp = app
            .post_json(
                &format!("/api/accounts/{id}/switch"),
                Some(token),
                json!({}),
            )
            .await;
        expect_error(resp, 404, "not_found").await;
        let resp = app
            .send(
                Method::PATCH,
                &format!("/api/accounts/{id}"),
                Some(token),
                Some(json!({"displayName": "x"})),
            )
            .await;
        expect_error(resp, 404, "not_found").await;
        let resp = app
            .send(
                Method::DELETE,
                &format!("/api/accounts/{id}"),
                Some(token),
                None,
            )
            .await;
        expect_error(resp, 404, "not_found").await;
    }
    assert_eq!(
        list(&app, &mine.access_token).await["accounts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(list(&app, &mine.access_token).await["accounts"][1]["displayName"].is_null());
}

#[tokio::test]
async fn bad_account_input_is_400_or_404_json_never_500() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("acc-bad").await;
    let token = Some(me.access_token.as_str());
    let bodies = [
        ("/api/accounts/add/code", json!({"email": "not-an-address"})),
        ("/api/accounts/add/code", json!({})),
        ("/api/accounts/add/code", json!({"email": 5})),
        (
            "/api/accounts/add/verify",
            json!({"email": "a@b.test", "code": "12345"}),
        ),
        (
            "/api/accounts/add/verify",
            json!({"email": "a@b.test", "code": "1234567"}),
        ),
        (
            "/api/accounts/add/verify",
            json!({"email": "a@b.test", "code": "abcdef"}),
        ),
        (
            "/api/accounts/add/verify",
            json!({"email": "bad", "code": "123456"}),
        ),
        ("/api/accounts/add/verify", json!({"email": "a@b.test"})),
    ];
    for (path, body) in bodies {
        expect_error(
            app.post_json(path, token, body).await,
            400,
            "invalid_request",
        )
        .await;
    }
    // No code was ever sent to this address.
    let resp = app
        .post_json(
            "/api/accounts/add/verify",
            token,
            json!({"email": unique_email("none"), "code": "123456"}),
        )
        .await;
    expect_error(resp, 400, "invalid_code").await;

    let random = uuid::Uuid::new_v4().to_string();
    for (id, status, code) in [
        (random.as_str(), 404, "not_found"),
        ("not-a-uuid", 400, "invalid_request"),
        ("12345", 400, "invalid_request"),
    ] {
        let resp = app
            .post_json(&format!("/api/accounts/{id}/switch"), token, json!({}))
            .await;
        expect_error(resp, status, code).await;
        let resp = app
            .send(
                Method::PATCH,
                &format!("/api/accounts/{id}"),
                token,
                Some(json!({"displayName": "x"})),
            )
            .await;
        expect_error(resp, status, code).await;
        let resp = app
            .send(Method::DELETE, &format!("/api/accounts/{id}"), token, None)
            .await;
        expect_error(resp, status, code).await;
    }

    // Without a token: 401.
    expect_error(app.get("/api/accounts").await, 401, "unauthorized").await;
    let resp = app
        .post_json("/api/accounts/add/code", None, json!({"email": "a@b.test"}))
        .await;
    expect_error(resp, 401, "unauthorized").await;
}

#[tokio::test]
async fn add_account_codes_share_the_three_per_ten_minutes_limit() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("acc-limit").await;
    let email = unique_email("acc-limit-2");
    // One sign-in code and two add codes use up the address's budget.
    expect_json(
        app.post_json("/api/auth/code", None, json!({"email": email}))
            .await,
        200,
    )
    .await;
    for _ in 0..2 {
        let resp = app
            .post_json(
                "/api/accounts/add/code",
                Some(&me.access_token),
                json!({"email": email}),
            )
            .await;
        expect_json(resp, 200).await;
    }
    let resp = app
        .post_json(
            "/api/accounts/add/code",
            Some(&me.access_token),
            json!({"email": email}),
        )
        .await;
    assert!(resp.headers().get("retry-after").is_some());
    expect_error(resp, 429, "rate_limited").await;
    // The newest add code works.
    let code = mail::wait_for_code(&email, 2).await;
    let resp = app
        .post_json(
            "/api/accounts/add/verify",
            Some(&me.access_token),
            json!({"email": email, "code": code}),
        )
        .await;
    expect_json(resp, 200).await;
}
