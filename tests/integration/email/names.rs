//! Mailbox (label) names at rest (issue #21) against a real Dovecot: a private name such as
//! "Lawyer-divorce" is nowhere in the database file or its WAL, while labels, the thread
//! filter and labelling by that name keep working; names stored in clear by an earlier
//! version are sealed at the next start.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::dovecot::{self, add_user};
use crate::common::*;
use crate::email::{act, connect_mailbox};
use switchboard::crypto::{Aad, MasterKey};

const PW: &str = "imap-names-9Rk";

fn mail(mid: &str, subject: &str) -> String {
    format!(
        "From: Alice Example <alice@example.org>\nTo: Box Owner <box@example.test>\n\
         Subject: {subject}\nMessage-ID: <{mid}>\nDate: Tue, 1 Jul 2025 10:00:00 +0000\n\
         Content-Type: text/plain; charset=utf-8\n\nSee you there.\n"
    )
}

/// Creates mailboxes behind Switchboard's back, as another mail client would.
async fn create_boxes(user: &str, names: &[&str]) {
    let mut s = dovecot::login(user, PW).await;
    for n in names {
        switchboard::clients::mail::imap::create_mailbox(&mut s, n)
            .await
            .expect("CREATE");
    }
    switchboard::clients::mail::imap::logout(s).await;
}

async fn labels(app: &TestApp, tok: &str) -> Vec<Value> {
    expect_json(app.get_auth("/api/email/labels", tok).await, 200).await["labels"]
        .as_array()
        .unwrap()
        .clone()
}

/// Polls the label list until `pred` holds.
async fn wait_labels(app: &TestApp, tok: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let l = labels(app, tok).await;
        if pred(&l) {
            return l;
        }
        assert!(Instant::now() < deadline, "labels never matched: {l:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn label<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|l| l["name"] == name)
}

async fn threads(app: &TestApp, tok: &str, label: &str) -> Vec<Value> {
    let q = format!("/api/email/threads?label={}", urlencode(label));
    expect_json(app.get_auth(&q, tok).await, 200).await["threads"]
        .as_array()
        .unwrap()
        .clone()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Asserts that none of `names` is stored; `marker` (stored in clear) proves the scan reads
/// the real data.
fn assert_not_stored(app: &TestApp, marker: &str, names: &[&str]) {
    let hay = database_bytes(app);
    assert!(contains(&hay, marker), "the scan does not see the database");
    for n in names {
        assert!(!contains(&hay, n), "{n:?} is stored in plaintext");
    }
}

#[tokio::test]
async fn mailbox_names_are_sealed_at_rest_and_labels_still_work() {
    let (mut app, n) = setup().await;
    labelling_and_moving_by_a_sealed_name(&app, &n).await;
    a_label_created_through_the_api_is_sealed_too(&app, &n).await;
    a_second_user_has_their_own_label_and_hash(&app, &n).await;
    every_row_is_sealed_at_rest(&app, &n).await;
    an_earlier_versions_rows_are_sealed_at_the_next_start(&mut app, &n).await;
}

/// One user's mailbox with private mailbox names, connected and synced.
struct Names {
    run: String,
    secret: String,
    nested: String,
    created: String,
    a_mail: String,
    tok: String,
    account_id: String,
    /// The thread in INBOX and the one in the secret mailbox.
    hello: String,
    retainer: String,
}

impl Names {
    fn private(&self) -> [&str; 4] {
        [
            self.secret.as_str(),
            self.nested.as_str(),
            "Job applications",
            self.created.as_str(),
        ]
    }
}

/// Mailboxes with private names on the server, the account connected, the first listing.
async fn setup() -> (TestApp, Names) {
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let secret = format!("Lawyer-divorce-{run}");
    let nested = format!("Job applications/Acme-{run}");
    let created = format!("Therapy-notes-{run}");
    let a_mail = add_user("names-a", PW);
    create_boxes(&a_mail, &[&secret, &nested]).await;
    dovecot::deliver(
        &a_mail,
        PW,
        &secret,
        &mail(&format!("ret.{run}@x"), "Retainer"),
    )
    .await;
    dovecot::deliver(&a_mail, PW, "INBOX", &mail(&format!("hi.{run}@x"), "Hello")).await;

    let app = TestApp::start_with_mail().await;
    let a = app.sign_up("names-a").await;
    let tok = a.access_token.clone();
    let account = connect_mailbox(&app, &tok, &a_mail, PW).await;
    let account_id = account["id"].as_str().unwrap().to_owned();
    let l = wait_labels(&app, &tok, |l| {
        label(l, &secret).is_some_and(|x| x["total"] == 1)
            && label(l, "INBOX").is_some_and(|x| x["total"] == 1)
    })
    .await;
    // The API shape is unchanged: a label's id is its name.
    assert_eq!(
        label(&l, &secret).unwrap(),
        &json!({"id": secret, "name": secret, "type": "user", "unread": 1, "total": 1})
    );
    assert_eq!(label(&l, &nested).unwrap()["total"], 0);
    assert_eq!(label(&l, "INBOX").unwrap()["type"], "system");

    // The thread filter finds threads by the name (exactly: IMAP names are case-sensitive).
    let t = threads(&app, &tok, &secret).await;
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0]["subject"], "Retainer");
    assert_eq!(t[0]["labels"], json!([secret]));
    assert!(threads(&app, &tok, &secret.to_uppercase()).await.is_empty());
    assert!(threads(&app, &tok, &format!("{secret}x")).await.is_empty());
    let inbox = threads(&app, &tok, "INBOX").await;
    assert_eq!(inbox.len(), 1);
    let hello = inbox[0]["id"].as_str().unwrap().to_owned();
    let retainer = t[0]["id"].as_str().unwrap().to_owned();
    let n = Names {
        run,
        secret,
        nested,
        created,
        a_mail,
        tok,
        account_id,
        hello,
        retainer,
    };
    (app, n)
}

/// Labelling and moving by a sealed name, as seen on the IMAP server; an unknown name (or one of another case) is 404, never a guess.
async fn labelling_and_moving_by_a_sealed_name(app: &TestApp, n: &Names) {
    let Names {
        run,
        secret,
        nested,
        a_mail,
        tok,
        hello,
        ..
    } = n;
    // Labelling and moving by a sealed name, as seen on the IMAP server.
    let th = expect_json(
        act(
            app,
            tok,
            hello,
            json!({"action": "addLabel", "label": nested}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(th["labels"], json!(["INBOX", nested]));
    assert_eq!(dovecot::list(a_mail, PW, nested).await.len(), 1);
    let m = expect_json(
        app.get_auth(
            &format!(
                "/api/email/messages/{}",
                th["messageIds"][0].as_str().unwrap()
            ),
            tok,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(m["labels"], json!(["INBOX", nested]));
    let th = expect_json(
        act(
            app,
            tok,
            hello,
            json!({"action": "addLabel", "label": secret}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(th["labels"], json!(["INBOX", nested, secret]));
    assert_eq!(threads(app, tok, secret).await.len(), 2);
    let th = expect_json(
        act(
            app,
            tok,
            hello,
            json!({"action": "removeLabel", "label": secret}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(th["labels"], json!(["INBOX", nested]));
    let left = dovecot::list(a_mail, PW, secret).await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].3.contains("ret."), "{left:?}");
    let th = expect_json(
        act(app, tok, hello, json!({"action": "archive"})).await,
        200,
    )
    .await;
    assert_eq!(th["labels"], json!(["Archive", nested]));
    assert_eq!(threads(app, tok, nested).await.len(), 1);
    // An unknown name (or one of another case) is 404, never a guess.
    for wrong in [format!("Nope-{run}"), secret.to_lowercase()] {
        expect_error(
            act(
                app,
                tok,
                hello,
                json!({"action": "addLabel", "label": wrong}),
            )
            .await,
            404,
            "not_found",
        )
        .await;
    }
}

/// A label created through the API is sealed too; uniqueness still holds.
async fn a_label_created_through_the_api_is_sealed_too(app: &TestApp, n: &Names) {
    let Names { created, tok, .. } = n;
    // A label created through the API is sealed too; uniqueness still holds.
    let resp = app
        .post_json("/api/email/labels", Some(tok), json!({"name": created}))
        .await;
    assert_eq!(
        expect_json(resp, 201).await,
        json!({"id": created, "name": created, "type": "user", "unread": 0, "total": 0})
    );
    for again in [created.clone(), created.to_uppercase()] {
        expect_error(
            app.post_json("/api/email/labels", Some(tok), json!({"name": again}))
                .await,
            409,
            "label_exists",
        )
        .await;
    }
    wait_labels(app, tok, |l| label(l, created).is_some()).await;
}

/// A second user with a mailbox of the same name: their own label, their own hash; each user's label counts and lists only their own mail.
async fn a_second_user_has_their_own_label_and_hash(app: &TestApp, n: &Names) {
    let Names {
        run,
        secret,
        tok,
        retainer,
        ..
    } = n;
    // A second user with a mailbox of the same name: their own label, their own hash.
    let b_mail = add_user("names-b", PW);
    create_boxes(&b_mail, &[secret]).await;
    dovecot::deliver(&b_mail, PW, secret, &mail(&format!("b.{run}@x"), "Other")).await;
    let b = app.sign_up("names-b").await;
    connect_mailbox(app, &b.access_token, &b_mail, PW).await;
    wait_labels(app, &b.access_token, |l| {
        label(l, secret).is_some_and(|x| x["total"] == 1)
    })
    .await;
    let bt = threads(app, &b.access_token, secret).await;
    assert_eq!(bt.len(), 1);
    assert_eq!(bt[0]["subject"], "Other");
    // Each user's label counts and lists only their own mail.
    assert!(label(&labels(app, tok).await, secret).is_some_and(|x| x["total"] == 1));
    let at = threads(app, tok, secret).await;
    assert_eq!(at.len(), 1);
    assert_eq!(at[0]["id"], retainer.as_str());
}

/// At rest: every row sealed, no plain name in any column, the hashes per user.
async fn every_row_is_sealed_at_rest(app: &TestApp, n: &Names) {
    let Names {
        secret, account_id, ..
    } = n;
    // At rest: every row sealed, no plain name in any column, the hashes per user.
    {
        let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
        let (rows, clear): (i64, i64) = db
            .query_row(
                "SELECT COUNT(*), COUNT(CASE WHEN name != id OR name_enc IS NULL \
                   OR name_hash IS NULL THEN 1 END) FROM email_mailboxes",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(rows >= 7, "{rows} mailboxes");
        assert_eq!(clear, 0, "a mailbox row is not sealed");
        let shared: i64 = db
            .query_row(
                "SELECT COUNT(*) FROM email_mailboxes x JOIN email_mailboxes y \
                 ON x.name_hash = y.name_hash AND x.account_id != y.account_id",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(shared, 0, "INBOX and {secret} hash alike for two users");
    }
    let private = n.private();
    assert_not_stored(app, account_id, &private);
}

/// An earlier version's rows (plain names, no hash): sealed at the next start, before the first request, and the WAL no longer holds them either.
async fn an_earlier_versions_rows_are_sealed_at_the_next_start(app: &mut TestApp, n: &Names) {
    let Names {
        secret,
        nested,
        created,
        a_mail,
        tok,
        account_id,
        hello,
        ..
    } = n;
    // An earlier version's rows (plain names, no hash): sealed at the next start, before
    // the first request, and the WAL no longer holds them either.
    app.kill9();
    {
        let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
        let user_id: String = db
            .query_row(
                "SELECT user_id FROM email_accounts WHERE id = ?1",
                [&account_id],
                |r| r.get(0),
            )
            .unwrap();
        let wrapped: Vec<u8> = db
            .query_row(
                "SELECT dek_wrapped FROM users WHERE id = ?1",
                [&user_id],
                |r| r.get(0),
            )
            .unwrap();
        let dek = MasterKey::load(&app.data_dir().join("master.key"))
            .unwrap()
            .unwrap_dek(&wrapped, &user_id)
            .unwrap();
        let rows: Vec<(String, Vec<u8>)> = db
            .prepare("SELECT id, name_enc FROM email_mailboxes WHERE account_id = ?1")
            .unwrap()
            .query_map([&account_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (id, sealed) in rows {
            let name = dek
                .open_string(&sealed, &Aad::new("email_mailboxes", "name", &id))
                .expect("the documented construction opens the name");
            db.execute(
                "UPDATE email_mailboxes SET name = ?2, name_enc = NULL, name_hash = NULL \
                 WHERE id = ?1",
                [&id, &name],
            )
            .unwrap();
        }
    }
    assert!(
        contains(&database_bytes(app), secret),
        "the old rows hold the plain name"
    );
    app.spawn().await;
    assert!(
        app.log()
            .contains("mailbox names of an earlier version sealed"),
        "{}",
        app.log()
    );
    assert_not_stored(app, account_id, &n.private());
    let l = labels(app, tok).await;
    for n in [&secret, &nested, &created] {
        assert!(label(&l, n).is_some(), "{n} after the rewrite: {l:?}");
    }
    assert_eq!(threads(app, tok, nested).await.len(), 1);
    assert_eq!(threads(app, tok, "Archive").await.len(), 1);
    let th = expect_json(
        act(
            app,
            tok,
            hello,
            json!({"action": "removeLabel", "label": nested}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(th["labels"], json!(["Archive"]));
    assert!(dovecot::list(a_mail, PW, nested).await.is_empty());
}
