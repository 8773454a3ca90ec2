//! One mailbox lived in, from the first sync to sealing at rest, against Dovecot: threads
//! and reading, attachments, flags set by another client, every thread action as seen on
//! the IMAP server, labels, signatures ([`sending`]: replies, forwards, personal tokens,
//! other users' ids, trash and delete, nothing readable at rest). One test, one shared
//! setup ([`World`]), its phases in order: each phase starts from what the one before left.

mod labels;
mod sending;

use crate::scheduled::reminders::{event_stream, wait_event};

use reqwest::Method;
use serde_json::{json, Value};

use super::*;
use crate::common::dovecot::{self, add_user};
use crate::common::*;

#[tokio::test]
async fn threads_actions_replies_labels_and_signatures_against_dovecot() {
    let w = setup().await;
    reading_and_paging(&w).await;
    attachments_on_demand(&w).await;
    flags_from_another_client(&w).await;
    read_star_and_archive(&w).await;
    labels::labels(&w).await;
    labels::an_action_the_server_refuses(&w).await;
    let sig_id = signatures(&w).await;
    sending::a_reply(&w, &sig_id).await;
    sending::a_forward_and_bad_addresses(&w).await;
    sending::personal_tokens(&w).await;
    sending::other_users_ids(&w, &sig_id).await;
    sending::trash_then_delete(&w).await;
    sending::nothing_readable_at_rest(&w).await;
}

/// One user with one Dovecot mailbox: a three-message thread and a lunch mail with a file,
/// synced; what every phase starts from.
pub(super) struct World {
    app: TestApp,
    user: Session,
    tok: String,
    email: String,
    run: String,
    subject: String,
    m1: String,
    m2: String,
    m3: String,
    /// The thread of three as first listed.
    plan: Value,
    /// The lunch mail's thread as first listed.
    lunch_t: Value,
    tid: String,
    ids: Vec<String>,
}

impl World {
    /// `(uid, seen, flagged, raw)` of every message in `mailbox`, as another client sees it.
    async fn server(&self, mailbox: &str) -> Vec<(u32, bool, bool, String)> {
        dovecot::list(&self.email, IMAP_PASSWORD, mailbox).await
    }

    fn lunch_id(&self) -> String {
        self.lunch_t["messageIds"][0].as_str().unwrap().to_owned()
    }
}

fn in_box(list: &[(u32, bool, bool, String)], mid: &str) -> Option<(u32, bool, bool, String)> {
    list.iter().find(|m| m.3.contains(mid)).cloned()
}

/// Delivers the mail, connects the mailbox and checks the first listing.
async fn setup() -> World {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("mail-e2e").await;
    let tok = user.access_token.clone();
    let email = add_user("e2e", IMAP_PASSWORD);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (m1, m2, m3) = (
        format!("t1.{run}@example.org"),
        format!("t2.{run}@example.org"),
        format!("t3.{run}@example.org"),
    );
    let subject = format!("Quarterly plan {run}");
    dovecot::deliver(
        &email,
        IMAP_PASSWORD,
        "INBOX",
        &thread_mail(&m1, None, "", &subject, "First draft attached soon"),
    )
    .await;
    dovecot::deliver(
        &email,
        IMAP_PASSWORD,
        "INBOX",
        &thread_mail(
            &m2,
            Some(&m1),
            &format!("<{m1}>"),
            &format!("Re: {subject}"),
            "Looks fine",
        ),
    )
    .await;
    dovecot::deliver(
        &email,
        IMAP_PASSWORD,
        "INBOX",
        &thread_mail(
            &m3,
            Some(&m2),
            &format!("<{m1}> <{m2}>"),
            &format!("Re: {subject}"),
            "One more thing",
        ),
    )
    .await;
    let lunch = format!(
        "From: Dana <dana@example.org>\nTo: {email}\nSubject: Lunch {run}\nMessage-ID: <lunch.{run}@example.org>\n\
         Date: Wed, 2 Jul 2025 12:00:00 +0000\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n\
         --XX\nContent-Type: text/plain\n\nMenu attached\n--XX\nContent-Type: text/csv\n\
         Content-Disposition: attachment; filename=menu.csv\n\ndish,price\nsoup,4\n--XX--\n"
    );
    dovecot::deliver(&email, IMAP_PASSWORD, "INBOX", &lunch).await;

    let mut events = event_stream(&app, &tok).await;
    let account = connect(&app, &tok, &email).await;
    let account_id = account["id"].as_str().unwrap().to_owned();
    let list = wait_threads(&app, &tok, "", |b| {
        b["threads"].as_array().is_some_and(|t| t.len() == 2)
    })
    .await;
    wait_event(&mut events, "email.updated", |d| {
        d["accountId"] == account_id.as_str()
    })
    .await;
    let plan = find_thread(&list, &subject)
        .expect("the three-message thread")
        .clone();
    let lunch_t = find_thread(&list, &format!("Lunch {run}"))
        .expect("the unrelated message")
        .clone();
    assert_eq!(plan["messageCount"], 3, "{plan}");
    assert_eq!(plan["accountId"], account_id.as_str());
    assert_eq!(plan["unread"], true);
    assert_eq!(plan["starred"], false);
    assert_eq!(plan["labels"], json!(["INBOX"]));
    assert_eq!(plan["snippet"], "One more thing");
    assert!(plan["participants"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["email"] == "alice@example.org" && p["name"] == "Alice Example"));
    assert_eq!(lunch_t["messageCount"], 1);
    assert_eq!(
        list["threads"][0]["id"], lunch_t["id"],
        "latest activity first"
    );
    let tid = plan["id"].as_str().unwrap().to_owned();
    let ids: Vec<String> = plan["messageIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    World {
        app,
        user,
        tok,
        email,
        run,
        subject,
        m1,
        m2,
        m3,
        plan,
        lunch_t,
        tid,
        ids,
    }
}

/// Reading a message; paging and filters; bad paging is 400.
async fn reading_and_paging(w: &World) {
    let World {
        app,
        tok,
        run,
        subject,
        tid,
        ids,
        ..
    } = w;
    // Reading a message; paging and filters.
    let msg = expect_json(
        app.get_auth(&format!("/api/email/messages/{}", ids[2]), tok)
            .await,
        200,
    )
    .await;
    assert_eq!(msg["threadId"], tid.as_str());
    assert_eq!(msg["subject"], format!("Re: {subject}"));
    assert_eq!(msg["from"]["email"], "alice@example.org");
    assert_eq!(msg["text"].as_str().unwrap().trim(), "One more thing");
    assert_eq!(msg["unread"], true);
    let page = expect_json(app.get_auth("/api/email/threads?limit=1", tok).await, 200).await;
    assert_eq!(page["threads"].as_array().unwrap().len(), 1);
    let cursor = page["nextCursor"].as_str().expect("a next page").to_owned();
    let page2 = expect_json(
        app.get_auth(&format!("/api/email/threads?limit=1&cursor={cursor}"), tok)
            .await,
        200,
    )
    .await;
    assert_eq!(page2["threads"][0]["id"], tid.as_str());
    assert!(page2["nextCursor"].is_null());
    let found = expect_json(
        app.get_auth(
            &format!("/api/email/threads?q=quarterly%20PLAN%20{run}"),
            tok,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(found["threads"].as_array().unwrap().len(), 1);
    assert_eq!(found["threads"][0]["id"], tid.as_str());
    let inbox = expect_json(
        app.get_auth("/api/email/threads?label=INBOX", tok).await,
        200,
    )
    .await;
    assert_eq!(inbox["threads"].as_array().unwrap().len(), 2);
    for bad in ["?limit=0", "?limit=101", "?cursor=%%%"] {
        assert_eq!(
            app.get_auth(&format!("/api/email/threads{bad}"), tok)
                .await
                .status(),
            400,
            "{bad}"
        );
    }
}

/// Attachments, fetched from IMAP on demand with their content type.
async fn attachments_on_demand(w: &World) {
    let World {
        app, tok, lunch_t, ..
    } = w;
    // Attachments, fetched from IMAP on demand with their content type.
    let lunch_msg = expect_json(
        app.get_auth(
            &format!(
                "/api/email/messages/{}",
                lunch_t["messageIds"][0].as_str().unwrap()
            ),
            tok,
        )
        .await,
        200,
    )
    .await;
    let att = &lunch_msg["attachments"][0];
    assert_eq!(
        (
            att["index"].clone(),
            att["filename"].clone(),
            att["contentType"].clone()
        ),
        (json!(0), json!("menu.csv"), json!("text/csv"))
    );
    assert!(att["size"].as_u64().unwrap() >= 17, "{att}");
    assert_eq!(lunch_msg["attachments"].as_array().unwrap().len(), 1);
    let resp = app
        .get_auth(
            &format!("/api/email/messages/{}/attachments/0", w.lunch_id()),
            tok,
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/csv");
    assert_eq!(
        resp.headers()["content-disposition"],
        "attachment; filename=\"menu.csv\""
    );
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert_eq!(
        resp.text().await.unwrap().replace("\r\n", "\n").trim_end(),
        "dish,price\nsoup,4"
    );
    let resp = app
        .get_auth(
            &format!("/api/email/messages/{}/attachments/1", w.lunch_id()),
            tok,
        )
        .await;
    expect_error(resp, 404, "not_found").await;
}

/// A flag changed by another client shows up.
async fn flags_from_another_client(w: &World) {
    let World {
        app,
        tok,
        email,
        subject,
        ..
    } = w;
    // A flag changed by another client shows up: through IDLE (the poll interval is the
    // default 60 s, past the wait), also when the change falls between a sync round and
    // the worker's next IDLE.
    dovecot::set_flag(email, IMAP_PASSWORD, "INBOX", true, "\\Flagged").await;
    wait_threads(app, tok, "", |b| {
        find_thread(b, subject).is_some_and(|t| t["starred"] == true)
    })
    .await;
    dovecot::set_flag(email, IMAP_PASSWORD, "INBOX", false, "\\Flagged").await;
    wait_threads(app, tok, "", |b| {
        find_thread(b, subject).is_some_and(|t| t["starred"] == false)
    })
    .await;
}

/// read / unread / star / unstar / archive / unarchive, each on the server before the answer.
async fn read_star_and_archive(w: &World) {
    let World {
        app,
        tok,
        run,
        m1,
        m2,
        m3,
        plan,
        tid,
        ..
    } = w;
    // read / unread / star / unstar: on the server before the answer.
    let t = expect_json(act(app, tok, tid, json!({"action": "read"})).await, 200).await;
    assert_eq!(t["unread"], false);
    assert!(w
        .server("INBOX")
        .await
        .iter()
        .filter(|m| m.3.contains(run.as_str()) && !m.3.contains("lunch"))
        .all(|m| m.1));
    let t = expect_json(act(app, tok, tid, json!({"action": "unread"})).await, 200).await;
    assert_eq!(t["unread"], true);
    assert!(!in_box(&w.server("INBOX").await, m1).unwrap().1);
    let t = expect_json(act(app, tok, tid, json!({"action": "star"})).await, 200).await;
    assert_eq!(t["starred"], true);
    assert!(in_box(&w.server("INBOX").await, m2).unwrap().2);
    let t = expect_json(act(app, tok, tid, json!({"action": "unstar"})).await, 200).await;
    assert_eq!(t["starred"], false);
    assert!(!in_box(&w.server("INBOX").await, m2).unwrap().2);

    // archive / unarchive move between INBOX and \Archive; ids stay.
    let t = expect_json(act(app, tok, tid, json!({"action": "archive"})).await, 200).await;
    assert_eq!(t["labels"], json!(["Archive"]), "{t}");
    assert_eq!(t["id"], tid.as_str());
    assert_eq!(
        t["messageIds"], plan["messageIds"],
        "message ids survive a move"
    );
    assert!(in_box(&w.server("INBOX").await, m1).is_none());
    assert!(in_box(&w.server("Archive").await, m3).is_some());
    let t = expect_json(
        act(app, tok, tid, json!({"action": "unarchive"})).await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX"]));
    assert!(in_box(&w.server("INBOX").await, m1).is_some());
    assert!(in_box(&w.server("Archive").await, m1).is_none());
}

/// Signatures: create, update, delete, list; the one kept (its id) signs the reply.
async fn signatures(w: &World) -> String {
    let World { app, tok, .. } = w;
    // Signatures.
    let sig = expect_json(
        app.post_json(
            "/api/email/signatures",
            Some(tok),
            json!({"name": "Work", "text": "Box Owner, Example Ltd", "isDefault": true}),
        )
        .await,
        201,
    )
    .await;
    let sig_id = sig["id"].as_str().unwrap().to_owned();
    assert_eq!(sig["isDefault"], true);
    let other_sig = expect_json(
        app.post_json(
            "/api/email/signatures",
            Some(tok),
            json!({"name": "Short", "text": "B."}),
        )
        .await,
        201,
    )
    .await;
    let upd = expect_json(
        app.send(
            Method::PUT,
            &format!("/api/email/signatures/{sig_id}"),
            Some(tok),
            Some(json!({"name": "Office"})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(upd["name"], "Office");
    assert_eq!(upd["text"], "Box Owner, Example Ltd");
    let path = format!(
        "/api/email/signatures/{}",
        other_sig["id"].as_str().unwrap()
    );
    expect_json(app.send(Method::DELETE, &path, Some(tok), None).await, 200).await;
    expect_error(
        app.send(Method::DELETE, &path, Some(tok), None).await,
        404,
        "not_found",
    )
    .await;
    let sigs = expect_json(app.get_auth("/api/email/signatures", tok).await, 200).await;
    assert_eq!(sigs["signatures"].as_array().unwrap().len(), 1);
    expect_error(
        app.post_json(
            "/api/email/signatures",
            Some(tok),
            json!({"name": "", "text": "x"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    sig_id
}
