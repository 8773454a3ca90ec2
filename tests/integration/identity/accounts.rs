//! Account groups: adding e-mail identities by mailed code (real SMTP), listing, switching
//! (tokens checked on the API and on the real Synapse), editing and removing.

use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;

async fn list(app: &TestApp, token: &str) -> Value {
    app.api(token)
        .accounts()
        .list()
        .await
        .expect("account list")
}

/// How many accounts the holder of `token` lists.
async fn count(app: &TestApp, token: &str) -> usize {
    app.api(token).accounts().ids().await.len()
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
    let mine = app.user(&primary).accounts();

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
    let switched = mine.switch(&second_id).await.unwrap();
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

    let me = app.api(&access).me().await.unwrap();
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
    let active = app.api(&access).accounts().active().await.unwrap();
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
    let active = mine.active().await.unwrap();
    assert_eq!(active["account"]["id"], primary_id.as_str());
    assert_eq!(active["account"]["isPrimary"], true);
    let token = active["matrixAccessToken"].as_str().unwrap();
    assert_eq!(
        matrix_whoami(token).await["user_id"],
        primary.user["matrixUserId"]
    );

    // Switching back from the second account works too.
    let back = app.api(&access).accounts().switch(&primary_id).await;
    let back = back.unwrap();
    let me = app.api(back["accessToken"].as_str().unwrap()).me().await;
    let me = me.unwrap();
    assert_eq!(me["id"], primary_id.as_str());
}

#[tokio::test]
async fn adding_an_address_twice_or_the_own_address_is_account_already_added() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-twice").await;
    let email = unique_email("acc-twice-2");
    add_account(&app, &primary, &email).await;

    for address in [email.clone(), email.to_uppercase(), primary.email.clone()] {
        let mine = app.user(&primary).accounts();
        let asked = mine.add_code(&address).await;
        asked.refused(400, "account_already_added");
        let verified = mine.add_verify(json!({"email": address, "code": "123456"}));
        verified.await.refused(400, "account_already_added");
    }
    assert_eq!(count(&app, &primary.access_token).await, 2);
}

#[tokio::test]
async fn a_wrong_code_is_invalid_code_and_the_right_one_still_works() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-wrong").await;
    let email = unique_email("acc-wrong-2");
    let mine = app.user(&primary).accounts();
    mine.add_code(&email).await.unwrap();
    let code = mail::wait_for_code(&email, 0).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let verify = |code: String| mine.add_verify(json!({"email": email, "code": code}));
    verify(wrong.to_owned()).await.refused(400, "invalid_code");
    assert_eq!(count(&app, &primary.access_token).await, 1);
    let ok = verify(code.clone()).await.unwrap();
    assert_eq!(ok["account"]["email"], email.to_lowercase());
    // Single use.
    verify(code).await.refused(400, "account_already_added");
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
    let my_accounts = app.user(&mine).accounts();
    let verified = my_accounts.add_verify(json!({"email": email, "code": sign_in_code}));
    verified.await.refused(400, "invalid_code");

    // A code I requested cannot be used by another group, and stays usable for me.
    my_accounts.add_code(&email).await.unwrap();
    let code = mail::wait_for_code(&email, 1).await;
    let body = json!({"email": email, "code": code});
    let verified = app.user(&theirs).accounts().add_verify(body.clone()).await;
    verified.refused(400, "invalid_code");
    assert_eq!(count(&app, &theirs.access_token).await, 1);
    let added = my_accounts.add_verify(body).await.unwrap();
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
    assert_eq!(count(&app, &again.access_token).await, 2);

    // Another user can add neither my added account nor me (a primary with accounts).
    let other = app.sign_up("acc-grp-b").await;
    for address in [loner.email.clone(), mine.email.clone()] {
        let asked = app.user(&other).accounts().add_code(&address).await;
        asked.refused(400, "account_in_other_group");
    }
    // Any account of a group may add: my added account invites a stand-alone user.
    let asked = app.user(&loner).accounts().add_code(&other.email).await;
    asked.unwrap();
}

#[tokio::test]
async fn the_primary_cannot_be_removed_and_a_removed_account_stands_alone() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-rm").await;
    let primary_id = primary.user["id"].as_str().unwrap().to_owned();
    let email = unique_email("acc-rm-2");
    let added = add_account(&app, &primary, &email).await;
    let added_id = added["id"].as_str().unwrap().to_owned();
    let switched = app
        .user(&primary)
        .accounts()
        .switch(&added_id)
        .await
        .unwrap();

    let mine = app.user(&primary).accounts();
    let removed = mine.remove(&primary_id).await;
    let body = removed.refused(400, "cannot_remove_primary");
    assert!(body["message"].as_str().unwrap().contains("primary"));

    let body = mine.remove(&added_id).await.unwrap();
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
    mine.remove(&added_id).await.refused(404, "not_found");

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
    let switched = app
        .user(&primary)
        .accounts()
        .switch(added_id)
        .await
        .unwrap();
    let token = switched["accessToken"].as_str().unwrap();
    app.api(token).accounts().remove(added_id).await.unwrap();
    assert_eq!(ids(&list(&app, token).await), vec![added_id.to_owned()]);
    assert_eq!(count(&app, &primary.access_token).await, 1);
}

#[tokio::test]
async fn patch_updates_display_name_and_avatar_of_an_account_in_the_group() {
    let app = TestApp::start_with_mail().await;
    let primary = app.sign_up("acc-patch").await;
    let added = add_account(&app, &primary, &unique_email("acc-patch-2")).await;
    let added_id = added["id"].as_str().unwrap().to_owned();
    let mine = app.user(&primary).accounts();
    let patch = |body: Value| mine.update(&added_id, body);

    let body = patch(json!({"displayName": "  Work  ", "avatarUrl": "https://example.org/w.png"}))
        .await
        .unwrap();
    assert_eq!(body["account"]["id"], added_id.as_str());
    assert_eq!(body["account"]["displayName"], "Work");
    assert_eq!(body["account"]["avatarUrl"], "https://example.org/w.png");
    let body = patch(json!({"displayName": "Work 2"})).await.unwrap();
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
        patch(bad).await.refused(400, "invalid_request");
    }
    // The own (primary) account can be edited too.
    let primary_id = primary.user["id"].as_str().unwrap();
    let home = mine
        .update(primary_id, json!({"displayName": "Home"}))
        .await;
    assert_eq!(home.unwrap()["account"]["displayName"], "Home");
    let me = app.user(&primary).me().await.unwrap();
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
        let theirs = app.api(token).accounts();
        theirs.switch(id).await.refused(404, "not_found");
        let patched = theirs.update(id, json!({"displayName": "x"})).await;
        patched.refused(404, "not_found");
        theirs.remove(id).await.refused(404, "not_found");
    }
    assert_eq!(count(&app, &mine.access_token).await, 2);
    assert!(list(&app, &mine.access_token).await["accounts"][1]["displayName"].is_null());
}

#[tokio::test]
async fn bad_account_input_is_400_or_404_json_never_500() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("acc-bad").await;
    let token = Some(me.access_token.as_str());
    let mine = app.user(&me).accounts();
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
    let verified = mine.add_verify(json!({"email": unique_email("none"), "code": "123456"}));
    verified.await.refused(400, "invalid_code");

    let random = uuid::Uuid::new_v4().to_string();
    for (id, status, code) in [
        (random.as_str(), 404, "not_found"),
        ("not-a-uuid", 400, "invalid_request"),
        ("12345", 400, "invalid_request"),
    ] {
        mine.switch(id).await.refused(status, code);
        let patched = mine.update(id, json!({"displayName": "x"})).await;
        patched.refused(status, code);
        mine.remove(id).await.refused(status, code);
    }

    // Without a token: 401.
    let anonymous = app.anonymous().accounts();
    anonymous.list().await.refused(401, "unauthorized");
    let asked = anonymous.add_code("a@b.test").await;
    asked.refused(401, "unauthorized");
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
    let mine = app.user(&me).accounts();
    for _ in 0..2 {
        mine.add_code(&email).await.unwrap();
    }
    let refused = mine.add_code(&email).await;
    assert!(refused
        .as_ref()
        .unwrap_err()
        .headers
        .get("retry-after")
        .is_some());
    refused.refused(429, "rate_limited");
    // The newest add code works.
    let code = mail::wait_for_code(&email, 2).await;
    let verified = mine.add_verify(json!({"email": email, "code": code}));
    verified.await.unwrap();
}
