//! Large mail cached from its structure (`[email] large_message_kb`): the same messages in
//! one Dovecot mailbox, read by two servers, one fetching them whole (the default
//! threshold, 1 MiB, is above them) and one from their structure (threshold 1 KiB). What the
//! API says about them is the same, and a file of the one cached from its structure still
//! downloads byte-identical.

use base64::Engine;
use serde_json::Value;

use super::outgoing::pdf;
use super::*;

const PW: &str = IMAP_PASSWORD;

/// `bytes` as base64 lines of 76 characters, as mail programs write it.
fn b64_lines(bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    lines.join("\n")
}

/// A CSV of about 40 KB as quoted-printable (a file whose size only its decoding tells).
fn csv_qp() -> (Vec<u8>, String) {
    let mut csv = String::new();
    let mut qp = String::new();
    for i in 0..1200 {
        csv.push_str(&format!("row {i};caf\u{e9};x = {i}\r\n"));
        qp.push_str(&format!("row {i};caf=C3=A9;x =3D {i}\n"));
    }
    (csv.into_bytes(), qp)
}

/// The first message: encoded subject and names, text and HTML alternatives, a 300 KB PDF
/// with an RFC 2231 file name, a quoted-printable CSV and a small inline PNG.
fn report(to: &str, run: &str, pdf: &[u8], qp: &str, png: &[u8]) -> String {
    format!(
        "From: =?UTF-8?Q?Dana_M=C3=BCller?= <dana@example.org>\nTo: Box <{to}>, Carol <carol@example.org>\n\
         Cc: Erin <erin@example.org>\nSubject: =?UTF-8?B?{}?=\nMessage-ID: <report.{run}@example.org>\n\
         Date: Wed, 2 Jul 2025 12:00:00 +0200\nMIME-Version: 1.0\n\
         Content-Type: multipart/mixed; boundary=\"OUTER-{run}\"\n\n\
         This preamble is for mail programs without MIME.\n\
         --OUTER-{run}\nContent-Type: multipart/alternative; boundary=INNER\n\n\
         --INNER\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n\
         Gr=C3=BC=C3=9Fe, the report   and the prices.\n\
         --INNER\nContent-Type: text/html; charset=utf-8\n\n<p>Gr\u{fc}\u{df}e, the <b>report</b>.</p>\n\
         --INNER--\n\
         --OUTER-{run}\nContent-Type: application/pdf\n\
         Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf\n\
         Content-Transfer-Encoding: base64\n\n{}\n\
         --OUTER-{run}\nContent-Type: text/csv; charset=utf-8\n\
         Content-Disposition: attachment; filename=\"prices.csv\"\n\
         Content-Transfer-Encoding: quoted-printable\n\n{qp}\n\
         --OUTER-{run}\nContent-Type: image/png; name=\"dot.png\"\nContent-ID: <dot>\n\
         Content-Transfer-Encoding: base64\n\n{}\n\
         --OUTER-{run}--\nAn epilogue.\n",
        base64::engine::general_purpose::STANDARD.encode(format!("Quartalsbericht \u{2014} Q3 {run}")),
        b64_lines(pdf),
        b64_lines(png),
    )
}

/// The reply: one HTML part of a few KiB, threaded by its references.
fn reply(to: &str, run: &str) -> String {
    format!(
        "From: Carol <carol@example.org>\nTo: {to}\n\
         Subject: Re: =?UTF-8?B?{}?=\nMessage-ID: <reply.{run}@example.org>\n\
         In-Reply-To: <report.{run}@example.org>\nReferences: <report.{run}@example.org>\n\
         Date: Wed, 2 Jul 2025 13:00:00 +0000\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n\
         <p>Thanks!</p>{}\n",
        base64::engine::general_purpose::STANDARD.encode(format!("Quartalsbericht \u{2014} Q3 {run}")),
        "<p>Numbers look right.</p>\n".repeat(200),
    )
}

/// A JSON value without the ids that differ between the two servers.
fn without_ids(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| {
                    !["id", "threadId", "accountId", "messageIds", "labels"].contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), without_ids(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_ids).collect()),
        other => other.clone(),
    }
}

/// What one server says about the thread: `(thread, its messages, their raw message ids)`.
async fn seen_by(app: &TestApp, email: &str, subject: &str) -> (Value, Vec<Value>, Vec<String>) {
    let user = app.sign_up("large").await;
    let tok = &user.access_token;
    crate::email::connect_mailbox(app, tok, email, PW).await;
    let list = wait_threads(app, tok, "", |l| {
        find_thread(l, subject).is_some_and(|t| t["messageCount"] == 2)
    })
    .await;
    let thread = find_thread(&list, subject).unwrap().clone();
    let ids: Vec<String> = thread["messageIds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_owned())
        .collect();
    let mut messages = Vec::new();
    for id in &ids {
        let m = expect_json(
            app.get_auth(&format!("/api/email/messages/{id}"), tok)
                .await,
            200,
        )
        .await;
        messages.push(m);
    }
    let full = expect_json(
        app.get_auth(
            &format!("/api/email/threads/{}", thread["id"].as_str().unwrap()),
            tok,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        without_ids(&full),
        without_ids(&thread),
        "the thread read alone"
    );
    (thread, messages, vec![tok.clone()])
}

#[tokio::test]
async fn large_mail_read_from_its_structure_is_cached_as_when_fetched_whole() {
    let whole = TestApp::start_with_mail().await;
    let outlined = TestApp::start_with_mail_and(
        "[email]\nlarge_message_kb = 1\n[log]\nlevel = \"switchboard::services::email::outline=debug,info\"\n"
            .into(),
    )
    .await;
    let email = dovecot::add_user("large", PW);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let pdf_bytes = pdf(300_000);
    let png: Vec<u8> = (0..2_000u32).map(|i| (i * 37 % 256) as u8).collect();
    let (csv, qp) = csv_qp();
    dovecot::deliver(
        &email,
        PW,
        "INBOX",
        &report(&email, &run, &pdf_bytes, &qp, &png),
    )
    .await;
    dovecot::set_flag(&email, PW, "INBOX", true, "\\Flagged").await;
    dovecot::deliver(&email, PW, "INBOX", &reply(&email, &run)).await;
    let subject = format!("Quartalsbericht \u{2014} Q3 {run}");

    let (t_whole, m_whole, _) = seen_by(&whole, &email, &subject).await;
    let (t_out, m_out, tok) = seen_by(&outlined, &email, &subject).await;
    let tok = &tok[0];

    // The structure path was taken for both messages, and never fell back.
    let log = outlined.log();
    assert_eq!(
        log.matches("cached a large mail from its structure")
            .count(),
        2,
        "both messages read from their structure"
    );
    assert!(
        !log.contains("a large mail is fetched whole"),
        "no fallback"
    );

    assert_eq!(without_ids(&t_out), without_ids(&t_whole), "the thread");
    assert_eq!(m_out.len(), 2);
    for (o, w) in m_out.iter().zip(&m_whole) {
        assert_eq!(without_ids(o), without_ids(w), "a message");
    }
    // What both say, checked against the message itself (not only against each other).
    let first = &m_out[0];
    assert_eq!(first["from"]["name"], "Dana M\u{fc}ller");
    assert_eq!(first["cc"][0]["email"], "erin@example.org");
    assert!(first["starred"].as_bool().unwrap(), "the \\Flagged flag");
    assert!(first["text"]
        .as_str()
        .unwrap()
        .contains("Gr\u{fc}\u{df}e, the report"));
    assert!(first["html"].as_str().unwrap().contains("<b>report</b>"));
    let files: Vec<(String, String, u64)> = first["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["filename"].as_str().unwrap_or_default().to_owned(),
                a["contentType"].as_str().unwrap().to_owned(),
                a["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            (
                "r\u{e9}sum\u{e9}.pdf".to_owned(),
                "application/pdf".to_owned(),
                pdf_bytes.len() as u64
            ),
            (
                "prices.csv".to_owned(),
                "text/csv".to_owned(),
                csv.len() as u64
            ),
            (
                "dot.png".to_owned(),
                "image/png".to_owned(),
                png.len() as u64
            ),
        ],
        "{first}"
    );
    assert!(m_out[1]["html"]
        .as_str()
        .unwrap()
        .contains("Numbers look right"));

    // The PDF of the copy cached from its structure downloads byte-identical.
    let id = first["id"].as_str().unwrap();
    let resp = outlined
        .get_auth(&format!("/api/email/messages/{id}/attachments/0"), tok)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.bytes().await.unwrap().to_vec(), pdf_bytes, "the PDF");
}
