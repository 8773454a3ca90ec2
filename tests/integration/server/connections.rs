//! Attacks on the connections themselves, spoken over raw TCP to the real binary: a request
//! head sent half and left hanging, idle keep-alive connections, more connections than the
//! cap. Each test is the attack, and passes only when it is repelled (or, for a client that
//! merely pauses, when the connection keeps working).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::*;

/// Reads one response (head, then a `content-length` body); returns its head.
async fn read_response(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::Error::other(format!(
                "closed after {:?}",
                String::from_utf8_lossy(&got)
            )));
        }
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>())
        })
        .and_then(Result::ok)
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await?;
    Ok(head)
}

/// Reads until the peer closes; returns what arrived, or `None` if still open at `limit`.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn half_sent_and_idle_connections_are_cut() {
    let app = start_with_server_keys("header_timeout = \"2s\"\nidle_timeout = \"4s\"\n").await;
    let started = Instant::now();
    let mut slow = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut slow, Duration::from_secs(10))
        .await
        .expect("an incomplete request head must not hold the connection");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the head timer, not the idle one: {:?}",
        started.elapsed()
    );
    assert!(!answer.contains("200 OK"), "{answer}");

    // A head started after a served request runs against the head timer as well.
    let mut again = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    again
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut first = [0u8; 12];
    again.read_exact(&mut first).await.unwrap();
    let started = Instant::now();
    again.write_all(b"GET /health HTT").await.unwrap();
    read_until_closed(&mut again, Duration::from_secs(10))
        .await
        .expect("a half head after a request must not hold the connection");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );

    // A keep-alive connection that sends nothing more is closed after the idle timeout,
    // which every response announces.
    let mut idle = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let answer = read_until_closed(&mut idle, Duration::from_secs(10))
        .await
        .expect("an idle keep-alive connection must be closed");
    assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("keep-alive: timeout=3\r\n"),
        "{answer}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "closed before its idle timeout: {:?}",
        started.elapsed()
    );
}

/// A keep-alive connection quiet for longer than the head timer (but within the idle
/// timeout) still carries the next request: hyper's own timer closed it at the head timeout,
/// which scripts pausing for half a minute met as a silent close.
#[tokio::test]
async fn a_pause_longer_than_the_head_timer_keeps_the_connection() {
    let app = start_with_server_keys("header_timeout = \"2s\"\nidle_timeout = \"8s\"\n").await;
    let mut conn = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    for pause in [0u64, 4] {
        tokio::time::sleep(Duration::from_secs(pause)).await;
        conn.write_all(b"GET /api/attestation HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let head = read_response(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("after a {pause}s pause: {e}"));
        assert!(
            head.starts_with("HTTP/1.1 200 "),
            "after a {pause}s pause: {head}"
        );
    }
}

#[tokio::test]
async fn connections_past_the_cap_are_refused_busy() {
    let app = start_with_server_keys("max_connections = 3\n").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut s = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
        // A complete request first, so the slot is surely taken before the next connect.
        s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).await.unwrap();
        held.push(s);
    }
    let mut extra = TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    extra
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_until_closed(&mut extra, Duration::from_secs(10))
        .await
        .expect("refused at once");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("\"error\":\"busy\""), "{answer}");
    // Freeing a slot lets the next caller in.
    drop(held.pop());
    let mut served = false;
    for _ in 0..50 {
        // A refused connection may also end in a reset: only a 200 counts.
        let resp = app.http.get(app.url("/api/attestation")).send().await;
        if resp.is_ok_and(|r| r.status() == 200) {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "a freed slot is used again");
}

/// A server whose `[server]` section carries `keys` besides the harness's own.
async fn start_with_server_keys(keys: &str) -> TestApp {
    TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: format!("[server]\n{keys}\n"),
    })
    .await
}
