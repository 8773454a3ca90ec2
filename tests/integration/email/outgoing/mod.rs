//! Outgoing mail (issue #33) against the real Dovecot and the run's SMTP sink:
//! attachments (uploads, forwards), undo send, drafts, address completion.

mod bench;
mod drafts;
mod forward;
mod send;
mod stream;
mod undo;

use std::time::{Duration, Instant};

use mail_parser::{MessageParser, MimeHeaders};
use serde_json::Value;

use crate::common::dovecot;
use crate::common::*;

pub(crate) const IMAP_PASSWORD: &str = "imap-secret-outgoing";

/// A test app whose messages may carry at most 1 MiB of files.
pub(crate) async fn app() -> TestApp {
    TestApp::start_with_mail_and("[email]\nmax_attachments_mb = 1\n".into()).await
}

/// A signed-up user with a fresh Dovecot mailbox connected: `(token, address, account)`.
pub(crate) async fn user_with_mailbox(app: &TestApp, prefix: &str) -> (String, String, Value) {
    let user = app.sign_up(prefix).await;
    let email = dovecot::add_user(prefix, IMAP_PASSWORD);
    let account =
        crate::email::connect_mailbox(app, &user.access_token, &email, IMAP_PASSWORD).await;
    (user.access_token, email, account)
}

/// `POST /api/email/attachments` with one file.
pub(crate) async fn upload(
    app: &TestApp,
    token: &str,
    name: &str,
    ctype: &str,
    bytes: &[u8],
) -> reqwest::Response {
    let (ct, body) = crate::rich::form(&[], Some((name, ctype, bytes)));
    app.http
        .post(app.url("/api/email/attachments"))
        .bearer_auth(token)
        .header("Content-Type", ct)
        .body(body)
        .send()
        .await
        .expect("upload request")
}

/// Bytes that look like a PDF, `n` long, varied (base64 cannot hide a shifted byte).
pub(crate) fn pdf(n: usize) -> Vec<u8> {
    let mut b = b"%PDF-1.7\n".to_vec();
    b.extend((0..n.saturating_sub(b.len())).map(|i| ((i * 131 + i / 7) % 256) as u8));
    b
}

/// A 1×1 PNG.
pub(crate) fn png() -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==")
        .unwrap()
}

/// Every message in the SMTP sink whose text contains `needle`.
pub(crate) fn sink_with(needle: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir(&mail::smtp().maildir) {
        for e in dir.filter_map(Result::ok) {
            if !e.file_name().to_string_lossy().ends_with(".eml") {
                continue;
            }
            if let Ok(bytes) = std::fs::read(e.path()) {
                if String::from_utf8_lossy(&bytes).contains(needle) {
                    out.push(bytes);
                }
            }
        }
    }
    out
}

/// Waits (bounded) for a message containing `needle` at the SMTP sink.
pub(crate) async fn wait_sink(needle: &str) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(m) = sink_with(needle).into_iter().next() {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "{needle:?} never reached the SMTP sink"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `(filename, bytes)` of every attachment of a raw message.
pub(crate) fn files_of(raw: &[u8]) -> Vec<(String, Vec<u8>)> {
    let m = MessageParser::default().parse(raw).expect("a message");
    m.attachments()
        .map(|a| {
            (
                a.attachment_name().unwrap_or_default().to_owned(),
                a.contents().to_vec(),
            )
        })
        .collect()
}

/// Raw messages in `mailbox` whose text contains `needle`, as another client reads them.
pub(crate) async fn on_server(email: &str, mailbox: &str, needle: &str) -> Vec<Vec<u8>> {
    use switchboard::clients::mail::imap;
    let mut s = dovecot::login(email, IMAP_PASSWORD).await;
    let sel = imap::select(&mut s, mailbox, false).await.expect("SELECT");
    let mut out = Vec::new();
    if sel.exists > 0 {
        for f in imap::fetch_messages(&mut s, "1:*", imap::Extent::Whole, u64::MAX)
            .await
            .expect("FETCH")
        {
            if String::from_utf8_lossy(&f.raw).contains(needle) {
                out.push(f.raw);
            }
        }
    }
    imap::logout(s).await;
    out
}
