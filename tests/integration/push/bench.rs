//! The push benchmark (not a test; `scripts/bench_push.sh` runs it): the time from a message
//! reaching Synapse (its send answered) to its push reaching a local push service (the
//! push has left Switchboard), p50 and p99 over 200 messages sent one after another, and
//! the server's CPU time per push (user + system, from /proc).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{subscribe, vapid};
use crate::common::push_service::PushService;
use crate::common::{accept_invite, matrix, TestApp};

const MESSAGES: usize = 200;

fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the command name (which may hold spaces): utime is 14th, stime 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[tokio::test]
#[ignore = "benchmark: scripts/bench_push.sh"]
async fn bench_message_to_push() {
    let service = PushService::start();
    let app = TestApp::start_with_mail_and(PushService::config()).await;
    let reader = app.sign_up("push-bench").await;
    vapid(&app, &service, &reader).await;
    let (sub, _) = subscribe(&app, &service, &reader).await;
    let sender = matrix::register("pushbench").await;
    let reader_id = reader.user["matrixUserId"].as_str().unwrap();
    let room = sender.create_room(Some("Bench"), &[reader_id], false).await;
    accept_invite(&app, &reader.access_token, &room).await;
    // Warm-up (the first push makes the VAPID key and connections).
    let e = sender.send_text(&room, "warm-up").await;
    service
        .wait_for(&sub, "warm-up", |r| {
            r.iter().any(|p| p["payload"]["eventId"] == e.as_str())
        })
        .await;

    let cpu_before = cpu_seconds(app.pid());
    let mut latencies = Vec::with_capacity(MESSAGES);
    for i in 0..MESSAGES {
        let event = sender.send_text(&room, &format!("bench message {i}")).await;
        let at_synapse = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let pushes = service
            .wait_for(&sub, "a bench push", |r| {
                r.iter().any(|p| p["payload"]["eventId"] == event.as_str())
            })
            .await;
        let push = pushes
            .iter()
            .find(|p| p["payload"]["eventId"] == event.as_str())
            .unwrap();
        latencies.push((push["at"].as_f64().unwrap() - at_synapse).max(0.0) * 1000.0);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cpu = cpu_seconds(app.pid()) - cpu_before;
    latencies.sort_by(f64::total_cmp);
    println!(
        "BENCH web push: {MESSAGES} messages; message at Synapse -> push received: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; server CPU {:.2} ms per push (whole process, sync included)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().unwrap(),
        cpu * 1000.0 / MESSAGES as f64
    );
}
