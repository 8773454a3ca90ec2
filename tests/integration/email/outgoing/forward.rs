//! Forwarding with the original's files (`includeAttachments`): the files are fetched from
//! Dovecot part by part (BODYSTRUCTURE, then `BODY.PEEK[<part>]` in pieces), arrive
//! byte-identical at the SMTP sink and in Sent, and a message gone from the server is a
//! clear 409 with nothing sent.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;

use super::send::wait_message;
use super::*;

/// A text whose quoted-printable form has soft breaks, escapes and a tab.
const CSV: &str = "dish;price;note\r\nsoup;4;caf\u{e9} cr\u{e8}me = good\r\n\
                   bread;2;a long line that goes on past seventy-six characters so that it needs a soft break\r\n\
                   \ttabbed;0;end";

/// The CSV as quoted-printable, written out as a mail program would.
fn csv_qp() -> String {
    let mut out = String::new();
    for (i, line) in CSV.split("\r\n").enumerate() {
        if i > 0 {
            out.push_str("\r\n");
        }
        let mut col = 0;
        for b in line.bytes() {
            let enc = match b {
                b'=' | b'\t' | 0x80.. => format!("={b:02X}"),
                _ => (b as char).to_string(),
            };
            if col + enc.len() > 72 {
                out.push_str("=\r\n");
                col = 0;
            }
            col += enc.len();
            out.push_str(&enc);
        }
    }
    out
}

/// A message with a large HTML body and two files: a base64 PDF and a quoted-printable CSV.
fn original(to: &str, subject: &str, html: &str, pdf: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(pdf);
    let b64_lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    format!(
        "From: Dana <dana@example.org>\r\nTo: {to}\r\nSubject: {subject}\r\n\
         Message-ID: <{}@example.org>\r\nDate: Wed, 2 Jul 2025 12:00:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=OUTER\r\n\r\n\
         --OUTER\r\nContent-Type: multipart/alternative; boundary=INNER\r\n\r\n\
         --INNER\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThe report and prices.\r\n\
         --INNER\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n--INNER--\r\n\
         --OUTER\r\nContent-Type: application/pdf; name=report.pdf\r\n\
         Content-Disposition: attachment; filename=report.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n\
         {}\r\n\
         --OUTER\r\nContent-Type: text/csv; charset=utf-8\r\n\
         Content-Disposition: attachment; filename=\"prices.csv\"\r\n\
         Content-Transfer-Encoding: quoted-printable\r\n\r\n{}\r\n--OUTER--\r\n",
        uuid::Uuid::new_v4().simple(),
        b64_lines.join("\r\n"),
        csv_qp()
    )
}

/// Dovecot's `Logged out` lines for `user` written after byte `from` of its log: Dovecot
/// writes one per IMAP session with the bytes it sent (`out=`) and the message bodies and
/// body bytes it served (`body_count=`, `body_bytes=`).
fn logouts(user: &str, from: usize) -> Vec<String> {
    let log = std::fs::read(dovecot::dovecot().dir.join("dovecot.log")).unwrap_or_default();
    String::from_utf8_lossy(log.get(from..).unwrap_or_default())
        .lines()
        .filter(|l| l.contains(&format!("imap({user})")) && l.contains("Logged out"))
        .map(str::to_owned)
        .collect()
}

fn field(line: &str, name: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name}= in {line}"))
}

fn log_len() -> usize {
    std::fs::metadata(dovecot::dovecot().dir.join("dovecot.log")).map_or(0, |m| m.len() as usize)
}

#[tokio::test]
async fn a_forward_fetches_only_the_files_and_they_arrive_byte_identical() {
    let app = app().await;
    let (tok, email, _) = user_with_mailbox(&app, "fwdparts").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    // 400 KB of HTML that a forward has no use for: fetching the message whole would show.
    let html = format!("<p>{}</p>", "Quarterly figures. ".repeat(21_000));
    let pdf_bytes = pdf(90_000);
    let subject = format!("Report {run}");
    let raw = original(&email, &subject, &html, &pdf_bytes);
    dovecot::deliver(&email, IMAP_PASSWORD, "INBOX", &raw).await;
    let id = wait_message(&app, &tok, &subject).await;

    let from = log_len();
    let fwd_subject = format!("Fwd: Report {run}");
    expect_json(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["erin@example.org"], "subject": fwd_subject, "text": "Both files",
                   "forward": id, "includeAttachments": true}),
        )
        .await,
        201,
    )
    .await;
    let expected = vec![
        ("report.pdf".to_owned(), pdf_bytes),
        ("prices.csv".to_owned(), CSV.as_bytes().to_vec()),
    ];
    let sent = wait_sink(&fwd_subject).await;
    assert_eq!(files_of(&sent), expected, "at the SMTP sink");
    let sent_text = String::from_utf8_lossy(&sent);
    assert!(sent_text.contains("Forwarded message"), "the quote");
    assert!(
        sent_text.contains("text/csv; charset=utf-8"),
        "the text file keeps its charset"
    );
    let filed = on_server(&email, "Sent", &fwd_subject).await;
    assert_eq!(filed.len(), 1, "one Sent copy");
    assert_eq!(files_of(&filed[0]), expected, "in the Sent copy");
    // The files were spooled (sealed) for this send only: the spool made for them is there,
    // and once the answer came none of them is left in it.
    let spool = std::fs::read_dir(app.data_dir().join("email-uploads")).expect("the spool");
    let left: Vec<String> = spool
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fwd-"))
        .collect();
    assert!(
        left.is_empty(),
        "forwarded files left in the spool: {left:?}"
    );

    // The session that took the files: two parts served (the two files, one piece each),
    // the files' encoded bytes and no more. Other sessions' lines (the Sent copy's sync, the
    // reads of Sent above) serve one body each. No session since served the message whole.
    let encoded_files = (pdf_bytes_len_b64(90_000) + csv_qp().len()) as u64;
    let is_files_session = |l: &String| {
        field(l, "body_count") == 2
            && (encoded_files - 64..=encoded_files + 64).contains(&field(l, "body_bytes"))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let lines = loop {
        let lines = logouts(&email, from);
        if lines.iter().any(is_files_session) {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "no IMAP session served the two parts: {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let whole = raw.len() as u64;
    for l in &lines {
        assert!(
            field(l, "body_bytes") < whole / 2 && field(l, "out") < whole / 2,
            "a session read the whole {whole}-byte message: {l}"
        );
    }
    a_download_fetches_only_its_part(&app, &tok, &email, &id, raw.len() as u64, &expected).await;
}

/// `GET /api/email/messages/{id}/attachments/0` of the same message: the PDF, byte for
/// byte, from a session that served one part of about the PDF's encoded size.
async fn a_download_fetches_only_its_part(
    app: &TestApp,
    tok: &str,
    email: &str,
    id: &str,
    whole: u64,
    expected: &[(String, Vec<u8>)],
) {
    let from = log_len();
    let resp = app
        .get_auth(&format!("/api/email/messages/{id}/attachments/0"), tok)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/pdf");
    assert!(
        resp.bytes().await.unwrap() == expected[0].1,
        "the PDF, byte for byte"
    );
    // Dovecot writes its log through a separate process, so lines of sessions that ended
    // before `from` (the Sent copy's sync, the test's own reads of Sent: one body each, the
    // whole forwarded copy) can still arrive after it. The download's session is the one
    // that served exactly one body of the PDF's encoded size; none read the original whole.
    let encoded = pdf_bytes_len_b64(90_000) as u64;
    let deadline = Instant::now() + Duration::from_secs(20);
    let lines = loop {
        let lines = logouts(email, from);
        if lines.iter().any(|l| {
            let bytes = field(l, "body_bytes");
            field(l, "body_count") == 1 && (encoded - 64..=encoded + 64).contains(&bytes)
        }) {
            break lines;
        }
        assert!(
            Instant::now() < deadline,
            "no IMAP session served the PDF's part alone: {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for l in &lines {
        assert!(
            field(l, "body_bytes") < whole / 2 && field(l, "out") < whole / 2,
            "a session read the whole {whole}-byte message: {l}"
        );
    }
}

/// Length of the base64 form of `n` bytes in 76-character CRLF lines.
fn pdf_bytes_len_b64(n: usize) -> usize {
    let chars = n.div_ceil(3) * 4;
    chars + (chars.div_ceil(76) - 1) * 2
}

#[tokio::test]
async fn a_forward_of_a_message_gone_from_the_server_is_409_and_sends_nothing() {
    // Archive is polled once an hour here: the cache keeps the message after it is
    // deleted on the server, as it does between two polls.
    let app = TestApp::start_with_mail_and(
        "[email]\nmax_attachments_mb = 1\npoll_interval = \"1h\"\n".into(),
    )
    .await;
    let user = app.sign_up("fwdgone").await;
    let email = dovecot::add_user("fwdgone", IMAP_PASSWORD);
    let run = uuid::Uuid::new_v4().simple().to_string();
    let subject = format!("Gone {run}");
    let raw = original(&email, &subject, "<p>short</p>", &pdf(2_000));
    dovecot::deliver(&email, IMAP_PASSWORD, "Archive", &raw).await;
    let tok = user.access_token;
    crate::email::connect_mailbox(&app, &tok, &email, IMAP_PASSWORD).await;
    let id = wait_message(&app, &tok, &subject).await;

    // Another client deletes it for good.
    {
        use switchboard::clients::mail::imap;
        let mut s = dovecot::login(&email, IMAP_PASSWORD).await;
        imap::select(&mut s, "Archive", false)
            .await
            .expect("SELECT");
        let caps = imap::capabilities(&mut s).await.expect("CAPABILITY");
        imap::expunge_uids(&mut s, caps, "1:*")
            .await
            .expect("EXPUNGE");
        imap::logout(s).await;
    }
    let fwd_subject = format!("Fwd: Gone {run}");
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["erin@example.org"], "subject": fwd_subject, "text": "x",
                   "forward": id, "includeAttachments": true}),
        )
        .await,
        409,
        "forwarded_message_gone",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("nothing was sent"),
        "{e}"
    );
    // The refusal came before any SMTP transaction: a later message is at the sink and
    // the forward is not (the sink keeps order, so the marker proves it looked).
    let marker = format!("After gone {run}");
    expect_json(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["erin@example.org"], "subject": marker, "text": "x"}),
        )
        .await,
        201,
    )
    .await;
    wait_sink(&marker).await;
    assert!(
        sink_with(&fwd_subject).is_empty(),
        "nothing of the forward was sent"
    );
    assert!(on_server(&email, "Sent", &fwd_subject).await.is_empty());
}

/// What the server's structure says and what mail-parser lists agree: for messages of
/// several shapes stored in Dovecot, the parts picked from BODYSTRUCTURE are mail-parser's
/// attachments, and each fetched in pieces and decoded gives the same bytes.
#[tokio::test]
async fn the_parts_picked_from_the_structure_are_the_files_mail_parser_lists() {
    use switchboard::clients::mail::imap;
    use switchboard::services::email::file_parts::attachment_parts;
    let email = dovecot::add_user("fwdshape", IMAP_PASSWORD);
    let shapes = shapes(&email);
    for raw in &shapes {
        dovecot::deliver(&email, IMAP_PASSWORD, "INBOX", raw).await;
    }
    let mut s = dovecot::login(&email, IMAP_PASSWORD).await;
    imap::select(&mut s, "INBOX", false).await.expect("SELECT");
    for (i, raw) in shapes.iter().enumerate() {
        let uid = i as u32 + 1;
        let root = imap::structure(&mut s, uid)
            .await
            .unwrap()
            .expect("a structure");
        let parsed = MessageParser::default().parse(raw.as_bytes()).unwrap();
        let want: Vec<(String, Vec<u8>)> = parsed
            .attachments()
            .map(|a| {
                let ct = a.content_type().unwrap();
                (
                    format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or_default()),
                    a.contents().to_vec(),
                )
            })
            .collect();
        let picked = attachment_parts(&root);
        let got_types: Vec<&str> = picked.iter().map(|p| p.mimetype.as_str()).collect();
        let want_types: Vec<&str> = want.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(got_types, want_types, "shape {i}: {root:#?}");
        for (p, (_, bytes)) in picked.iter().zip(&want) {
            let mut encoded = Vec::new();
            let found = imap::fetch_part(&mut s, uid, &p.section, 1000, u64::MAX, |piece| {
                encoded.extend_from_slice(piece);
                Ok(())
            })
            .await
            .unwrap();
            assert!(found);
            assert_eq!(
                encoded.len() as u64,
                p.octets,
                "shape {i}: all of part {:?}",
                p.section
            );
            let decoded = match p.encoding.as_str() {
                "base64" => mail_parser::decoders::base64::base64_decode(&encoded).unwrap(),
                "quoted-printable" => {
                    mail_parser::decoders::quoted_printable::quoted_printable_decode(&encoded)
                        .unwrap()
                }
                _ => encoded,
            };
            assert_eq!(&decoded, bytes, "shape {i}: part {:?}", p.section);
        }
    }
    imap::logout(s).await;
}

fn shapes(to: &str) -> Vec<String> {
    let head = |subject: &str, ctype: &str| {
        format!(
            "From: a@example.org\r\nTo: {to}\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n\
             Content-Type: {ctype}\r\n"
        )
    };
    let png = base64::engine::general_purpose::STANDARD.encode(png());
    vec![
        // Plain text only: no files.
        format!("{}\r\nJust text\r\n", head("plain", "text/plain")),
        // A PDF as the whole message.
        format!(
            "{}Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjcK\r\n",
            head("pdf only", "application/pdf")
        ),
        // HTML with an inline image in a related group, inside an alternative.
        format!(
            "{}\r\n--A\r\nContent-Type: text/plain\r\n\r\nhi\r\n--A\r\n\
             Content-Type: multipart/related; boundary=R\r\n\r\n--R\r\nContent-Type: text/html\r\n\r\n\
             <img src=cid:i1>\r\n--R\r\nContent-Type: image/png\r\nContent-ID: <i1>\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{png}\r\n--R--\r\n--A--\r\n",
            head("related", "multipart/alternative; boundary=A")
        ),
        // Mixed: text, a named text file, a forwarded message, a calendar invite.
        format!(
            "{}\r\n--M\r\nContent-Type: text/plain\r\n\r\nsee files\r\n--M\r\n\
             Content-Type: text/plain; name=notes.txt\r\nContent-Disposition: attachment; filename=notes.txt\r\n\r\n\
             line one\r\nline two\r\n--M\r\nContent-Type: message/rfc822\r\n\r\n\
             From: b@example.org\r\nSubject: inner\r\n\r\ninner body\r\n--M\r\n\
             Content-Type: text/calendar; method=REQUEST\r\n\r\nBEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n--M--\r\n",
            head("mixed", "multipart/mixed; boundary=M")
        ),
    ]
}
