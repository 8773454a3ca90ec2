//! Benchmark (ignored by default; `scripts/bench-mail-attachment.sh` runs it): the server's
//! peak RSS (`VmHWM`) growth while a 20 MB attachment is uploaded, then sent. Prints both
//! figures; the upload is streamed to the sealed spool, so it must stay under 32 MiB.

use serde_json::json;

use super::*;

fn hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
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
    let subject = format!("Big {run}");
    expect_json(app.post_json("/api/email/compose", Some(&tok),
        json!({"to": ["ivy@example.org"], "subject": subject, "text": "20 MB", "attachments": [up["uploadId"]]})).await, 201).await;
    let after_send = hwm_kib(pid);
    let delivered = wait_sink(&subject).await;
    assert_eq!(
        files_of(&delivered),
        vec![("big.pdf".to_owned(), file)],
        "byte-identical"
    );
    let upload_mib = (after_upload - base) as f64 / 1024.0;
    let send_mib = (after_send - base) as f64 / 1024.0;
    println!("BENCH peak RSS growth: upload of 20 MiB {upload_mib:.1} MiB, upload + send {send_mib:.1} MiB (target < 32 MiB)");
    assert!(
        upload_mib < 32.0,
        "the upload is not streamed: {upload_mib:.1} MiB"
    );
}
