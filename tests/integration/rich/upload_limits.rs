//! Review finding: the upload route skipped the body cap, read text parts without limit
//! and had no deadline, per-user cap or spool bound. Each limit, performed against the
//! real binary: a body over the cap refused up front (413), repeated or oversized text
//! parts (400 naming the field; an endless one is cut at 64 KiB), a trickled body (408
//! `request_timeout`), too many uploads of one user at once (429 `too_many_uploads`, while
//! the held ones stay unanswered), a full spool (503 `spool_full`).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::*;

const BOUNDARY: &str = "sbBoundary7MA4YWxkTrZu0gW";

/// A plain room (`extra` config) the server has synced: Bob's message in it is readable.
async fn ready(extra: &str) -> Plain {
    let p = plain(extra).await;
    let marker = p.bob.send_text(&p.room, "ready").await;
    wait_event_id(&p.app, &p.token, &p.room, &marker).await;
    p
}

/// An upload whose head and the first `sent` bytes of a body of `declared` bytes are on
/// the wire, the rest withheld: the connection stays open until dropped.
async fn held_upload(
    app: &TestApp,
    token: &str,
    room: &str,
    declared: usize,
    sent: &[u8],
) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    let head = format!(
        "POST /api/rooms/{}/media HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {declared}\r\n\r\n",
        enc(room),
        app.port
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(sent).await.unwrap();
    s.flush().await.unwrap();
    s
}

/// What the server already answered on the held upload `s` (None: nothing yet, it is
/// still in its handler holding its slot).
fn answered(s: &TcpStream, which: usize) -> Option<String> {
    let mut buf = [0u8; 2048];
    match s.try_read(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
        Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
        Err(e) => panic!("held upload {which} failed: {e}"),
    }
}

/// Panics when the held upload `s` was answered: it must stay in its handler until the
/// client lets go.
fn still_held(s: &TcpStream, which: usize) {
    if let Some(a) = answered(s, which) {
        panic!("held upload {which} was answered: {a:?}");
    }
}

/// The start of a form: `txnId`, then the head of the file part and a few PNG bytes.
fn form_start(txn: &str) -> Vec<u8> {
    let mut b = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"txnId\"\r\n\r\n{txn}\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    b.extend_from_slice(&png(8, 8, 1_000));
    b
}

/// The status line's code and the body of the answer on `s`, within `within`.
async fn answer(s: &mut TcpStream, within: Duration) -> (u16, String) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let n = tokio::time::timeout_at(deadline, s.read(&mut chunk))
            .await
            .expect("no answer in time")
            .unwrap_or(0);
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            if n == 0 || body.contains('}') {
                let code = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
                return (code, body.to_owned());
            }
        }
        assert!(n > 0, "closed without an answer: {text}");
    }
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused_before_it_is_read() {
    let p = ready("[media]\nmax_upload_mb = 1\n").await;
    // 1 MiB file + 1 MiB for the form: 3 MiB declared is refused from the head alone.
    let mut s = held_upload(
        &p.app,
        &p.token,
        &p.room,
        3 * 1024 * 1024,
        &form_start("cap-1"),
    )
    .await;
    let (status, body) = answer(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("payload_too_large"), "{body}");
}

#[tokio::test]
async fn text_parts_come_once_and_small() {
    let p = ready("").await;
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    let file = Some(("a.png", "image/png", &png(8, 8, 100)[..]));
    let twice = upload(
        app,
        token,
        room,
        &[("txnId", "t-1"), ("caption", "a"), ("caption", "b")],
        file,
    )
    .await;
    let err = expect_error(twice, 400, "invalid_request").await;
    assert!(
        err["message"].as_str().unwrap().starts_with("caption: "),
        "{err}"
    );
    let long = "x".repeat(64 * 1024 + 1);
    let big = upload(
        app,
        token,
        room,
        &[("txnId", "t-2"), ("caption", &long)],
        file,
    )
    .await;
    let err = expect_error(big, 400, "invalid_request").await;
    assert!(
        err["message"].as_str().unwrap().starts_with("caption: "),
        "{err}"
    );
    // A long caption below the limit is fine (Synapse's own event size limit of 64 KiB
    // keeps a caption of exactly 64 KiB from being sent).
    let at = "y".repeat(32 * 1024);
    let ok = upload(
        app,
        token,
        room,
        &[("txnId", "t-3"), ("caption", &at)],
        file,
    )
    .await;
    expect_json(ok, 200).await;
}

#[tokio::test]
async fn a_text_part_past_64_kib_is_refused_while_it_streams() {
    let p = ready("").await;
    // A caption part of 70 KiB whose end never comes: the server must stop reading at
    // 64 KiB and answer, not wait for the part (or the body deadline).
    let mut start = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"txnId\"\r\n\r\nlong-1\r\n\
         --{BOUNDARY}\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\n"
    )
    .into_bytes();
    start.extend(std::iter::repeat_n(b'x', 70 * 1024));
    let mut s = held_upload(&p.app, &p.token, &p.room, 500_000, &start).await;
    let (status, body) = answer(&mut s, Duration::from_secs(10)).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\"caption: is too long"), "{body}");
}

#[tokio::test]
async fn a_trickled_body_runs_into_the_deadline() {
    let p = ready("[media]\nupload_timeout = \"2s\"\n").await;
    let began = Instant::now();
    let mut s = held_upload(&p.app, &p.token, &p.room, 500_000, &form_start("slow-1")).await;
    let (status, body) = answer(&mut s, Duration::from_secs(20)).await;
    assert_eq!(status, 408, "{body}");
    assert!(body.contains("request_timeout"), "{body}");
    assert!(
        began.elapsed() >= Duration::from_secs(2),
        "not before the deadline"
    );
}

#[tokio::test]
async fn one_user_has_a_bounded_number_of_uploads_at_once() {
    let p = ready("[media]\nmax_concurrent_uploads = 2\n").await;
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    let mut held = [
        held_upload(app, token, room, 500_000, &form_start("held-1")).await,
        held_upload(app, token, room, 500_000, &form_start("held-2")).await,
    ];
    let file = png(8, 8, 100);
    // Once both held uploads are in the handler, a third is refused. Nothing outside says
    // when a held upload has reached its handler, so a third upload may get there first and
    // take the slot: the held upload is then the one refused (429 `too_many_uploads`, while
    // the other held upload and that third were in progress), which shows the bound as well.
    // A refused held upload's answer comes only after the server has waited up to 5 s for
    // the rest of its body (`http_server::unread`), and under heavy load a held upload has
    // been seen to reach its handler 15 s after it was sent: hence the generous deadline
    // (met at once when the machine is not overloaded).
    let deadline = Instant::now() + Duration::from_secs(45);
    let mut n = 0;
    let mut refused_held = None;
    loop {
        n += 1;
        for (i, s) in held.iter_mut().enumerate() {
            if let Some(a) = answered(s, i + 1) {
                assert!(
                    a.starts_with("HTTP/1.1 429")
                        && a.contains("too_many_uploads")
                        && a.contains("max_concurrent_uploads"),
                    "held upload {} answered: {a:?}",
                    i + 1
                );
                refused_held = Some(i);
            }
        }
        if let Some(i) = refused_held {
            // The other held upload still holds its slot.
            still_held(&held[1 - i], 2 - i);
            break;
        }
        let txn = format!("third-{n}");
        let resp = upload(
            app,
            token,
            room,
            &[("txnId", &txn)],
            Some(("a.png", "image/png", &file)),
        )
        .await;
        if resp.status() == 429 {
            let err = expect_error(resp, 429, "too_many_uploads").await;
            assert!(err["message"]
                .as_str()
                .unwrap()
                .contains("max_concurrent_uploads"));
            // The two slots are the held uploads' (both still unanswered).
            for (i, s) in held.iter().enumerate() {
                still_held(s, i + 1);
            }
            break;
        }
        let status = resp.status();
        assert_eq!(status, 200, "{}", resp.text().await.unwrap());
        if Instant::now() >= deadline {
            let log = app.log();
            let tail: Vec<&str> = log.lines().filter(|l| l.contains("media")).collect();
            panic!(
                "never refused; log: {:#?}",
                &tail[tail.len().saturating_sub(12)..]
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A held upload ends (the client goes away): its slot comes free again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        n += 1;
        let txn = format!("after-{n}");
        let resp = upload(
            app,
            token,
            room,
            &[("txnId", &txn)],
            Some(("a.png", "image/png", &file)),
        )
        .await;
        if resp.status() == 200 {
            break;
        }
        assert_eq!(resp.status(), 429);
        assert!(Instant::now() < deadline, "the slots never came free");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_full_spool_is_503_with_retry_after() {
    let p = ready("[media]\nmax_upload_mb = 8\nmax_spool_mb = 1\n").await;
    let (app, token, room) = (&p.app, p.token.as_str(), p.room.as_str());
    // Within the spool space it works (the positive marker) …
    let small = png(8, 8, 200_000);
    let ok = upload(
        app,
        token,
        room,
        &[("txnId", "sp-1")],
        Some(("s.png", "image/png", &small)),
    )
    .await;
    expect_json(ok, 200).await;
    // … a file larger than the whole spool space does not.
    let big = png(8, 8, 2 * 1024 * 1024);
    let resp = upload(
        app,
        token,
        room,
        &[("txnId", "sp-2")],
        Some(("b.png", "image/png", &big)),
    )
    .await;
    assert!(resp.headers().get("retry-after").is_some(), "Retry-After");
    expect_error(resp, 503, "spool_full").await;
    // The space was given back: the small one still fits.
    let again = upload(
        app,
        token,
        room,
        &[("txnId", "sp-3")],
        Some(("s.png", "image/png", &small)),
    )
    .await;
    expect_json(again, 200).await;
}
