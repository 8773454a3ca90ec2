//! The routes: validation, the state machine, lists and stats, access. One test, one
//! shared setup ([`World`]), its phases in order: each starts from what the one before left.

use super::*;
use crate::common::client::scheduled::ScheduledApi;

const ROOM: &str = "!nowhere:example.org";

struct World {
    app: TestApp,
    user: Session,
    key: String,
}

impl World {
    fn t(&self) -> &str {
        &self.user.access_token
    }

    fn api(&self) -> ScheduledApi<'_> {
        self.app.user(&self.user).scheduled()
    }

    /// A valid creation body for [`ROOM`], a minute from now.
    fn good(&self) -> Value {
        body(&self.key, ROOM, "x", &at(60.0))
    }
}

#[tokio::test]
async fn scheduling_routes_validate_input_and_follow_the_state_machine() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("sched-routes").await;
    let key = server_key(&app).await;
    let w = World { app, user, key };

    let id = creating_answers_pending_without_the_body(&w).await;
    bad_times_envelopes_and_fields_are_400(&w).await;
    let other = only_the_owner_sees_a_message(&w, &id).await;
    a_pending_message_is_patched(&w, &id).await;
    let second_id = stats_count_a_second_message(&w).await;
    cancelling_ends_the_state_machine(&w, &id).await;
    lists_filter_page_and_validate(&w, &id, &second_id).await;
    stats_follow_the_cancel_and_are_per_user(&w, &other).await;
    native_sessions_only(&w, &second_id).await;
}

/// Create: 201, pending, no body echoed. Returns the id.
async fn creating_answers_pending_without_the_body(w: &World) -> String {
    let created = schedule(&w.app, w.t(), {
        let mut b = body(&w.key, ROOM, "hello later", &at(3600.0));
        b["targetPlatform"] = json!("telegram");
        b
    })
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(created["status"], "pending");
    assert_eq!(created["roomId"], ROOM);
    assert_eq!(created["targetPlatform"], "telegram");
    assert_eq!(created["attempts"], 0);
    for k in ["sentAt", "eventId", "failureReason"] {
        assert!(created[k].is_null(), "{k}");
    }
    for k in ["scheduledFor", "createdAt", "updatedAt"] {
        assert!(created[k].is_string(), "{k}");
    }
    assert!(created.get("encryptedBody").is_none());
    id
}

/// Invalid times, envelopes that do not open with the server key, other invalid input.
async fn bad_times_envelopes_and_fields_are_400(w: &World) {
    let api = w.api();
    for when in [
        at(-5.0),
        "tomorrow".to_owned(),
        "2030-13-01T00:00:00Z".to_owned(),
        String::new(),
    ] {
        let created = api.create(body(&w.key, ROOM, "x", &when)).await;
        created.refused(400, "invalid_schedule_time");
    }
    let good = w.good();
    let other_key = STANDARD.encode(x25519_dalek::x25519(
        random32(),
        x25519_dalek::X25519_BASEPOINT_BYTES,
    ));
    let mut wrong_key = body(&other_key, ROOM, "x", &at(60.0));
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
    let mut bad_platform = good.clone();
    bad_platform["targetPlatform"] = json!("signal");
    let mut bad_room = good.clone();
    bad_room["roomId"] = json!("general");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("nonce");
    let empty = body(&w.key, ROOM, "   ", &at(60.0));
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
}

/// Get: 200, 400 malformed, 404 unknown and another user's (who cannot cancel it either).
/// Returns that other user.
async fn only_the_owner_sees_a_message(w: &World, id: &str) -> Session {
    let api = w.api();
    assert_eq!(get(&w.app, w.t(), id).await["id"], id);
    api.get("not-a-uuid").await.refused(400, "invalid_request");
    let unknown = uuid::Uuid::new_v4().to_string();
    api.get(&unknown).await.refused(404, "not_found");
    let other = w.app.sign_up("sched-other").await;
    let theirs = w.app.user(&other).scheduled();
    theirs.get(id).await.refused(404, "not_found");
    theirs.cancel(id).await.refused(404, "not_found");
    other
}

/// PATCH: time and envelope replaced while pending; bad replacements are 400.
async fn a_pending_message_is_patched(w: &World, id: &str) {
    let api = w.api();
    let new_time = at(7200.0);
    let (b, n, e) = seal(&w.key, "hello even later");
    let patched = api
        .update(
            id,
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
        api.update(id, bad).await.refused(400, code);
    }
}

/// A second message in another room, for list filters and stats; the stats (a static
/// route that wins over /{id}) count both. Returns the second id.
async fn stats_count_a_second_message(w: &World) -> String {
    let second = schedule(
        &w.app,
        w.t(),
        body(&w.key, "!second:example.org", "two", &at(1800.0)),
    )
    .await;
    let stats = w.api().stats().await.unwrap()["stats"].clone();
    assert_eq!(stats["pendingCount"], 2);
    assert_eq!(stats["sentCount"], 0);
    assert_eq!(stats["cancelledCount"], 0);
    assert_eq!(stats["failedCount"], 0);
    assert_eq!(stats["roomsWithScheduled"], 2);
    assert_eq!(stats["nextScheduled"], second["scheduledFor"]);
    second["id"].as_str().unwrap().to_owned()
}

/// Cancel: pending → cancelled; then neither PATCH nor DELETE.
async fn cancelling_ends_the_state_machine(w: &World, id: &str) {
    let api = w.api();
    let cancelled = api.cancel(id).await.unwrap();
    assert_eq!(cancelled["cancelledId"], id);
    assert!(cancelled["message"].is_string());
    assert_eq!(get(&w.app, w.t(), id).await["status"], "cancelled");
    let patched = api.update(id, json!({"scheduledFor": at(60.0)})).await;
    patched.refused(400, "not_pending");
    api.cancel(id).await.refused(400, "not_pending");
    api.cancel("xyz").await.refused(400, "invalid_request");
}

/// List: filters, pagination, order, validation.
async fn lists_filter_page_and_validate(w: &World, id: &str, second_id: &str) {
    let api = w.api();
    let list = api.list("").await.unwrap();
    let ids: Vec<&str> = list["scheduledMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![second_id, id], "earliest scheduledFor first");
    assert_eq!(
        list["pagination"],
        json!({"total": 2, "limit": 50, "offset": 0, "hasMore": false})
    );
    let pending = api.list("status=pending").await.unwrap();
    assert_eq!(pending["scheduledMessages"].as_array().unwrap().len(), 1);
    assert_eq!(pending["scheduledMessages"][0]["id"], second_id);
    let by_room = api
        .list(&format!("roomId={}", urlencode(ROOM)))
        .await
        .unwrap();
    assert_eq!(by_room["scheduledMessages"][0]["id"], id);
    assert_eq!(by_room["pagination"]["total"], 1);
    let page = api.list("limit=1&offset=1").await.unwrap();
    assert_eq!(
        page["pagination"],
        json!({"total": 2, "limit": 1, "offset": 1, "hasMore": false})
    );
    assert_eq!(page["scheduledMessages"][0]["id"], id);
    for q in [
        "status=sending",
        "limit=0",
        "limit=101",
        "offset=-1",
        "limit=ten",
    ] {
        api.list(q).await.refused(400, "invalid_request");
    }
}

/// After the cancel: one pending, one cancelled, one room; another user's stats are empty.
async fn stats_follow_the_cancel_and_are_per_user(w: &World, other: &Session) {
    let stats = w.api().stats().await.unwrap()["stats"].clone();
    assert_eq!(
        (
            stats["pendingCount"].clone(),
            stats["cancelledCount"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(stats["roomsWithScheduled"], 1);
    let empty_stats = w.app.user(other).scheduled().stats().await.unwrap();
    assert_eq!(
        empty_stats,
        json!({"stats": {"pendingCount": 0, "sentCount": 0, "cancelledCount": 0, "failedCount": 0,
                          "roomsWithScheduled": 0, "nextScheduled": null}})
    );
}

/// Native only (a personal token is 403 on every route); authentication required.
async fn native_sessions_only(w: &World, second_id: &str) {
    let good = w.good();
    let pat = w.app.user(&w.user).tokens().create_named("s").await.token;
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
        let resp = w
            .app
            .send(method, &path, Some(&pat), Some(good.clone()))
            .await;
        expect_error(resp, 403, "forbidden_for_api_token").await;
    }
    let anonymous = w.app.anonymous().scheduled().create(good).await;
    anonymous.refused(401, "unauthorized");
}
