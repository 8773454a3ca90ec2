//! The routes: validation, the state machine, lists and stats, access.

use super::*;

#[tokio::test]
async fn scheduling_routes_validate_input_and_follow_the_state_machine() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-routes").await;
    let t = &user.access_token;
    let key = server_key(&app).await;
    let room = "!nowhere:example.org";
    let api = app.user(&user).scheduled();

    // Create: 201, pending, no body echoed.
    let created = schedule(&app, t, {
        let mut b = body(&key, room, "hello later", &at(3600.0));
        b["targetPlatform"] = json!("telegram");
        b
    })
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(created["status"], "pending");
    assert_eq!(created["roomId"], room);
    assert_eq!(created["targetPlatform"], "telegram");
    assert_eq!(created["attempts"], 0);
    for k in ["sentAt", "eventId", "failureReason"] {
        assert!(created[k].is_null(), "{k}");
    }
    for k in ["scheduledFor", "createdAt", "updatedAt"] {
        assert!(created[k].is_string(), "{k}");
    }
    assert!(created.get("encryptedBody").is_none());

    // Invalid times.
    for when in [
        at(-5.0),
        "tomorrow".to_owned(),
        "2030-13-01T00:00:00Z".to_owned(),
        String::new(),
    ] {
        let created = api.create(body(&key, room, "x", &when)).await;
        created.refused(400, "invalid_schedule_time");
    }
    // Envelopes that do not open with the server key.
    let good = body(&key, room, "x", &at(60.0));
    let other_key = STANDARD.encode(x25519_dalek::x25519(
        random32(),
        x25519_dalek::X25519_BASEPOINT_BYTES,
    ));
    let mut wrong_key = body(&other_key, room, "x", &at(60.0));
    wrong_key["scheduledFor"] = json!(at(60.0));
    let mut tampered = good.clone();
    let mut ct = STANDARD
        .decode(good["encryptedBody"].as_str().unwrap())
        .unwrap();
    ct[0] ^= 1;
    tampered["encryptedBody"] = json!(STANDARD.encode(ct));
    let mut short_nonce = good.clone();
    short_nonce["nonce"] = json!(STANDARD.encode([0u8; 12]));
    let mut not_b64 = good.clone();
    not_b64["ephemeralPubkey"] = json!("not base64!");
    for bad in [wrong_key, tampered, short_nonce, not_b64] {
        api.create(bad).await.refused(400, "invalid_encryption");
    }
    // Other invalid input.
    let mut bad_platform = good.clone();
    bad_platform["targetPlatform"] = json!("signal");
    let mut bad_room = good.clone();
    bad_room["roomId"] = json!("general");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("nonce");
    let empty = body(&key, room, "   ", &at(60.0));
    for bad in [
        bad_platform,
        bad_room,
        missing,
        empty,
        json!({}),
        json!([1]),
    ] {
        api.create(bad).await.refused(400, "invalid_request");
    }

    // Get: 200, 400 malformed, 404 unknown and other user's.
    assert_eq!(get(&app, t, &id).await["id"], id.as_str());
    api.get("not-a-uuid").await.refused(400, "invalid_request");
    let unknown = uuid::Uuid::new_v4().to_string();
    api.get(&unknown).await.refused(404, "not_found");
    let other = app.sign_up("sched-other").await;
    let theirs = app.user(&other).scheduled();
    theirs.get(&id).await.refused(404, "not_found");
    theirs.cancel(&id).await.refused(404, "not_found");

    // PATCH: time and envelope replaced while pending.
    let new_time = at(7200.0);
    let (b, n, e) = seal(&key, "hello even later");
    let patched = api
        .update(
            &id,
            json!({"scheduledFor": new_time, "encryptedBody": b, "nonce": n, "ephemeralPubkey": e}),
        )
        .await
        .unwrap();
    assert!(patched["message"].is_string());
    assert_eq!(patched["scheduledMessage"]["status"], "pending");
    let got = chrono::DateTime::parse_from_rfc3339(
        patched["scheduledMessage"]["scheduledFor"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    let want = chrono::DateTime::parse_from_rfc3339(&new_time).unwrap();
    assert!((got - want).num_milliseconds().abs() <= 1);
    for (bad, code) in [
        (json!({"scheduledFor": at(-1.0)}), "invalid_schedule_time"),
        (json!({"encryptedBody": b}), "invalid_request"),
        (
            json!({"encryptedBody": "AAAA", "nonce": n, "ephemeralPubkey": e}),
            "invalid_encryption",
        ),
    ] {
        api.update(&id, bad).await.refused(400, code);
    }

    // A second message in another room, for list filters and stats.
    let second = schedule(
        &app,
        t,
        body(&key, "!second:example.org", "two", &at(1800.0)),
    )
    .await;
    let second_id = second["id"].as_str().unwrap().to_owned();

    // Stats (static route wins over /{id}).
    let stats = api.stats().await.unwrap()["stats"].clone();
    assert_eq!(stats["pendingCount"], 2);
    assert_eq!(stats["sentCount"], 0);
    assert_eq!(stats["cancelledCount"], 0);
    assert_eq!(stats["failedCount"], 0);
    assert_eq!(stats["roomsWithScheduled"], 2);
    assert_eq!(stats["nextScheduled"], second["scheduledFor"]);

    // Cancel: pending → cancelled; then neither PATCH nor DELETE.
    let cancelled = api.cancel(&id).await.unwrap();
    assert_eq!(cancelled["cancelledId"], id.as_str());
    assert!(cancelled["message"].is_string());
    assert_eq!(get(&app, t, &id).await["status"], "cancelled");
    let patched = api.update(&id, json!({"scheduledFor": at(60.0)})).await;
    patched.refused(400, "not_pending");
    api.cancel(&id).await.refused(400, "not_pending");
    api.cancel("xyz").await.refused(400, "invalid_request");

    // List: filters, pagination, order, validation.
    let list = api.list("").await.unwrap();
    let ids: Vec<&str> = list["scheduledMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![second_id.as_str(), id.as_str()],
        "earliest scheduledFor first"
    );
    assert_eq!(
        list["pagination"],
        json!({"total": 2, "limit": 50, "offset": 0, "hasMore": false})
    );
    let pending = api.list("status=pending").await.unwrap();
    assert_eq!(pending["scheduledMessages"].as_array().unwrap().len(), 1);
    assert_eq!(pending["scheduledMessages"][0]["id"], second_id.as_str());
    let by_room = api
        .list(&format!("roomId={}", urlencode(room)))
        .await
        .unwrap();
    assert_eq!(by_room["scheduledMessages"][0]["id"], id.as_str());
    assert_eq!(by_room["pagination"]["total"], 1);
    let page = api.list("limit=1&offset=1").await.unwrap();
    assert_eq!(
        page["pagination"],
        json!({"total": 2, "limit": 1, "offset": 1, "hasMore": false})
    );
    assert_eq!(page["scheduledMessages"][0]["id"], id.as_str());
    for q in [
        "status=sending",
        "limit=0",
        "limit=101",
        "offset=-1",
        "limit=ten",
    ] {
        api.list(q).await.refused(400, "invalid_request");
    }
    let stats = api.stats().await.unwrap()["stats"].clone();
    assert_eq!(
        (
            stats["pendingCount"].clone(),
            stats["cancelledCount"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(stats["roomsWithScheduled"], 1);
    let empty_stats = theirs.stats().await.unwrap();
    assert_eq!(
        empty_stats,
        json!({"stats": {"pendingCount": 0, "sentCount": 0, "cancelledCount": 0, "failedCount": 0,
                          "roomsWithScheduled": 0, "nextScheduled": null}})
    );

    // Native only; authentication required.
    let pat = app.user(&user).tokens().create_named("s").await.token;
    for (method, path) in [
        (Method::POST, "/api/messages/schedule".to_owned()),
        (Method::GET, "/api/messages/scheduled".to_owned()),
        (Method::GET, "/api/messages/scheduled/stats".to_owned()),
        (Method::GET, format!("/api/messages/scheduled/{second_id}")),
        (
            Method::DELETE,
            format!("/api/messages/scheduled/{second_id}"),
        ),
    ] {
        let resp = app
            .send(method, &path, Some(&pat), Some(good.clone()))
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let anonymous = app.anonymous().scheduled().create(good.clone()).await;
    anonymous.refused(401, "unauthorized");
}
