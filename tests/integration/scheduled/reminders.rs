//! Reminders: CRUD with a personal API token, validation, encryption at rest, and the
//! due announcement (`reminder.due` on the event stream and a push via the APNs stand-in).

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};

use crate::common::client::Refusal;
use crate::common::*;
use crate::push::devices::standin::{self, ApnsStandIn};
use crate::push::devices::{device_token, register};

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
    let mine = app.api(&pat).reminders();

    let title = format!("Call the dentist {}", uuid::Uuid::new_v4());
    let created = mine
        .create(
            json!({"title": title, "notes": "ask about Tuesday", "dueAt": "2031-05-01T09:30:00Z",
                   "roomId": "!room:example.org", "eventId": "$event"}),
        )
        .await
        .unwrap();
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
    let native = app.user(&user).reminders();
    let second = native
        .create(
            json!({"title": "Water plants", "dueAt": "2031-01-01T00:00:00+02:00",
            "completed": true}),
        )
        .await
        .unwrap();
    assert_eq!(second["completed"], true);
    assert!(second["completedAt"].is_string());
    let all = mine.list("").await.unwrap();
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
    let open = mine.list("completed=false").await.unwrap();
    assert_eq!(open["reminders"].as_array().unwrap().len(), 1);
    assert_eq!(open["reminders"][0]["id"], id);
    let page = mine.list("limit=1&offset=0").await.unwrap();
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
        mine.list(q).await.refused(400, "invalid_request");
    }

    // Partial update: title and completed; notes cleared with null; the rest stays.
    let updated = mine
        .update(
            &id,
            json!({"title": "Call Bob", "notes": null, "completed": true}),
        )
        .await
        .unwrap();
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
        mine.create(body).await.refused(400, "invalid_request");
    }
    for (id, body, status, code) in [
        (id.clone(), json!({"title": "  "}), 400, "invalid_request"),
        (id.clone(), json!({"roomId": null}), 400, "invalid_request"),
        (
            "not-a-uuid".to_owned(),
            json!({"title": "x"}),
            400,
            "invalid_request",
        ),
        (
            uuid::Uuid::new_v4().to_string(),
            json!({"title": "x"}),
            404,
            "not_found",
        ),
    ] {
        mine.update(&id, body).await.refused(status, code);
    }

    // Another user sees none of it.
    let other = app.sign_up("rem-other").await;
    let theirs = app
        .api(&other.access_token)
        .reminders()
        .list("")
        .await
        .unwrap();
    assert_eq!(theirs["reminders"], json!([]));
    let theirs = app.user(&other).reminders().delete(&id).await;
    theirs.refused(404, "not_found");

    // Delete.
    let deleted = mine.delete(&id).await.unwrap();
    assert_eq!(deleted["deletedId"], id);
    assert!(deleted["message"].is_string());
    mine.delete(&id).await.refused(404, "not_found");
    mine.delete("123").await.refused(400, "invalid_request");
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
    let mine = app.api(&pat).reminders();
    let create = |body: Value| {
        let mine = &mine;
        async move { mine.create(body).await.unwrap() }
    };
    let id = create(json!({"title": title, "dueAt": in_secs(1)})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // One not due and one completed: never announced.
    create(json!({"title": "later", "dueAt": in_secs(3600)})).await;
    create(json!({"title": "done", "dueAt": in_secs(1), "completed": true})).await;

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

    let list = mine.list("completed=false").await.unwrap();
    let listed = |pred: &dyn Fn(&Value) -> bool| {
        list["reminders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| pred(r))
            .unwrap()
            .clone()
    };
    let r = listed(&|r| r["id"] == id.as_str());
    assert!(r["notifiedAt"].is_string(), "{r}");
    assert!(listed(&|r| r["title"] == "later")["notifiedAt"].is_null());

    // Announced once. Positive marker: a reminder due after the first was announced is
    // announced (on the stream, where announcements arrive in order) and pushed, and the
    // first was not announced again before it.
    let marker = create(json!({"title": "marker", "dueAt": in_secs(1)})).await;
    let marker_id = marker["id"].as_str().unwrap().to_owned();
    wait_event(&mut events, "reminder.due", |d| {
        assert_ne!(d["id"], id.as_str(), "announced twice");
        d["id"] == marker_id.as_str()
    })
    .await;
    let for_reminder = |r: &[standin::Recorded], rid: &str| {
        r.iter().filter(|p| p.payload["reminderId"] == rid).count()
    };
    let pushes = apns
        .wait_for(&device, "the marker's push", |r| {
            for_reminder(r, &marker_id) == 1
        })
        .await;
    assert_eq!(for_reminder(&pushes, &id), 1, "{pushes:?}");

    // Moving dueAt re-arms it.
    let rearmed = mine
        .update(&id, json!({"dueAt": in_secs(1)}))
        .await
        .unwrap();
    assert!(rearmed["notifiedAt"].is_null());
    apns.wait_for(&device, "the second reminder push", |r| {
        for_reminder(r, &id) == 2
    })
    .await;
}
