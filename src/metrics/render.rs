//! The Prometheus text exposition format (version 0.0.4) of the registry.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use super::{global, CacheName, Histogram, WorkerKind, LATENCY_BUCKETS, STATUS_CODES};

/// A value measured at scrape time by a layer above this one (e.g. the scheduler's queue).
pub struct Gauge {
    pub name: &'static str,
    pub help: &'static str,
    pub value: f64,
}

/// The whole exposition: the registry's metrics, then `extra`.
pub fn render(extra: &[Gauge]) -> String {
    let registry = global();
    let mut out = String::with_capacity(16 * 1024);
    http(&mut out);
    header(
        &mut out,
        "switchboard_cache_requests_total",
        "counter",
        "Lookups of in-memory caches by result (hit ratio = hit / (hit + miss)).",
    );
    for name in CacheName::ALL {
        let c = registry.cache(name);
        for (result, n) in [("hit", &c.hits), ("miss", &c.misses)] {
            let _ = writeln!(
                out,
                "switchboard_cache_requests_total{{cache=\"{}\",result=\"{result}\"}} {}",
                name.label(),
                n.load(Ordering::Relaxed)
            );
        }
    }
    cache_sizes(&mut out);
    workers(&mut out);
    header(
        &mut out,
        "switchboard_db_wait_seconds",
        "histogram",
        "Time from asking for a database job to holding a pooled connection.",
    );
    histogram(
        &mut out,
        "switchboard_db_wait_seconds",
        "",
        &registry.db_wait,
    );
    if let Some(count) = registry.imap_sessions.get() {
        gauge(
            &mut out,
            "switchboard_imap_sessions",
            "Open IMAP sessions.",
            count() as f64,
        );
    }
    for g in extra {
        gauge(&mut out, g.name, g.help, g.value);
    }
    out
}

fn http(out: &mut String) {
    let Some(http) = global().http() else { return };
    header(
        out,
        "switchboard_http_requests_total",
        "counter",
        "Finished HTTP requests by method, route template and status.",
    );
    for r in &http.routes {
        for (i, n) in r.statuses.iter().enumerate() {
            let n = n.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let status = STATUS_CODES
                .get(i)
                .map_or_else(|| "other".to_owned(), u16::to_string);
            let _ = writeln!(
                out,
                "switchboard_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                r.method,
                escape(&r.route)
            );
        }
    }
    header(
        out,
        "switchboard_http_request_duration_seconds",
        "histogram",
        "Time to the response head by method and route template.",
    );
    for r in http.routes.iter().filter(|r| r.latency.count() > 0) {
        let labels = format!("method=\"{}\",route=\"{}\",", r.method, escape(&r.route));
        histogram(
            out,
            "switchboard_http_request_duration_seconds",
            &labels,
            &r.latency,
        );
    }
}

/// What each bounded cache holds; `bytes` is what its byte bound (moka weigher) counts.
fn cache_sizes(out: &mut String) {
    let registry = global();
    let sizes: Vec<_> = CacheName::ALL
        .iter()
        .filter_map(|name| registry.cache(*name).size().map(|s| (name.label(), s)))
        .collect();
    for (metric, help, pick) in [
        (
            "switchboard_cache_entries",
            "Entries held by each in-memory cache.",
            0,
        ),
        (
            "switchboard_cache_bytes",
            "Bytes held by each in-memory cache, as its byte bound counts them.",
            1,
        ),
    ] {
        header(out, metric, "gauge", help);
        for (label, (entries, bytes)) in &sizes {
            let value = if pick == 0 { entries } else { bytes };
            let _ = writeln!(out, "{metric}{{cache=\"{label}\"}} {value}");
        }
    }
}

fn workers(out: &mut String) {
    let registry = global();
    let series: [(&str, &str, &str); 4] = [
        (
            "switchboard_sync_rounds_total",
            "counter",
            "Successful sync rounds by worker kind.",
        ),
        (
            "switchboard_sync_errors_total",
            "counter",
            "Failed sync rounds by worker kind.",
        ),
        (
            "switchboard_sync_workers",
            "gauge",
            "Running sync workers by kind.",
        ),
        (
            "switchboard_sync_lag_seconds",
            "gauge",
            "The largest time since a worker's last successful round, by kind.",
        ),
    ];
    for (name, kind, help) in series {
        header(out, name, kind, help);
        for worker in WorkerKind::ALL {
            let m = registry.worker(worker);
            let value = match name {
                "switchboard_sync_rounds_total" => m.rounds.load(Ordering::Relaxed) as f64,
                "switchboard_sync_errors_total" => m.errors.load(Ordering::Relaxed) as f64,
                "switchboard_sync_workers" => registry.worker_lag(worker).0 as f64,
                _ => registry.worker_lag(worker).1,
            };
            let _ = writeln!(out, "{name}{{worker=\"{}\"}} {value}", worker.label());
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, value: f64) {
    header(out, name, "gauge", help);
    let _ = writeln!(out, "{name} {value}");
}

/// Buckets, sum and count; `labels` is empty or ends with a comma.
fn histogram(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let mut cumulative = 0;
    for (bound, n) in LATENCY_BUCKETS.iter().zip(&h.buckets) {
        cumulative += n.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{bound}\"}} {cumulative}");
    }
    let count = h.count.load(Ordering::Relaxed);
    let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {count}");
    let sum = h.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
    let labels = labels.trim_end_matches(',');
    let _ = writeln!(
        out,
        "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {count}"
    );
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
pub(super) fn tests_histogram(out: &mut String, h: &Histogram) {
    histogram(out, "x", "", h);
}
