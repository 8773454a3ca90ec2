//! Benchmark (ignored by default; `scripts/bench-mail-attachment.sh` runs it): the server's
//! peak RSS (`VmHWM`) growth while a 20 MB attachment is uploaded, then sent, and while a
//! mail with such a file is cached and forwarded. Prints the figures (docs/benchmarks.md);
//! the upload is streamed to the sealed spool, so it must stay under 32 MiB.

use serde_json::json;

use super::*;

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect(field)
}

fn hwm_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// Resets the peak (`VmHWM`) to the current RSS (Linux: `5` into `clear_refs`), so that a
/// later step is measured from here and not against an earlier, larger peak; returns the
/// RSS it starts from.
fn reset_peak(pid: u32) -> u64 {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("clear_refs (needs root)");
    status_kib(pid, "VmRSS:")
}

fn sink_files() -> std::collections::HashSet<std::ffi::OsString> {
    std::fs::read_dir(&crate::common::mail::smtp().maildir)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Runs `request`, sampling the peak every 2 ms: returns its answer and the peak (KiB) seen
/// when a new message file appeared at the SMTP sink, i.e. when the SMTP transaction was
/// over (the Sent copy and its sync come after it). A sample, so it may be a little late.
async fn peak_at_sink(
    pid: u32,
    request: impl std::future::Future<Output = reqwest::Response>,
) -> (reqwest::Response, Option<u64>) {
    let before = sink_files();
    tokio::pin!(request);
    let mut at_sink = None;
    loop {
        tokio::select! {
            r = &mut request => return (r, at_sink),
            _ = tokio::time::sleep(std::time::Duration::from_millis(2)) => {
                if at_sink.is_none() && sink_files().difference(&before).next().is_some() {
                    at_sink = Some(hwm_kib(pid));
                }
            }
        }
    }
}

fn growth(from: u64, to: Option<u64>) -> String {
    to.map_or("not seen".into(), |t| {
        format!("{:.1} MiB", t.saturating_sub(from) as f64 / 1024.0)
    })
}

#[tokio::test]
#[ignore = "benchmark: scripts/bench-mail-attachment.sh"]
async fn bench_rss_while_sending_a_20_mb_attachment() {
    let app = TestApp::start_with_mail_and("[email]\nmax_attachments_mb = 25\n".into()).await;
    let (tok, _, _) = user_with_mailbox(&app, "bench").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let file = pdf(20 * 1024 * 1024);
    // Warm up: one small send, so one-time allocations are not counted.
    let small = expect_json(
        upload(&app, &tok, "warm.pdf", "application/pdf", &file[..1024]).await,
        201,
    )
    .await;
    expect_json(app.post_json("/api/email/compose", Some(&tok),
        json!({"to": ["ivy@example.org"], "subject": format!("Warm {run}"), "text": "x", "attachments": [small["uploadId"]]})).await, 201).await;
    let pid = app.pid();
    let base = hwm_kib(pid);
    let up = expect_json(
        upload(&app, &tok, "big.pdf", "application/pdf", &file).await,
        201,
    )
    .await;
    let after_upload = hwm_kib(pid);
    // The send alone, measured from the RSS after the upload.
    let before_send = reset_peak(pid);
    let subject = format!("Big {run}");
    let (resp, at_sink) = peak_at_sink(pid, app.post_json("/api/email/compose", Some(&tok),
        json!({"to": ["ivy@example.org"], "subject": subject, "text": "20 MB", "attachments": [up["uploadId"]]}))).await;
    expect_json(resp, 201).await;
    let after_send = hwm_kib(pid);
    let delivered = wait_sink(&subject).await;
    assert_eq!(
        files_of(&delivered),
        vec![("big.pdf".to_owned(), file)],
        "byte-identical"
    );
    let upload_mib = after_upload.saturating_sub(base) as f64 / 1024.0;
    let send_mib = after_send.saturating_sub(before_send) as f64 / 1024.0;
    let both_mib = after_send.max(after_upload).saturating_sub(base) as f64 / 1024.0;
    println!("BENCH peak RSS growth: upload of 20 MiB {upload_mib:.1} MiB, send {send_mib:.1} MiB, upload + send {both_mib:.1} MiB (target < 32 MiB)");
    println!(
        "BENCH of the send: {} when the SMTP sink had the message (the rest is the Sent copy and its sync)",
        growth(before_send, at_sink)
    );
    assert!(
        upload_mib < 32.0,
        "the upload is not streamed: {upload_mib:.1} MiB"
    );
}

/// The same figure for a forward of a mail with a 20 MB file (`includeAttachments`): the
/// file is fetched from Dovecot part by part and decoded as it arrives, then sent.
#[tokio::test]
#[ignore = "benchmark: scripts/bench-mail-attachment.sh"]
async fn bench_rss_while_forwarding_a_20_mb_attachment() {
    use base64::Engine;
    let app = TestApp::start_with_mail_and("[email]\nmax_attachments_mb = 25\n".into()).await;
    let (tok, email, _) = user_with_mailbox(&app, "benchfwd").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let file = pdf(20 * 1024 * 1024);
    let b64 = base64::engine::general_purpose::STANDARD.encode(&file);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    let subject = format!("Big original {run}");
    let raw = format!(
        "From: Dana <dana@example.org>\r\nTo: {email}\r\nSubject: {subject}\r\n\
         Date: Wed, 2 Jul 2025 12:00:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n\
         The file\r\n--B\r\nContent-Type: application/pdf\r\n\
         Content-Disposition: attachment; filename=big.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n\
         {}\r\n--B--\r\n",
        lines.join("\r\n")
    );
    drop(lines);
    drop(b64);
    // The sync that caches the 27 MB original (from its structure: over [email]
    // large_message_kb) is measured too, then the forward from the RSS after it.
    let pid = app.pid();
    let before_sync = reset_peak(pid);
    crate::common::dovecot::deliver(&email, IMAP_PASSWORD, "INBOX", &raw).await;
    drop(raw);
    let id = super::send::wait_message(&app, &tok, &subject).await;
    let sync_mib = hwm_kib(pid).saturating_sub(before_sync) as f64 / 1024.0;
    println!("BENCH peak RSS growth: sync caching a mail with a 20 MiB file {sync_mib:.1} MiB");
    let base = reset_peak(pid);
    let fwd = format!("Fwd big {run}");
    let (resp, at_sink) = peak_at_sink(pid, app.post_json("/api/email/compose", Some(&tok),
        json!({"to": ["ivy@example.org"], "subject": fwd, "text": "20 MB", "forward": id, "includeAttachments": true}))).await;
    expect_json(resp, 201).await;
    let after = hwm_kib(pid);
    let delivered = wait_sink(&fwd).await;
    assert_eq!(
        files_of(&delivered),
        vec![("big.pdf".to_owned(), file)],
        "byte-identical"
    );
    let mib = after.saturating_sub(base) as f64 / 1024.0;
    println!(
        "BENCH peak RSS growth: forward of a 20 MiB file (by part) {mib:.1} MiB (target < 32 MiB)"
    );
    println!(
        "BENCH of the forward: {} when the SMTP sink had the message",
        growth(base, at_sink)
    );
}
