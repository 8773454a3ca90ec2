//! Attachments out: uploads, a forward's files, the caps, other users' uploads, address
//! completion, sealing at rest.

use serde_json::json;

use super::*;
use crate::common::dovecot;

/// One user and mailbox, the phases in order (the caps and at-rest checks see what the
/// earlier phases left).
#[tokio::test]
async fn attachments_arrive_byte_identical_forwards_carry_files_and_caps_hold() {
    let app = app().await;
    let (tok, email, _) = user_with_mailbox(&app, "att").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let t = Out {
        app,
        tok,
        email,
        run,
    };
    let up_pdf = two_files_arrive_byte_identical(&t).await;
    let other = sent_unknown_and_others_uploads_are_404(&t, &up_pdf).await;
    let a = the_cap_holds(&t).await;
    bad_uploads_are_400(&t).await;
    a_forward_carries_the_originals_file(&t).await;
    addresses_complete_from_headers_and_sent_mail(&t, &other).await;
    addresses_and_files_are_sealed_at_rest(&t, &a).await;
}

struct Out {
    app: TestApp,
    tok: String,
    email: String,
    run: String,
}

/// Two files (a 300 KB PDF and a PNG) arrive byte-identical, in Sent too; returns the PDF's upload.
async fn two_files_arrive_byte_identical(t: &Out) -> Value {
    let Out {
        app,
        tok,
        email,
        run,
    } = t;
    // Two files: a 300 KB PDF and a PNG.
    let pdf = super::pdf(300 * 1024);
    let png = png();
    let up_pdf = expect_json(
        upload(app, tok, "report.pdf", "application/pdf", &pdf).await,
        201,
    )
    .await;
    assert_eq!(up_pdf["size"], pdf.len());
    assert_eq!(up_pdf["name"], "report.pdf");
    assert_eq!(up_pdf["mimetype"], "application/pdf");
    let up_png = expect_json(upload(app, tok, "dot.png", "image/png", &png).await, 201).await;
    let subject = format!("Files {run}");
    let sent = expect_json(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["Carol Example <carol@example.org>"], "subject": subject,
                   "text": "Both files attached", "attachments": [up_pdf["uploadId"], up_png["uploadId"]]}),
        )
        .await,
        201,
    )
    .await;
    assert!(sent["threadId"].is_string(), "{sent}");
    let at_sink = wait_sink(&subject).await;
    assert!(String::from_utf8_lossy(&at_sink).contains("multipart/mixed"));
    let files = files_of(&at_sink);
    assert_eq!(files.len(), 2, "two attachment parts");
    assert_eq!(
        files[0],
        ("report.pdf".to_owned(), pdf.clone()),
        "the PDF, byte for byte"
    );
    assert_eq!(
        files[1],
        ("dot.png".to_owned(), png.clone()),
        "the PNG, byte for byte"
    );
    // The Sent copy carries them too.
    let copies = on_server(email, "Sent", &subject).await;
    assert_eq!(copies.len(), 1, "one copy in Sent");
    assert_eq!(files_of(&copies[0]), files);
    // The message as Switchboard lists it shows the attachments.
    let m = expect_json(
        app.get_auth(
            &format!("/api/email/messages/{}", sent["id"].as_str().unwrap()),
            tok,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(m["attachments"].as_array().unwrap().len(), 2, "{m}");
    up_pdf
}

/// A sent upload is gone; an unknown one and another user's are 404, nothing sent. Returns the other user.
async fn sent_unknown_and_others_uploads_are_404(t: &Out, up_pdf: &Value) -> Session {
    let Out { app, tok, run, .. } = t;
    // A sent upload is gone; an unknown one and another user's are 404, nothing sent.
    let again = json!({"to": ["carol@example.org"], "subject": format!("Again {run}"), "text": "x",
                       "attachments": [up_pdf["uploadId"]]});
    expect_error(
        app.post_json("/api/email/compose", Some(tok), again).await,
        404,
        "not_found",
    )
    .await;
    let other = app.sign_up("att-other").await;
    let theirs = expect_json(
        upload(
            app,
            &other.access_token,
            "theirs.txt",
            "text/plain",
            b"secret",
        )
        .await,
        201,
    )
    .await;
    let steal = json!({"to": ["carol@example.org"], "subject": format!("Steal {run}"), "text": "x",
                       "attachments": [theirs["uploadId"]]});
    expect_error(
        app.post_json("/api/email/compose", Some(tok), steal).await,
        404,
        "not_found",
    )
    .await;
    let bogus =
        json!({"to": ["carol@example.org"], "subject": "x", "text": "x", "attachments": ["nope"]});
    expect_error(
        app.post_json("/api/email/compose", Some(tok), bogus).await,
        404,
        "not_found",
    )
    .await;
    other
}

/// Over the cap (1 MiB here): one file past it, or files that add up past it, are 413. Returns a spooled upload.
async fn the_cap_holds(t: &Out) -> Value {
    let Out { app, tok, run, .. } = t;
    // Over the cap (1 MiB here): one file past it, or files that add up past it, are 413.
    let big = super::pdf(1024 * 1024 + 1);
    let e = expect_error(
        upload(app, tok, "big.pdf", "application/pdf", &big).await,
        413,
        "payload_too_large",
    )
    .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("max_attachments_mb"),
        "{e}"
    );
    let a = expect_json(
        upload(
            app,
            tok,
            "a.bin",
            "application/octet-stream",
            &super::pdf(600 * 1024),
        )
        .await,
        201,
    )
    .await;
    let b = expect_json(
        upload(
            app,
            tok,
            "b.bin",
            "application/octet-stream",
            &super::pdf(600 * 1024),
        )
        .await,
        201,
    )
    .await;
    let both = json!({"to": ["carol@example.org"], "subject": format!("Too much {run}"), "text": "x",
                      "attachments": [a["uploadId"], b["uploadId"]]});
    expect_error(
        app.post_json("/api/email/compose", Some(tok), both).await,
        413,
        "payload_too_large",
    )
    .await;
    a
}

/// Bad uploads: an empty file, a form without one.
async fn bad_uploads_are_400(t: &Out) {
    let Out { app, tok, .. } = t;
    // Bad uploads: an empty file, a form without one.
    expect_error(
        upload(app, tok, "empty.txt", "text/plain", b"").await,
        400,
        "invalid_request",
    )
    .await;
    let (ct, body) = crate::rich::form(&[("note", "x")], None);
    let no_file = app
        .http
        .post(app.url("/api/email/attachments"))
        .bearer_auth(tok)
        .header("Content-Type", ct)
        .body(body)
        .send()
        .await
        .unwrap();
    let e = expect_error(no_file, 400, "invalid_request").await;
    assert!(e["message"].as_str().unwrap().starts_with("note"), "{e}");
}

/// A forward with includeAttachments carries the original's file.
async fn a_forward_carries_the_originals_file(t: &Out) {
    let Out {
        app,
        tok,
        email,
        run,
    } = t;
    // A forward with includeAttachments carries the original's file.
    let csv = b"dish,price\r\nsoup,4\r\n\xff\x00binary tail".to_vec();
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&csv);
    let original = format!(
        "From: Dana <dana@example.org>\nTo: {email}\nSubject: Menu {run}\nMessage-ID: <menu.{run}@example.org>\n\
         Date: Wed, 2 Jul 2025 12:00:00 +0000\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XX\n\n\
         --XX\nContent-Type: text/plain\n\nMenu attached\n--XX\nContent-Type: application/octet-stream\n\
         Content-Disposition: attachment; filename=menu.bin\nContent-Transfer-Encoding: base64\n\n{b64}\n--XX--\n"
    );
    dovecot::deliver(email, IMAP_PASSWORD, "INBOX", &original).await;
    let menu_id = wait_message(app, tok, &format!("Menu {run}")).await;
    let fwd_subject = format!("Fwd: Menu {run}");
    expect_json(
        app.post_json(
            "/api/email/compose",
            Some(tok),
            json!({"to": ["erin@example.org"], "subject": fwd_subject, "text": "See below",
                   "forward": menu_id, "includeAttachments": true}),
        )
        .await,
        201,
    )
    .await;
    let fwd = wait_sink(&fwd_subject).await;
    assert_eq!(
        files_of(&fwd),
        vec![("menu.bin".to_owned(), csv)],
        "the original's file"
    );
    assert!(String::from_utf8_lossy(&fwd).contains("Forwarded message"));
    let e = expect_error(
        app.post_json("/api/email/compose", Some(tok),
            json!({"to": ["erin@example.org"], "subject": "x", "text": "x", "includeAttachments": true})).await,
        400, "invalid_request").await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("includeAttachments"),
        "{e}"
    );
}

/// Address completion: from the mail's headers and what was sent, most used first; never the user's own address.
async fn addresses_complete_from_headers_and_sent_mail(t: &Out, other: &Session) {
    let Out {
        app, tok, email, ..
    } = t;
    // Address completion: from the mail's headers and what was sent, most used first;
    // never the user's own address.
    let all = expect_json(app.get_auth("/api/email/addresses", tok).await, 200).await;
    let list: Vec<&str> = all["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["address"].as_str().unwrap())
        .collect();
    assert!(
        list.contains(&"carol@example.org") && list.contains(&"dana@example.org"),
        "{all}"
    );
    assert!(!list.contains(&email.as_str()), "own address listed: {all}");
    // Carol was written to (two uses, one more from the Sent copy), Dana only wrote (one).
    let pos = |a: &str| list.iter().position(|x| *x == a).unwrap();
    assert!(
        pos("carol@example.org") < pos("dana@example.org"),
        "ranked by use: {all}"
    );
    let q = expect_json(
        app.get_auth("/api/email/addresses?q=CAROL%20ex", tok).await,
        200,
    )
    .await;
    assert_eq!(q["addresses"].as_array().unwrap().len(), 1, "{q}");
    assert_eq!(q["addresses"][0]["name"], "Carol Example");
    assert!(q["addresses"][0]["lastUsedAt"].is_string());
    let none = expect_json(
        app.get_auth("/api/email/addresses?q=dana", &other.access_token)
            .await,
        200,
    )
    .await;
    assert_eq!(
        none["addresses"],
        json!([]),
        "another user's addresses stay theirs"
    );
    expect_error(
        app.get_auth("/api/email/addresses?limit=0", tok).await,
        400,
        "invalid_request",
    )
    .await;
}

/// At rest: the addresses and the spooled files are sealed.
async fn addresses_and_files_are_sealed_at_rest(t: &Out, a: &Value) {
    let Out { app, .. } = t;
    // At rest: the addresses and the spooled files are sealed.
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    let sealed: Vec<Vec<u8>> = db
        .prepare("SELECT address_enc FROM email_addresses")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!sealed.is_empty());
    for s in &sealed {
        assert!(
            !String::from_utf8_lossy(s).contains("example.org"),
            "an address in clear"
        );
    }
    let spool = app.data_dir().join("email-uploads");
    let a_file = std::fs::read(spool.join(a["uploadId"].as_str().unwrap())).unwrap();
    assert!(a_file.len() > 600 * 1024, "the spooled file");
    assert!(
        !a_file.windows(9).any(|w| w == b"%PDF-1.7\n"),
        "the file is sealed on disk"
    );
}

/// Waits until a cached message with `subject` is listed; returns its id.
pub(crate) async fn wait_message(app: &TestApp, token: &str, subject: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let list = expect_json(app.get_auth("/api/email/threads", token).await, 200).await;
        if let Some(t) = list["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["subject"] == subject)
        {
            return t["messageIds"][0].as_str().unwrap().to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{subject:?} never listed: {list}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
