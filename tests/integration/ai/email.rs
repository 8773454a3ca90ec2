//! AI over cached e-mail, against the real Dovecot and the OpenAI-protocol stand-in: a
//! thread's summary sends only its subject and the mails' own words with senders as labels
//! and comes back sealed once a key is registered; another user's thread is 404; a stuck
//! service is 502 within `[ai] timeout`; AI search ranks mail by meaning (`kind: "email"`,
//! `threadId`) and drops the vectors of a removed mailbox.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::routes::{last_with_prompt, open_text, post, register_key};
use crate::common::ai::{self as standin, AiStandIn, Answer};
use crate::common::dovecot::{self, add_user};
use crate::common::*;
use crate::search::wait_for_results;

const PASSWORD: &str = "imap-ai-8Qw";
const SUMMARY: &str = "Dana asked to take the car in on Friday; you agreed.";

fn mail(email: &str, run: &str, n: u32, head: &str, text: &str) -> String {
    format!(
        "{head}\nMessage-ID: <m{n}.{run}@example.org>\nDate: Wed, 2 Jul 2025 1{n}:00:00 +0000\n\
         Content-Type: text/plain; charset=utf-8\n\n{text}\n"
    )
    .replace("{email}", email)
}

fn email_vectors(app: &TestApp) -> i64 {
    rusqlite::Connection::open(app.data_dir().join("switchboard.db"))
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM search_vectors WHERE kind = 'email'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

#[tokio::test]
async fn threads_are_summarized_and_mail_is_searched_by_meaning() {
    let ai = AiStandIn::start(Answer::Text(SUMMARY.into())).await;
    let app =
        TestApp::start_with_mail_and(format!("{}timeout = \"3s\"\n", ai.config_section())).await;
    let me = app.sign_up("ai.mail").await;
    let jwt = me.access_token.clone();
    let email = add_user("aimail", PASSWORD);
    deliver_a_thread_and_an_order(&email).await;
    let account = crate::email::connect_mailbox(&app, &jwt, &email, PASSWORD).await;
    let page = wait_for_results(&app, &jwt, "q=friday", 2).await;
    let thread = page["results"][0]["threadId"].as_str().unwrap().to_owned();
    assert_eq!(page["results"][1]["threadId"], thread.as_str(), "{page}");

    a_summary_sends_each_mails_own_words(&app, &ai, &jwt, &thread).await;
    another_users_thread_is_404_and_never_sent(&app, &ai, &thread).await;
    ai_search_finds_mail_by_meaning(&app, &ai, &jwt, &thread).await;
    a_summary_is_sealed_to_a_registered_key(&app, &me, &thread).await;
    a_hanging_service_is_502_within_the_timeout(&app, &ai, &jwt, &thread).await;
    removing_the_mailbox_takes_its_vectors(&app, &jwt, &account).await;
}

/// Delivers a thread of two (Dana's question, my answer quoting it) and a third mail.
async fn deliver_a_thread_and_an_order(email: &str) {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let first = format!("<m0.{run}@example.org>");
    for raw in [
        mail(
            email,
            &run,
            0,
            "From: Dana <dana@example.org>\nTo: {email}\nSubject: Car service",
            "Can you take the automobile to the garage on Friday?",
        ),
        mail(
            email,
            &run,
            1,
            &format!(
                "From: Me <{{email}}>\nTo: dana@example.org\nSubject: Re: Car service\n\
                 In-Reply-To: {first}\nReferences: {first}"
            ),
            "Yes, Friday works.\n\nOn Wed, Dana wrote:\n> Can you take the automobile to the \
             garage on Friday?",
        ),
        mail(
            email,
            &run,
            2,
            "From: Shop <shop@example.org>\nTo: {email}\nSubject: Your order",
            "The invoice for the pizza is attached.",
        ),
    ] {
        dovecot::deliver(email, PASSWORD, "INBOX", &raw).await;
    }
}

/// The summary: subject and each mail's own words (no quote), senders as labels; `since`
/// narrows it.
async fn a_summary_sends_each_mails_own_words(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
    thread: &str,
) {
    let s = expect_json(
        post(app, jwt, "/api/ai/summarize", json!({"threadId": thread})).await,
        200,
    )
    .await;
    assert_eq!(s["summary"], SUMMARY, "{s}");
    assert_eq!(s["messageCount"], 2, "{s}");
    assert_eq!(s["model"], standin::MODEL);
    let sent = last_with_prompt(ai, "You summarize an e-mail thread").body["messages"][1]
        ["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        sent,
        "Subject: Car service\n\np1: Can you take the automobile to the garage on Friday?\n\
         me: Yes, Friday works."
    );
    assert!(!sent.contains('@'), "{sent}");
    let s = expect_json(
        post(
            app,
            jwt,
            "/api/ai/summarize",
            json!({"threadId": thread, "since": "2025-07-02T10:30:00Z"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(s["messageCount"], 1, "{s}");
}

/// Another user's thread is 404, and nothing of it reaches the service.
async fn another_users_thread_is_404_and_never_sent(app: &TestApp, ai: &AiStandIn, thread: &str) {
    let other = app.sign_up("ai.mail.other").await;
    let asked = ai.completions().len();
    expect_error(
        post(
            app,
            &other.access_token,
            "/api/ai/summarize",
            json!({"threadId": thread}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    assert_eq!(ai.completions().len(), asked);
}

/// AI search: "vehicle" is in no mail; the car thread is nearest by meaning; every mail
/// is embedded.
async fn ai_search_finds_mail_by_meaning(app: &TestApp, ai: &AiStandIn, jwt: &str, thread: &str) {
    let found = expect_json(
        post(app, jwt, "/api/ai/search", json!({"query": "vehicle"})).await,
        200,
    )
    .await;
    let top = &found["results"][0];
    assert_eq!(top["kind"], "email", "{found}");
    assert_eq!(top["threadId"], thread, "{found}");
    assert!(top.get("roomId").is_none(), "{found}");
    let inputs: Vec<String> = ai
        .requests_to("/v1/embeddings")
        .iter()
        .flat_map(|r| r.body["input"].as_array().cloned().unwrap_or_default())
        .filter_map(|x| x.as_str().map(str::to_owned))
        .collect();
    assert!(
        inputs.iter().any(|t| t.contains("invoice for the pizza")),
        "{inputs:?}"
    );
    assert_eq!(email_vectors(app), 3);
}

/// Sealed to a registered key.
async fn a_summary_is_sealed_to_a_registered_key(app: &TestApp, me: &Session, thread: &str) {
    let jwt = &me.access_token;
    let secret = register_key(app, me).await;
    let s = expect_json(
        post(app, jwt, "/api/ai/summarize", json!({"threadId": thread})).await,
        200,
    )
    .await;
    assert!(s.get("summary").is_none(), "{s}");
    assert_eq!(open_text(&secret, &s["encryptedSummary"]), SUMMARY);
}

/// A service that takes the request and never answers: 502 within the timeout.
async fn a_hanging_service_is_502_within_the_timeout(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
    thread: &str,
) {
    ai.set_hang(true);
    let asked = ai.completions().len();
    let started = Instant::now();
    expect_error(
        post(app, jwt, "/api/ai/summarize", json!({"threadId": thread})).await,
        502,
        "ai_unavailable",
    )
    .await;
    assert!(
        ai.completions().len() > asked,
        "the request reached the service"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3 + 4),
        "{:?}",
        started.elapsed()
    );
    ai.set_hang(false);
}

/// Removing the mailbox takes its mails' vectors along.
async fn removing_the_mailbox_takes_its_vectors(app: &TestApp, jwt: &str, account: &Value) {
    let id = account["id"].as_str().unwrap();
    let resp = app
        .http
        .delete(app.url(&format!("/api/email/accounts/{id}")))
        .bearer_auth(jwt)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(email_vectors(app), 0);
}
