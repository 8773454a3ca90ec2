//! E-mail (issue #10) against a real Dovecot (scripts/dovecot.sh) and the run's SMTP sink:
//! connecting, sync and threading, reading, every thread action as seen on the IMAP
//! server, a flag changed by another client, replies, labels, signatures, attachments,
//! the personal-token rules, other users' ids, a mail server outage, and sealing at rest.
//! Test mail is delivered by IMAP APPEND, never written into the cache.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::common::dovecot::{self, add_user};
use crate::common::*;
use crate::scheduled::reminders::{event_stream, wait_event};

const IMAP_PASSWORD: &str = "imap-secret-7Qx";

fn account_body(email: &str, imap_port: u16, imap_password: &str, smtp_password: &str) -> Value {
    json!({
        "email": email,
        "displayName": "Box Owner",
        "imap": {"host": "127.0.0.1", "port": imap_port, "security": "none",
                 "username": email, "password": imap_password},
        "smtp": {"host": "127.0.0.1", "port": mail::smtp().port, "security": "none",
                 "username": email, "password": smtp_password},
    })
}

fn thread_mail(mid: &str, reply_to: Option<&str>, refs: &str, subject: &str, text: &str) -> String {
    // One minute apart per reply level, so the thread's order is the conversation's.
    let minute = refs.matches('<').count();
    let mut m = format!(
        "From: Alice Example <alice@example.org>\nTo: Box Owner <box@example.test>\n\
         Subject: {subject}\nMessage-ID: <{mid}>\nDate: Tue, 1 Jul 2025 10:{minute:02}:00 +0000\n"
    );
    if let Some(r) = reply_to {
        m.push_str(&format!("In-Reply-To: <{r}>\nReferences: {refs}\n"));
    }
    m.push_str(&format!(
        "Content-Type: text/plain; charset=utf-8\n\n{text}\n"
    ));
    m
}

/// Polls `GET /api/email/threads` until `pred` holds.
async fn wait_threads(
    app: &TestApp,
    token: &str,
    query: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let body = expect_json(
            app.get_auth(&format!("/api/email/threads{query}"), token)
                .await,
            200,
        )
        .await;
        if pred(&body) {
            return body;
        }
        assert!(Instant::now() < deadline, "threads never matched: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn find_thread<'a>(list: &'a Value, subject: &str) -> Option<&'a Value> {
    list["threads"]
        .as_array()?
        .iter()
        .find(|t| t["subject"] == subject)
}

async fn act(app: &TestApp, token: &str, thread: &str, body: Value) -> reqwest::Response {
    app.send(
        Method::PUT,
        &format!("/api/email/threads/{thread}"),
        Some(token),
        Some(body),
    )
    .await
}

async fn connect(app: &TestApp, token: &str, email: &str) -> Value {
    let body = account_body(email, dovecot::dovecot().port, IMAP_PASSWORD, "smtp-pass");
    connect_account(app, token, body).await
}

/// Connects the Dovecot mailbox `email` (IMAP password `imap_password`, no display name)
/// to the caller: the account as answered (201).
pub(crate) async fn connect_mailbox(
    app: &TestApp,
    token: &str,
    email: &str,
    imap_password: &str,
) -> Value {
    let mut body = account_body(email, dovecot::dovecot().port, imap_password, "smtp-pass");
    body.as_object_mut().unwrap().remove("displayName");
    connect_account(app, token, body).await
}

async fn connect_account(app: &TestApp, token: &str, body: Value) -> Value {
    let resp = app
        .post_json("/api/email/accounts", Some(token), body)
        .await;
    expect_json(resp, 201).await
}

#[tokio::test]
async fn connecting_refuses_bad_credentials_unreachable_servers_and_malformed_input() {
    let app = TestApp::start_with_mail().await;
    let user = app.sign_up("mail-connect").await;
    let tok = &user.access_token;
    let email = add_user("connect", IMAP_PASSWORD);
    let port = dovecot::dovecot().port;
    let post = |body: Value| app.post_json("/api/email/accounts", Some(tok), body);

    let e = expect_error(
        post(account_body(&email, port, "wrong", "x")).await,
        400,
        "mail_login_failed",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("IMAP"), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("authentication failed"),
        "the server's words: {e}"
    );
    let e = expect_error(
        post(account_body(
            &email,
            port,
            IMAP_PASSWORD,
            "wrong-smtp-password",
        ))
        .await,
        400,
        "mail_login_failed",
    )
    .await;
    assert!(e["message"].as_str().unwrap().contains("SMTP"), "{e}");
    expect_error(
        post(account_body(&email, free_port(), IMAP_PASSWORD, "x")).await,
        400,
        "mail_server_unreachable",
    )
    .await;
    let e = expect_error(
        post(account_body("not an address", port, IMAP_PASSWORD, "x")).await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("email"), "{e}");
    let mut body = account_body(&email, port, IMAP_PASSWORD, "x");
    body["imap"]["host"] = json!("bad host");
    let e = expect_error(post(body).await, 400, "invalid_request").await;
    assert!(e["message"].as_str().unwrap().contains("imap.host"), "{e}");
    let mut body = account_body(&email, port, IMAP_PASSWORD, "x");
    body["smtp"]["security"] = json!("ssl");
    assert_eq!(post(body).await.status(), 400);
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(
        listed["accounts"],
        json!([]),
        "nothing stored after refusals"
    );

    let a = connect(&app, tok, &email).await;
    assert_eq!(a["email"], email.as_str());
    assert_eq!(a["displayName"], "Box Owner");
    assert!(a.get("password").is_none() && !a.to_string().contains(IMAP_PASSWORD));
    let id = a["id"].as_str().unwrap();
    // The first sync ends with status ok and lastSyncAt.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
        if l["accounts"][0]["status"] == "ok" {
            assert!(l["accounts"][0]["lastSyncAt"].is_string());
            break;
        }
        assert!(Instant::now() < deadline, "never synced: {l}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Personal tokens never reach the account routes.
    let pat = personal_token(&app, &user).await;
    expect_error(
        app.get_auth("/api/email/accounts", &pat).await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.post_json(
            "/api/email/accounts",
            Some(&pat),
            account_body(&email, port, IMAP_PASSWORD, "x"),
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(&pat),
            None,
        )
        .await,
        403,
        "forbidden_for_api_token",
    )
    .await;
    // Another user cannot remove it.
    let other = app.sign_up("mail-connect-other").await;
    expect_error(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(&other.access_token),
            None,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_json(
        app.send(
            Method::DELETE,
            &format!("/api/email/accounts/{id}"),
            Some(tok),
            None,
        )
        .await,
        200,
    )
    .await;
    let listed = expect_json(app.get_auth("/api/email/accounts", tok).await, 200).await;
    assert_eq!(listed["accounts"], json!([]));
}

#[tokio::test]
async fn threads_actions_replies_labels_and_signatures_against_dovecot() {
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

    // Reading a message; paging and filters.
    let msg = expect_json(
        app.get_auth(&format!("/api/email/messages/{}", ids[2]), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(msg["threadId"], tid.as_str());
    assert_eq!(msg["subject"], format!("Re: {subject}"));
    assert_eq!(msg["from"]["email"], "alice@example.org");
    assert_eq!(msg["text"].as_str().unwrap().trim(), "One more thing");
    assert_eq!(msg["unread"], true);
    let page = expect_json(app.get_auth("/api/email/threads?limit=1", &tok).await, 200).await;
    assert_eq!(page["threads"].as_array().unwrap().len(), 1);
    let cursor = page["nextCursor"].as_str().expect("a next page").to_owned();
    let page2 = expect_json(
        app.get_auth(&format!("/api/email/threads?limit=1&cursor={cursor}"), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(page2["threads"][0]["id"], tid.as_str());
    assert!(page2["nextCursor"].is_null());
    let found = expect_json(
        app.get_auth(
            &format!("/api/email/threads?q=quarterly%20PLAN%20{run}"),
            &tok,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(found["threads"].as_array().unwrap().len(), 1);
    assert_eq!(found["threads"][0]["id"], tid.as_str());
    let inbox = expect_json(
        app.get_auth("/api/email/threads?label=INBOX", &tok).await,
        200,
    )
    .await;
    assert_eq!(inbox["threads"].as_array().unwrap().len(), 2);
    for bad in ["?limit=0", "?limit=101", "?cursor=%%%"] {
        assert_eq!(
            app.get_auth(&format!("/api/email/threads{bad}"), &tok)
                .await
                .status(),
            400,
            "{bad}"
        );
    }

    // Attachments, fetched from IMAP on demand with their content type.
    let lunch_msg = expect_json(
        app.get_auth(
            &format!(
                "/api/email/messages/{}",
                lunch_t["messageIds"][0].as_str().unwrap()
            ),
            &tok,
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
            &format!(
                "/api/email/messages/{}/attachments/0",
                lunch_msg["id"].as_str().unwrap()
            ),
            &tok,
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
            &format!(
                "/api/email/messages/{}/attachments/1",
                lunch_msg["id"].as_str().unwrap()
            ),
            &tok,
        )
        .await;
    expect_error(resp, 404, "not_found").await;

    // A flag changed by another client shows up: through IDLE (the poll interval is the
    // default 60 s, past the wait), also when the change falls between a sync round and
    // the worker's next IDLE.
    dovecot::set_flag(&email, IMAP_PASSWORD, "INBOX", true, "\\Flagged").await;
    wait_threads(&app, &tok, "", |b| {
        find_thread(b, &subject).is_some_and(|t| t["starred"] == true)
    })
    .await;
    dovecot::set_flag(&email, IMAP_PASSWORD, "INBOX", false, "\\Flagged").await;
    wait_threads(&app, &tok, "", |b| {
        find_thread(b, &subject).is_some_and(|t| t["starred"] == false)
    })
    .await;

    let server = |mailbox: &'static str| {
        let email = email.clone();
        async move { dovecot::list(&email, IMAP_PASSWORD, mailbox).await }
    };
    let in_box = |list: &[(u32, bool, bool, String)], mid: &str| {
        list.iter().find(|m| m.3.contains(mid)).cloned()
    };

    // read / unread / star / unstar: on the server before the answer.
    let t = expect_json(act(&app, &tok, &tid, json!({"action": "read"})).await, 200).await;
    assert_eq!(t["unread"], false);
    assert!(server("INBOX")
        .await
        .iter()
        .filter(|m| m.3.contains(&run) && !m.3.contains("lunch"))
        .all(|m| m.1));
    let t = expect_json(
        act(&app, &tok, &tid, json!({"action": "unread"})).await,
        200,
    )
    .await;
    assert_eq!(t["unread"], true);
    assert!(!in_box(&server("INBOX").await, &m1).unwrap().1);
    let t = expect_json(act(&app, &tok, &tid, json!({"action": "star"})).await, 200).await;
    assert_eq!(t["starred"], true);
    assert!(in_box(&server("INBOX").await, &m2).unwrap().2);
    let t = expect_json(
        act(&app, &tok, &tid, json!({"action": "unstar"})).await,
        200,
    )
    .await;
    assert_eq!(t["starred"], false);
    assert!(!in_box(&server("INBOX").await, &m2).unwrap().2);

    // archive / unarchive move between INBOX and \Archive; ids stay.
    let t = expect_json(
        act(&app, &tok, &tid, json!({"action": "archive"})).await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["Archive"]), "{t}");
    assert_eq!(t["id"], tid.as_str());
    assert_eq!(
        t["messageIds"], plan["messageIds"],
        "message ids survive a move"
    );
    assert!(in_box(&server("INBOX").await, &m1).is_none());
    assert!(in_box(&server("Archive").await, &m3).is_some());
    let t = expect_json(
        act(&app, &tok, &tid, json!({"action": "unarchive"})).await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX"]));
    assert!(in_box(&server("INBOX").await, &m1).is_some());
    assert!(in_box(&server("Archive").await, &m1).is_none());

    // Labels: create, list, add, remove.
    let label = format!("Projects-{}", &run[..6]);
    let l = expect_json(
        app.post_json("/api/email/labels", Some(&tok), json!({"name": label}))
            .await,
        201,
    )
    .await;
    assert_eq!(
        l,
        json!({"id": label, "name": label, "type": "user", "unread": 0, "total": 0})
    );
    expect_error(
        app.post_json("/api/email/labels", Some(&tok), json!({"name": label}))
            .await,
        409,
        "label_exists",
    )
    .await;
    expect_error(
        app.post_json("/api/email/labels", Some(&tok), json!({"name": "a*b"}))
            .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(dovecot::mailbox_names(&email, IMAP_PASSWORD)
        .await
        .contains(&label));
    let t = expect_json(
        act(
            &app,
            &tok,
            &tid,
            json!({"action": "addLabel", "label": label}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX", label]));
    let labeled = dovecot::list(&email, IMAP_PASSWORD, &label).await;
    assert_eq!(labeled.len(), 3, "{labeled:?}");
    let labels = expect_json(app.get_auth("/api/email/labels", &tok).await, 200).await;
    let get = |id: &str| {
        labels["labels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["id"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(get("INBOX")["type"], "system");
    assert_eq!(get("INBOX")["total"], 4);
    assert_eq!(get("Sent")["type"], "system");
    assert_eq!(get(&label)["type"], "user");
    assert_eq!(get(&label)["total"], 3);
    let t = expect_json(
        act(
            &app,
            &tok,
            &tid,
            json!({"action": "removeLabel", "label": label}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(t["labels"], json!(["INBOX"]));
    assert!(dovecot::list(&email, IMAP_PASSWORD, &label)
        .await
        .is_empty());
    expect_error(
        act(
            &app,
            &tok,
            &tid,
            json!({"action": "addLabel", "label": "Nope"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        act(&app, &tok, &tid, json!({"action": "addLabel"})).await,
        400,
        "invalid_request",
    )
    .await;
    assert_eq!(
        act(&app, &tok, &tid, json!({"action": "explode"}))
            .await
            .status(),
        400
    );

    // An action the server refuses: the label's mailbox was deleted by another client.
    let gone = format!("Gone-{}", &run[..6]);
    expect_json(
        app.post_json("/api/email/labels", Some(&tok), json!({"name": gone}))
            .await,
        201,
    )
    .await;
    dovecot::delete_mailbox(&email, IMAP_PASSWORD, &gone).await;
    // Either the action reaches the server first (502 with its words), or a sync round
    // saw the deletion first and the label is gone from the cache (404): then it must be
    // gone from the label list too.
    let resp = act(
        &app,
        &tok,
        &tid,
        json!({"action": "addLabel", "label": gone}),
    )
    .await;
    if resp.status() == 404 {
        expect_error(resp, 404, "not_found").await;
        let labels = expect_json(app.get_auth("/api/email/labels", &tok).await, 200).await;
        assert!(
            !labels.to_string().contains(&gone),
            "404 only once the label left the cache: {labels}"
        );
    } else {
        let e = expect_error(resp, 502, "mail_action_failed").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("mailbox"),
            "the server's words: {e}"
        );
    }

    // Signatures.
    let sig = expect_json(
        app.post_json(
            "/api/email/signatures",
            Some(&tok),
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
            Some(&tok),
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
            Some(&tok),
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
    expect_json(app.send(Method::DELETE, &path, Some(&tok), None).await, 200).await;
    expect_error(
        app.send(Method::DELETE, &path, Some(&tok), None).await,
        404,
        "not_found",
    )
    .await;
    let sigs = expect_json(app.get_auth("/api/email/signatures", &tok).await, 200).await;
    assert_eq!(sigs["signatures"].as_array().unwrap().len(), 1);
    expect_error(
        app.post_json(
            "/api/email/signatures",
            Some(&tok),
            json!({"name": "", "text": "x"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;

    // A reply: through SMTP with In-Reply-To, into Sent and into the thread.
    let resp = app
        .post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["Alice Example <alice@example.org>"], "subject": format!("Re: {subject}"),
                   "text": "Sounds good to me", "replyTo": ids[2], "signatureId": sig_id}),
        )
        .await;
    let sent = expect_json(resp, 201).await;
    assert_eq!(sent["threadId"], tid.as_str(), "the reply joins the thread");
    let delivered = wait_sink(|m| m.contains("Sounds good to me")).await;
    assert!(
        delivered.contains(&format!("In-Reply-To: <{m3}>")),
        "{delivered}"
    );
    assert!(
        delivered.contains(&format!("<{m1}>")),
        "References carry the thread: {delivered}"
    );
    assert!(
        delivered.contains("Box Owner, Example Ltd"),
        "the signature: {delivered}"
    );
    assert!(
        delivered.starts_with("X-Rcpt-To: alice@example.org"),
        "{delivered}"
    );
    let sent_box = server("Sent").await;
    assert_eq!(sent_box.len(), 1, "APPENDed to Sent: {sent_box:?}");
    let t = expect_json(
        app.get_auth(&format!("/api/email/threads/{tid}"), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(t["messageCount"], 4);
    assert_eq!(t["labels"], json!(["INBOX", "Sent"]));
    assert_eq!(t["messageIds"][3], sent["id"]);

    // A forward carries the original; bad addresses are 400 naming the field; an SMTP
    // refusal is 502.
    let resp = app
        .post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["carol@example.org"], "subject": "Fwd: lunch", "text": "FYI", "forward": lunch_msg["id"]}),
        )
        .await;
    expect_json(resp, 201).await;
    let fwd = wait_sink(|m| m.contains("FYI")).await;
    assert!(
        fwd.contains("Menu attached") && fwd.contains("Forwarded message"),
        "{fwd}"
    );
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["bob@"], "subject": "x", "text": "y"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("to[0]"), "{e}");
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["a@example.org"], "cc": ["x y z"], "subject": "x", "text": "y"}),
        )
        .await,
        400,
        "invalid_request",
    )
    .await;
    assert!(e["message"].as_str().unwrap().starts_with("cc[0]"), "{e}");
    expect_error(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["reject-me@example.org"], "subject": "x", "text": "y"}),
        )
        .await,
        502,
        "mail_send_failed",
    )
    .await;
    expect_error(
        app.post_json("/api/email/compose", Some(&tok), json!({"to": ["a@example.org"], "subject": "x", "text": "y", "replyTo": uuid::Uuid::new_v4().to_string()})).await,
        404,
        "not_found",
    )
    .await;

    // Personal tokens: list, read, thread actions, compose, labels, signatures.
    let pat = personal_token(&app, &user).await;
    let via_pat = expect_json(app.get_auth("/api/email/threads", &pat).await, 200).await;
    assert!(find_thread(&via_pat, &subject).is_some());
    expect_json(
        app.get_auth(&format!("/api/email/threads/{tid}"), &pat)
            .await,
        200,
    )
    .await;
    expect_json(
        app.get_auth(&format!("/api/email/messages/{}", ids[0]), &pat)
            .await,
        200,
    )
    .await;
    expect_json(act(&app, &pat, &tid, json!({"action": "read"})).await, 200).await;
    expect_json(app.get_auth("/api/email/labels", &pat).await, 200).await;
    expect_json(app.get_auth("/api/email/signatures", &pat).await, 200).await;

    // Another user's ids are 404 everywhere.
    let other = app.sign_up("mail-e2e-other").await;
    let ot = &other.access_token;
    expect_error(
        app.get_auth(&format!("/api/email/threads/{tid}"), ot).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth(&format!("/api/email/messages/{}", ids[0]), ot)
            .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.get_auth(
            &format!(
                "/api/email/messages/{}/attachments/0",
                lunch_msg["id"].as_str().unwrap()
            ),
            ot,
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        act(&app, ot, &tid, json!({"action": "delete"})).await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.send(
            Method::PUT,
            &format!("/api/email/signatures/{sig_id}"),
            Some(ot),
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    expect_error(
        app.post_json(
            "/api/email/compose",
            Some(ot),
            json!({"to": ["a@example.org"], "subject": "x", "text": "y", "replyTo": ids[0]}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let empty = expect_json(app.get_auth("/api/email/threads", ot).await, 200).await;
    assert_eq!(empty["threads"], json!([]));
    expect_error(
        app.get_auth("/api/email/threads/not-a-uuid", &tok).await,
        404,
        "not_found",
    )
    .await;

    // trash, then delete for good.
    let lid = lunch_t["id"].as_str().unwrap();
    let t = expect_json(act(&app, &tok, lid, json!({"action": "trash"})).await, 200).await;
    assert_eq!(t["labels"], json!(["Trash"]));
    assert!(server("INBOX").await.iter().all(|m| !m.3.contains("lunch")));
    assert_eq!(server("Trash").await.len(), 1);
    let t = expect_json(act(&app, &tok, lid, json!({"action": "delete"})).await, 200).await;
    assert_eq!(t["messageIds"], json!([]));
    assert!(server("Trash").await.is_empty(), "expunged for good");
    expect_error(
        app.get_auth(&format!("/api/email/threads/{lid}"), &tok)
            .await,
        404,
        "not_found",
    )
    .await;

    // Nothing readable at rest: not the subject, the text, nor the IMAP password.
    let mut bytes = std::fs::read(app.data_dir().join("switchboard.db")).unwrap();
    bytes.extend(std::fs::read(app.data_dir().join("switchboard.db-wal")).unwrap_or_default());
    let hay = String::from_utf8_lossy(&bytes);
    for secret in [
        subject.as_str(),
        "One more thing",
        "Sounds good to me",
        IMAP_PASSWORD,
        m1.as_str(),
        "Box Owner, Example Ltd",
    ] {
        assert!(!hay.contains(secret), "{secret:?} is stored in plaintext");
    }
}

/// Waits for a message in the SMTP sink matching `pred`; returns it.
async fn wait_sink(pred: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Ok(dir) = std::fs::read_dir(&mail::smtp().maildir) {
            for e in dir.filter_map(Result::ok) {
                if let Ok(text) = std::fs::read_to_string(e.path()) {
                    if pred(&text) {
                        return text;
                    }
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no such message in the SMTP sink"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_outage_keeps_cached_mail_readable_and_key_deletion_drops_the_accounts() {
    // A Dovecot of this test's own, so it can be stopped.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let script = repo_root().join("scripts/dovecot.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(dir.path())
        .arg(port.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stop = || {
        let _ = std::process::Command::new("bash")
            .arg(&script)
            .arg("--stop")
            .arg(dir.path())
            .output();
    };
    let email = unique_email("outage");
    let added = std::process::Command::new("bash")
        .arg(&script)
        .arg("--add-user")
        .arg(dir.path())
        .arg(&email)
        .arg(IMAP_PASSWORD)
        .output()
        .unwrap();
    assert!(added.status.success());
    let mut ep = dovecot::endpoint(&email, IMAP_PASSWORD);
    ep.port = port;
    let mut s =
        switchboard::clients::mail::imap::connect(&ep, &dovecot::harness_config(), "test-harness")
            .await
            .unwrap();
    let raw = thread_mail(
        "outage.1@example.org",
        None,
        "",
        "Before the outage",
        "Still here",
    )
    .replace('\n', "\r\n");
    switchboard::clients::mail::imap::append(&mut s, "INBOX", "()", raw.as_bytes())
        .await
        .unwrap();
    switchboard::clients::mail::imap::logout(s).await;

    let app = TestApp::start_with_mail().await;
    // With a registered key, so that DELETE /api/keys can run.
    let key = {
        use base64::Engine;
        let mut b = uuid::Uuid::new_v4().as_bytes().to_vec();
        b.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let user = app.sign_in(&unique_email("mail-outage"), Some(&key)).await;
    let tok = user.access_token.clone();
    let resp = app
        .post_json(
            "/api/email/accounts",
            Some(&tok),
            account_body(&email, port, IMAP_PASSWORD, "x"),
        )
        .await;
    let account = expect_json(resp, 201).await;
    let list = wait_threads(&app, &tok, "", |b| {
        b["threads"].as_array().is_some_and(|t| t.len() == 1)
    })
    .await;
    let tid = list["threads"][0]["id"].as_str().unwrap().to_owned();
    let mid = list["threads"][0]["messageIds"][0]
        .as_str()
        .unwrap()
        .to_owned();

    stop();
    // The sync task notices and says so; the cache stays readable.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = expect_json(app.get_auth("/api/email/accounts", &tok).await, 200).await;
        if l["accounts"][0]["status"] == "unreachable" {
            assert!(l["accounts"][0]["error"].is_string(), "{l}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "status never became unreachable: {l}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let l = expect_json(app.get_auth("/api/email/threads", &tok).await, 200).await;
    assert_eq!(l["threads"][0]["subject"], "Before the outage");
    let m = expect_json(
        app.get_auth(&format!("/api/email/messages/{mid}"), &tok)
            .await,
        200,
    )
    .await;
    assert_eq!(m["text"].as_str().unwrap().trim(), "Still here");
    // Actions need the server: 503, never 500.
    expect_error(
        act(&app, &tok, &tid, json!({"action": "read"})).await,
        503,
        "mail_unreachable",
    )
    .await;

    // DELETE /api/keys drops the accounts and their cached mail with the old data key.
    let resp = app
        .http
        .delete(app.url("/api/keys"))
        .bearer_auth(&tok)
        .header(
            "X-Confirm-Key-Deletion",
            "PERMANENTLY_DELETE_ALL_MY_MESSAGES",
        )
        .send()
        .await
        .unwrap();
    expect_json(resp, 200).await;
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    for table in [
        "email_accounts",
        "email_mailboxes",
        "email_messages",
        "email_threads",
        "email_locations",
        "email_thread_refs",
    ] {
        let n: i64 = db
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{table} still has rows after DELETE /api/keys");
    }
    let _ = account;
}
