use super::*;

#[test]
fn a_histogram_is_cumulative_and_counts_everything() {
    let h = Histogram::default();
    h.observe(Duration::from_micros(300));
    h.observe(Duration::from_millis(20));
    h.observe(Duration::from_secs(30));
    let mut out = String::new();
    render::tests_histogram(&mut out, &h);
    assert!(out.contains("x_bucket{le=\"0.0005\"} 1\n"), "{out}");
    assert!(out.contains("x_bucket{le=\"0.025\"} 2\n"), "{out}");
    assert!(out.contains("x_bucket{le=\"10\"} 2\n"), "{out}");
    assert!(out.contains("x_bucket{le=\"+Inf\"} 3\n"), "{out}");
    assert!(out.contains("x_count{} 3\n"), "{out}");
}

#[test]
fn requests_render_by_route_template_and_status_only() {
    let http = global().http_init(|| {
        vec![
            ("GET".into(), "/api/rooms/{roomId}".into()),
            ("POST".into(), "/api/search".into()),
        ]
    });
    http.observe(0, 200, Duration::from_millis(3));
    http.observe(0, 599, Duration::from_millis(3));
    http.observe(7, 200, Duration::from_millis(3)); // unknown index: ignored
    let text = render(&[Gauge {
        name: "switchboard_scheduler_queue",
        help: "Pending.",
        value: 4.0,
    }]);
    assert!(text.contains(
        "switchboard_http_requests_total{method=\"GET\",route=\"/api/rooms/{roomId}\",status=\"200\"}"
    ));
    assert!(text.contains("status=\"other\""));
    assert!(text.contains("switchboard_scheduler_queue 4\n"));
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        assert!(series.starts_with("switchboard_"), "{line}");
    }
}

#[test]
fn worker_lag_counts_live_workers_only() {
    let before = global().worker_lag(WorkerKind::Mailbox).0;
    let handle = global().worker_started(WorkerKind::Mailbox);
    handle.round_ok();
    assert_eq!(global().worker_lag(WorkerKind::Mailbox).0, before + 1);
    drop(handle);
    assert_eq!(global().worker_lag(WorkerKind::Mailbox).0, before);
}
