//! Creating, listing, validating, gating and revoking tokens.

use super::*;

#[tokio::test]
async fn creating_a_token_answers_201_with_a_52_character_csk_secret_shown_once() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("creator").await;
    let before = chrono::Utc::now().timestamp();
    let t = create_token(&app, &user, json!({"name": "  inbox export  "})).await;
    assert!(t.token.starts_with("csk_"), "{}", t.token);
    assert_eq!(t.token.len(), 52);
    assert!(
        t.token[4..].chars().all(|c| c.is_ascii_alphanumeric()),
        "{}",
        t.token
    );
    assert_eq!(t.body["lastFour"], &t.token[48..]);
    assert_eq!(t.body["name"], "inbox export");
    assert!(t.body["expiresAt"].is_null(), "{}", t.body);
    uuid::Uuid::parse_str(&t.id).expect("id is a UUID");
    let created = chrono::DateTime::parse_from_rfc3339(t.body["createdAt"].as_str().unwrap())
        .unwrap()
        .timestamp();
    assert!((before - 1..=before + 5).contains(&created), "{}", t.body);
    let keys = sorted_keys(&t.body);
    assert_eq!(
        keys,
        ["createdAt", "expiresAt", "id", "lastFour", "name", "token"]
    );

    let expiring = create_token(&app, &user, json!({"name": "one-off", "expiresInDays": 30})).await;
    let expires =
        chrono::DateTime::parse_from_rfc3339(expiring.body["expiresAt"].as_str().unwrap())
            .unwrap()
            .timestamp();
    let expected = before + 30 * 86_400;
    assert!(
        (expected - 1..=expected + 5).contains(&expires),
        "{}",
        expiring.body
    );

    // Stored as the SHA-256 of the secret only.
    let conn = db(&app);
    let (hash, last_four, version): (String, String, u32) = conn
        .query_row(
            "SELECT token_hash, last_four, allowlist_version FROM api_tokens WHERE id = ?1",
            [&t.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(hash, switchboard::crypto::sha256_hex(&t.token));
    assert_eq!(last_four, &t.token[48..]);
    assert_eq!(version, ALLOWLIST_VERSION);
    let dump: Vec<String> = conn
        .prepare("SELECT quote(id) || quote(user_id) || quote(name) || quote(token_hash) || quote(last_four) FROM api_tokens")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        !dump.concat().contains(&t.token[4..]),
        "the secret must not be stored"
    );
}

#[tokio::test]
async fn the_list_shows_every_token_but_never_a_secret() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("lister").await;
    let other = app.sign_up("lister-other").await;
    let first = create_token(&app, &user, json!({"name": "first"})).await;
    let second = create_token(&app, &user, json!({"name": "second", "expiresInDays": 90})).await;
    let foreign = create_token(&app, &other, json!({"name": "foreign"})).await;

    let resp = app
        .get_auth("/api/developer/tokens", &user.access_token)
        .await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    for secret in [&first.token, &second.token, &foreign.token] {
        assert!(
            !text.contains(secret.as_str()),
            "secret in the list: {text}"
        );
        assert!(!text.contains(&secret[4..]), "secret in the list: {text}");
    }
    let body: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["currentAllowlistVersion"], ALLOWLIST_VERSION);
    let tokens = body["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2, "only the caller's tokens: {body}");
    let ids: Vec<&str> = tokens.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&first.id.as_str()) && ids.contains(&second.id.as_str()));
    for t in tokens {
        let keys = sorted_keys(t);
        assert_eq!(
            keys,
            [
                "allowlistVersion",
                "createdAt",
                "expiresAt",
                "id",
                "lastFour",
                "lastUsedAt",
                "mcpActions",
                "name",
                "optedInVersion",
                "revokedAt"
            ]
        );
        assert!(t["lastUsedAt"].is_null() && t["revokedAt"].is_null(), "{t}");
        assert_eq!(t["allowlistVersion"], ALLOWLIST_VERSION);
    }
    let second_listed = tokens
        .iter()
        .find(|t| t["id"] == second.id.as_str())
        .unwrap();
    assert_eq!(second_listed["lastFour"], &second.token[48..]);
    assert_eq!(second_listed["expiresAt"], second.body["expiresAt"]);

    // Use is recorded.
    assert_passes_gate(&app, &first.token, ALLOWED).await;
    let used = app.user(&user).tokens().listed(&first.id).await;
    assert!(used["lastUsedAt"].is_string(), "{used}");
}

#[tokio::test]
async fn bad_token_input_is_400() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("badinput").await;
    for body in [
        json!({}),
        json!({"name": ""}),
        json!({"name": "   "}),
        json!({"name": "x".repeat(101)}),
        json!({"name": "ok", "expiresInDays": 0}),
        json!({"name": "ok", "expiresInDays": 366}),
        json!({"name": "ok", "expiresInDays": -5}),
        json!({"name": "ok", "expiresInDays": 1.5}),
        json!({"name": "ok", "expiresInDays": "30"}),
    ] {
        let err = app.user(&user).tokens().create(body.clone()).await;
        assert_eq!(err.unwrap_err().pair(), (400, "invalid_request"), "{body}");
    }
    // The bounds themselves are fine.
    create_token(
        &app,
        &user,
        json!({"name": "x".repeat(100), "expiresInDays": 1}),
    )
    .await;
    create_token(&app, &user, json!({"name": "year", "expiresInDays": 365})).await;
    create_token(
        &app,
        &user,
        json!({"name": "null expiry", "expiresInDays": null}),
    )
    .await;
    assert_eq!(
        list_tokens(&app, &user).await["tokens"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    app.anonymous()
        .tokens()
        .create(json!({"name": "anonymous"}))
        .await
        .refused(401, "unauthorized");
}

#[tokio::test]
async fn a_token_passes_the_gate_on_allowlisted_routes_and_gets_403_everywhere_else() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("gated").await;
    let t = create_token(&app, &user, json!({"name": "script"})).await;
    assert_passes_gate(&app, &t.token, ALLOWED).await;
    assert_passes_gate(&app, &t.token, "/api/bridges/configured").await;

    let doc: serde_json::Value =
        serde_yaml::from_str(&app.get("/openapi.yaml").await.text().await.unwrap()).unwrap();
    let mut denied = vec![
        (Method::GET, "/api/auth/me".to_owned(), None),
        (
            Method::PATCH,
            "/api/auth/profile".to_owned(),
            Some(json!({"displayName": "Script"})),
        ),
        (Method::POST, "/api/auth/logout".to_owned(), None),
        (Method::GET, "/api/developer/tokens".to_owned(), None),
        (
            Method::POST,
            "/api/developer/tokens".to_owned(),
            Some(json!({"name": "child"})),
        ),
        (
            Method::DELETE,
            format!("/api/developer/tokens/{}", t.id),
            None,
        ),
        (
            Method::PATCH,
            format!("/api/developer/tokens/{}", t.id),
            Some(json!({"optIn": true})),
        ),
        (Method::GET, "/api/admin/users".to_owned(), None),
    ];
    if doc["paths"]["/api/keys/info"]["get"].is_object() {
        denied.push((Method::GET, "/api/keys/info".to_owned(), None));
    }
    for (method, path, body) in denied {
        let resp = app.send(method.clone(), &path, Some(&t.token), body).await;
        let err = expect_error(resp, 403, "forbidden_for_api_token").await;
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains("personal API tokens"),
            "{err}"
        );
    }
    // None of the refused calls had an effect: no child token, the token is not revoked,
    // the profile is unchanged, and the native session was not signed out.
    let list = list_tokens(&app, &user).await;
    assert_eq!(list["tokens"].as_array().unwrap().len(), 1);
    assert!(list["tokens"][0]["revokedAt"].is_null());
    let me = expect_json(app.get_auth("/api/auth/me", &user.access_token).await, 200).await;
    assert_ne!(me["displayName"], "Script");
    let resp = app
        .post_json(
            "/api/auth/refresh",
            None,
            json!({"refreshToken": user.refresh_token}),
        )
        .await;
    expect_json(resp, 200).await;
    assert_passes_gate(&app, &t.token, ALLOWED).await;
}

#[tokio::test]
async fn revocation_is_immediate_and_only_the_owner_can_revoke() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("revoker").await;
    let other = app.sign_up("revoker-other").await;
    let t = create_token(&app, &user, json!({"name": "to revoke"})).await;
    let kept = create_token(&app, &user, json!({"name": "kept"})).await;
    assert_passes_gate(&app, &t.token, ALLOWED).await;

    // Another user cannot see or touch it.
    let theirs = app.user(&other).tokens();
    theirs.revoke(&t.id).await.refused(404, "not_found");
    theirs
        .update(&t.id, json!({"optIn": true}))
        .await
        .refused(404, "not_found");
    assert_passes_gate(&app, &t.token, ALLOWED).await;

    let mine = app.user(&user).tokens();
    for unknown in [uuid::Uuid::new_v4().to_string(), "not-a-uuid".to_owned()] {
        mine.revoke(&unknown).await.refused(404, "not_found");
    }

    let body = mine.revoke(&t.id).await.unwrap();
    assert_eq!(body["revokedId"], t.id.as_str());
    assert!(
        body["message"].as_str().unwrap().contains("revoked"),
        "{body}"
    );
    // At once: the very next request is 401, on any route.
    for p in [ALLOWED, "/api/auth/me", "/api/no-such-route"] {
        let err = app.api(&t.token).get(p).await.expect(200);
        let err = err.refused(401, "unauthorized");
        assert!(
            err["message"].as_str().unwrap().contains("revoked"),
            "{err}"
        );
    }
    // Revoking again is harmless and keeps the first time.
    let revoked_at = mine.listed(&t.id).await["revokedAt"].clone();
    assert!(revoked_at.is_string(), "{revoked_at}");
    // The clock moves on a second (times are whole seconds) before the second revocation.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    mine.revoke(&t.id).await.unwrap();
    assert_eq!(mine.listed(&t.id).await["revokedAt"], revoked_at);
    // Other tokens are unaffected.
    assert_passes_gate(&app, &kept.token, ALLOWED).await;
}
