//! Encrypted search over cached e-mail: mail delivered to a real Dovecot, synced by the
//! mailbox worker, found as `kind: "email"` results; rebuilt by `switchboard reindex`;
//! summarized without `[ai]` (extractive; another user's thread is 404); gone with its
//! mailbox.

use serde_json::json;

use crate::common::*;
use crate::search::{enc, reindex, search, wait_for_results};

#[tokio::test]
async fn cached_mail_is_found_reindexed_summarized_and_leaves_the_index_with_its_account() {
    use crate::common::dovecot::{self, add_user};
    const PASSWORD: &str = "imap-search-5Tz";
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("search.mail").await;
    let jwt = me.access_token.clone();
    let email = add_user("srch", PASSWORD);
    let run = uuid::Uuid::new_v4().simple().to_string();
    for (i, (subject, text)) in [
        ("Periwinkle paint order", "Two tins, please."),
        ("Weekend", "The periwinkle door needs a second coat."),
        ("Unrelated", "Nothing here."),
    ]
    .iter()
    .enumerate()
    {
        let raw = format!(
            "From: Dana <dana@example.org>\nTo: {email}\nSubject: {subject}\n\
             Message-ID: <s{i}.{run}@example.org>\nDate: Wed, 2 Jul 2025 12:0{i}:00 +0000\n\
             Content-Type: text/plain; charset=utf-8\n\n{text}\n"
        );
        dovecot::deliver(&email, PASSWORD, "INBOX", &raw).await;
    }
    let account = crate::email::connect_mailbox(&app, &jwt, &email, PASSWORD).await;
    let page = wait_for_results(&app, &jwt, "q=periwinkle", 2).await;
    let page_before_reindex = page.clone();
    let results = page["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{page}");
    for r in results {
        assert_eq!(r["kind"], "email", "{r}");
        assert!(
            r["threadId"].is_string() && r.get("roomId").is_none(),
            "{r}"
        );
        assert!(r["senderId"].is_null());
    }
    // Newest first: the second mail (12:01) before the first (12:00).
    assert!(
        results[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("periwinkle door"),
        "{page}"
    );
    assert!(
        results[1]["snippet"]
            .as_str()
            .unwrap()
            .starts_with("Periwinkle paint order"),
        "{page}"
    );
    // A phrase over the mail's text.
    let page = search(&app, &jwt, &format!("q={}", enc("\"second coat\""))).await;
    assert_eq!(page["results"].as_array().unwrap().len(), 1, "{page}");

    // `switchboard reindex` rebuilds the mail's part of the index too.
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    let uid = me.user["id"].as_str().unwrap().to_owned();
    db.execute("DELETE FROM search_docs WHERE user_id = ?1", [&uid])
        .unwrap();
    assert_eq!(
        search(&app, &jwt, "q=periwinkle").await["results"],
        json!([])
    );
    let out = reindex(&app, &uid);
    assert!(out.contains("0 messages and 3 e-mails indexed"), "{out}");
    let again = search(&app, &jwt, "q=periwinkle").await;
    assert_eq!(again["results"], page_before_reindex["results"], "{again}");
    let page = search(&app, &jwt, &format!("q={}", enc("\"second coat\""))).await;
    assert_eq!(page["results"].as_array().unwrap().len(), 1, "{page}");

    // Without [ai] a thread's summary is extractive: its mails' own words.
    let thread = results[1]["threadId"].as_str().unwrap().to_owned();
    let s = expect_json(
        app.post_json("/api/ai/summarize", Some(&jwt), json!({"threadId": thread}))
            .await,
        200,
    )
    .await;
    assert_eq!(s["model"], "extractive", "{s}");
    assert_eq!(s["messageCount"], 1, "{s}");
    assert_eq!(s["summary"], "dana@example.org: Two tins, please.", "{s}");
    // Another user's thread, and an id that is none, are 404.
    let other = app.sign_up("search.mail.other").await;
    for (bearer, id) in [(&other.access_token, thread.as_str()), (&jwt, "no-thread")] {
        expect_error(
            app.post_json("/api/ai/summarize", Some(bearer), json!({"threadId": id}))
                .await,
            404,
            "not_found",
        )
        .await;
    }

    // Removing the mailbox removes its mail from the index.
    let id = account["id"].as_str().unwrap();
    let resp = app
        .http
        .delete(app.url(&format!("/api/email/accounts/{id}")))
        .bearer_auth(&jwt)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(
        search(&app, &jwt, "q=periwinkle").await["results"],
        json!([])
    );
    let docs: i64 = rusqlite::Connection::open(app.data_dir().join("switchboard.db"))
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM search_docs WHERE kind = 'email'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(docs, 0);
}
