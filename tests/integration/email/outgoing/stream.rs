//! Files stream from the sealed spool into SMTP and IMAP: sizes at the edges of a base64
//! group (3 bytes), a line (57) and a spool chunk (64 KiB) arrive byte-identical at the
//! SMTP sink, in Sent and in Drafts; a file that cannot be read half-way sends nothing.

use serde_json::json;

use super::*;

const CHUNK: usize = 64 * 1024;

/// Three sealed chunks and a bit: not a multiple of 3, of 57 or of 64 KiB.
const ODD: usize = 3 * CHUNK + 57 * 7 + 2;
const _: () = assert!(ODD % 3 != 0 && ODD % 57 != 0 && ODD % CHUNK != 0);

async fn upload_ok(app: &TestApp, tok: &str, name: &str, bytes: &[u8]) -> Value {
    expect_json(
        upload(app, tok, name, "application/octet-stream", bytes).await,
        201,
    )
    .await
}

#[tokio::test]
async fn files_at_line_and_chunk_edges_arrive_byte_identical() {
    let app = app().await;
    let (tok, email, _) = user_with_mailbox(&app, "edges").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let files = vec![
        ("odd.bin".to_owned(), pdf(ODD)),
        ("one.bin".to_owned(), vec![0xff]),
        ("chunk.bin".to_owned(), pdf(CHUNK)),
    ];
    let mut ids = Vec::new();
    for (name, bytes) in &files {
        ids.push(upload_ok(&app, &tok, name, bytes).await["uploadId"].clone());
    }
    let subject = format!("Edges {run}");
    expect_json(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["gus@example.org"], "subject": subject, "text": "three files",
                   "attachments": ids}),
        )
        .await,
        201,
    )
    .await;
    assert_eq!(files_of(&wait_sink(&subject).await), files, "at SMTP");
    let sent = on_server(&email, "Sent", &subject).await;
    assert_eq!(sent.len(), 1, "one Sent copy");
    assert_eq!(files_of(&sent[0]), files, "in Sent");

    // A draft's files go into Drafts the same way.
    let up = upload_ok(&app, &tok, "odd.bin", &files[0].1).await;
    let draft_subject = format!("Draft edges {run}");
    expect_json(
        app.post_json(
            "/api/email/drafts",
            Some(&tok),
            json!({"to": ["gus@example.org"], "subject": draft_subject, "text": "later",
                   "attachments": [up["uploadId"]]}),
        )
        .await,
        201,
    )
    .await;
    let drafts = on_server(&email, "Drafts", &draft_subject).await;
    assert_eq!(drafts.len(), 1, "one draft");
    assert_eq!(files_of(&drafts[0]), vec![files[0].clone()], "in Drafts");
}

/// Flips a byte inside the sealed chunk `n` of a spooled upload.
fn damage_chunk(path: &std::path::Path, n: usize) {
    let mut raw = std::fs::read(path).expect("the spool file");
    let mut at = 0;
    for _ in 0..n {
        at += 4 + u32::from_be_bytes(raw[at..at + 4].try_into().unwrap()) as usize;
    }
    raw[at + 4 + 40] ^= 1;
    std::fs::write(path, raw).unwrap();
}

#[tokio::test]
async fn a_file_that_cannot_be_read_half_way_sends_nothing() {
    let app = app().await;
    let (tok, email, _) = user_with_mailbox(&app, "halfway").await;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let up = upload_ok(&app, &tok, "big.bin", &pdf(3 * CHUNK)).await;
    let spooled = app
        .data_dir()
        .join("email-uploads")
        .join(up["uploadId"].as_str().unwrap());
    // The first chunk streams out, the third does not open: DATA has begun by then.
    damage_chunk(&spooled, 2);
    let bad = format!("Broken {run}");
    let e = expect_error(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["gus@example.org"], "subject": bad, "text": "x",
                   "attachments": [up["uploadId"]]}),
        )
        .await,
        502,
        "mail_send_failed",
    )
    .await;
    assert!(
        e["message"].as_str().unwrap().contains("nothing was sent"),
        "{e}"
    );
    // A later message arrives (the sink has taken everything before it), the broken one not.
    let good = format!("After {run}");
    expect_json(
        app.post_json(
            "/api/email/compose",
            Some(&tok),
            json!({"to": ["gus@example.org"], "subject": good, "text": "fine"}),
        )
        .await,
        201,
    )
    .await;
    wait_sink(&good).await;
    assert!(
        sink_with(&bad).is_empty(),
        "nothing of the broken message was delivered"
    );
    assert!(
        on_server(&email, "Sent", &bad).await.is_empty(),
        "nor filed in Sent"
    );
    assert_eq!(on_server(&email, "Sent", &good).await.len(), 1);
}
