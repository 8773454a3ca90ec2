//! Reminders: CRUD with a personal API token, validation, encryption at rest, and the
//! due announcement (`reminder.due` on the event stream and a push via the APNs stand-in).

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::*;
use crate::devices::standin::ApnsStandIn;
use crate::devices::{device_token, register};

fn in_secs(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs)).to_rfc3339()
}

/// Opens `GET /api/sync` and returns a receiver of `(event, data)` pairs.
pub async fn event_stream(
    app: &TestApp,
    token: &str,
) -> tokio::sync::mpsc::UnboundedReceiver<(String, Value)> {
    let resp = reqwest::Client::new()
        .get(app.url("/api/sync"))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET /api/sync");
    assert_eq!(resp.status(), 200, "GET /api/sync");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = resp.bytes_stream();
        let mut buf = String::new();
        let mut event = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(pos) = buf.find('\n') {
                let line = buf[..pos].trim_end_matches('\r').to_owned();
                buf.drain(..=pos);
                if let Some(e) = line.strip_prefix("event:") {
                    event = e.trim().to_owned();
                } else if let Some(d) = line.strip_prefix("data:") {
                    let data = serde_json::from_str(d.trim()).unwrap_or(Value::Null);
                    if tx.send((event.clone(), data)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Waits for an event of `kind` whose data matches `pred`.
pub async fn wait_event(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
    kind: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some((k, data))) if k == kind && pred(&data) => return data,
            Ok(Some(_)) => {}
            Ok(None) => panic!("event stream ended before {kind}"),
            Err(_) => panic!("no {kind} event within 30 s"),
        }
    }
}

#[tokio::test]
async fn reminders_crud_with_a_personal_token() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("rem-crud").await;
    let pat = personal_token(&app, &user).await;

    let title = format!("Call the dentist {}", uuid::Uuid::new_v4());
    let resp = app
        .post_json(
            "/api/reminders",
            Some(&pat),
            json!({"title": title, "notes": "ask about Tuesday", "dueAt": "2031-05-01T09:30:00Z",
                   "roomId": "!room:example.org", "eventId": "$event"}),
        )
        .await;
    let created = expect_json(resp, 201).await["reminder"].clone();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok());
    assert_eq!(created["title"], title);
    assert_eq!(created["notes"], "ask about Tuesday");
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(created["dueAt"].as_str().unwrap()).unwrap(),
        chrono::DateTime::parse_from_rfc3339("2031-05-01T09:30:00Z").unwrap()
    );
    assert_eq!(created["roomId"], "!room:example.org");
    assert_eq!(created["eventId"], "$event");
    assert_eq!(created["completed"], false);
    assert!(created["notifiedAt"].is_null());

    // Title and notes are encrypted at rest.
    for name in ["switchboard.db", "switchboard.db-wal"] {
        let bytes = std::fs::read(app.data_dir().join(name)).unwrap_or_default();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(
            !hay.contains(&title) && !hay.contains("ask about Tuesday"),
            "plaintext in {name}"
        );
    }

    // A second one, completed, due earlier; list order, filters and pagination.
    let resp = app
        .post_json(
            "/api/reminders",
            Some(&user.access_token),
            json!({"title": "Water plants", "dueAt": "2031-01-01T00:00:00+02:00", "completed": true}),
        )
        .await;
    let second = expect_json(resp, 201).await["reminder"].clone();
    assert_eq!(second["completed"], true);
    assert!(second["completedAt"].is_string());
    let all = expect_json(app.get_auth("/api/reminders", &pat).await, 200).await;
    let titles: Vec<&str> = all["reminders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Water plants", title.as_str()]);
    assert_eq!(
        all["pagination"],
        json!({"total": 2, "limit": 50, "offset": 0, "hasMore": false})
    );
    let open = expect_json(
        app.get_auth("/api/reminders?completed=false", &pat).await,
        200,
    )
    .await;
    assert_eq!(open["reminders"].as_array().unwrap().len(), 1);
    assert_eq!(open["reminders"][0]["id"], id);
    let page = expect_json(
        app.get_auth("/api/reminders?limit=1&offset=0", &pat).await,
        200,
    )
    .await;
    assert_eq!(
        page["pagination"],
        json!({"total": 2, "limit": 1, "offset": 0, "hasMore": true})
    );
    for q in [
        "completed=maybe",
        "limit=0",
        "limit=101",
        "limit=x",
        "offset=-1",
    ] {
        let resp = app.get_auth(&format!("/api/reminders?{q}"), &pat).await;
        expect_error(resp, 400, "invalid_request").await;
    }

    // Partial update: title and completed; notes cleared with null; the rest stays.
    let resp = app
        .send(
            Method::PUT,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            Some(json!({"title": "Call Bob", "notes": null, "completed": true})),
        )
        .await;
    let updated = expect_json(resp, 200).await["reminder"].clone();
    assert_eq!(updated["title"], "Call Bob");
    assert!(updated["notes"].is_null());
    assert_eq!(updated["completed"], true);
    assert_eq!(updated["roomId"], "!room:example.org");
    assert_eq!(updated["dueAt"], created["dueAt"]);

    // Validation on create and update.
    let bad_create = [
        json!({"dueAt": "2031-01-01T00:00:00Z"}),
        json!({"title": "", "dueAt": "2031-01-01T00:00:00Z"}),
        json!({"title": "x".repeat(501), "dueAt": "2031-01-01T00:00:00Z"}),
        json!({"title": "t", "notes": "n".repeat(10_001), "dueAt": "2031-01-01T00:00:00Z"}),
        json!({"title": "t"}),
        json!({"title": "t", "dueAt": "next week"}),
        json!({"title": "t", "dueAt": "2031-01-01T00:00:00Z", "roomId": "not a room"}),
        json!({"title": "t", "dueAt": "2031-01-01T00:00:00Z", "eventId": "$e"}),
        json!({"title": "t", "dueAt": "2031-01-01T00:00:00Z", "completed": "yes"}),
    ];
    for body in bad_create {
        let resp = app
            .post_json("/api/reminders", Some(&pat), body.clone())
            .await;
        expect_error(resp, 400, "invalid_request").await;
    }
    let resp = app
        .send(
            Method::PUT,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            Some(json!({"title": "  "})),
        )
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .send(
            Method::PUT,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            Some(json!({"roomId": null})),
        )
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .send(
            Method::PUT,
            "/api/reminders/not-a-uuid",
            Some(&pat),
            Some(json!({"title": "x"})),
        )
        .await;
    expect_error(resp, 400, "invalid_request").await;
    let resp = app
        .send(
            Method::PUT,
            &format!("/api/reminders/{}", uuid::Uuid::new_v4()),
            Some(&pat),
            Some(json!({"title": "x"})),
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // Another user sees none of it.
    let other = app.sign_up("rem-other").await;
    let theirs = expect_json(
        app.get_auth("/api/reminders", &other.access_token).await,
        200,
    )
    .await;
    assert_eq!(theirs["reminders"], json!([]));
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/reminders/{id}"),
            Some(&other.access_token),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // Delete.
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            None,
        )
        .await;
    let deleted = expect_json(resp, 200).await;
    assert_eq!(deleted["deletedId"], id);
    assert!(deleted["message"].is_string());
    let resp = app
        .send(
            Method::DELETE,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            None,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
    let resp = app
        .send(Method::DELETE, "/api/reminders/123", Some(&pat), None)
        .await;
    expect_error(resp, 400, "invalid_request").await;
}

#[tokio::test]
async fn a_due_reminder_is_announced_once_on_the_stream_and_by_push() {
    let apns = ApnsStandIn::start().await;
    let app = TestApp::start_with_mail_and(apns.config()).await;
    let user = app.sign_up("rem-due").await;
    let pat = personal_token(&app, &user).await;
    let device = device_token();
    register(&app, &user.access_token, &device).await;
    let mut events = event_stream(&app, &pat).await;

    let title = format!("Stretch {}", uuid::Uuid::new_v4().simple());
    let resp = app
        .post_json(
            "/api/reminders",
            Some(&pat),
            json!({"title": title, "dueAt": in_secs(1)}),
        )
        .await;
    let id = expect_json(resp, 201).await["reminder"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // One not due and one completed: never announced.
    let resp = app
        .post_json(
            "/api/reminders",
            Some(&pat),
            json!({"title": "later", "dueAt": in_secs(3600)}),
        )
        .await;
    expect_json(resp, 201).await;
    let resp = app
        .post_json(
            "/api/reminders",
            Some(&pat),
            json!({"title": "done", "dueAt": in_secs(1), "completed": true}),
        )
        .await;
    expect_json(resp, 201).await;

    let due = wait_event(&mut events, "reminder.due", |d| d["id"] == id.as_str()).await;
    assert!(due["dueAt"].is_string());
    assert!(
        !due.to_string().contains(&title),
        "no reminder text on the stream"
    );

    let pushes = apns
        .wait_for(&device, "the reminder push", |r| !r.is_empty())
        .await;
    let p = &pushes[0];
    assert!(p.jwt_ok && p.http2);
    assert_eq!(p.payload["type"], "reminder");
    assert_eq!(p.payload["reminderId"], id.as_str());
    assert_eq!(p.payload["aps"]["alert"]["body"], title.as_str());

    let list = expect_json(
        app.get_auth("/api/reminders?completed=false", &pat).await,
        200,
    )
    .await;
    let r = list["reminders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap()
        .clone();
    assert!(r["notifiedAt"].is_string(), "{r}");
    let later = list["reminders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["title"] == "later")
        .unwrap();
    assert!(later["notifiedAt"].is_null());

    // Announced once: no second push; moving dueAt re-arms it.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(apns.requests_for(&device).len(), 1);
    let resp = app
        .send(
            Method::PUT,
            &format!("/api/reminders/{id}"),
            Some(&pat),
            Some(json!({"dueAt": in_secs(1)})),
        )
        .await;
    let rearmed = expect_json(resp, 200).await["reminder"].clone();
    assert!(rearmed["notifiedAt"].is_null());
    apns.wait_for(&device, "the second reminder push", |r| r.len() == 2)
        .await;
}
