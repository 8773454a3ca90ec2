//! The load generator of `bench_messages`: `conns` loops on one HTTP/1.1 client, each
//! sending one request after the other, and what they measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Outcome {
    pub elapsed: Duration,
    /// CPU of the serving process and of this process's `client` threads per successful
    /// request.
    pub server_cpu: Duration,
    pub client_cpu: Duration,
    pub ok: u64,
    pub errors: u64,
    /// Sorted.
    pub latencies: Vec<Duration>,
}

impl Outcome {
    pub fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    pub fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() as f64 * p).ceil() as usize).clamp(1, self.latencies.len());
        self.latencies[i - 1]
    }

    pub fn print(&self, what: &str) {
        println!(
            "{what:<36} {:>7.0} req/s  p50 {:>6.2} ms  p99 {:>6.2} ms  max {:>7.2} ms  CPU/req server {:>4.0} µs client {:>4.0} µs  errors {}",
            self.rate(),
            ms(self.percentile(0.5)),
            ms(self.percentile(0.99)),
            ms(self.latencies.last().copied().unwrap_or_default()),
            self.server_cpu.as_secs_f64() * 1e6,
            self.client_cpu.as_secs_f64() * 1e6,
            self.errors
        );
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// utime + stime of process `pid` so far, in seconds (Linux clock ticks, 100 per second;
/// 0 when unknown).
pub fn process_cpu_secs(pid: u32) -> f64 {
    stat_cpu_secs(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default())
}

fn stat_cpu_secs(stat: &str) -> f64 {
    let Some(close) = stat.rfind(')') else {
        return 0.0;
    };
    let f: Vec<&str> = stat[close + 2..].split(' ').collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// CPU seconds used so far by this process's threads whose name starts with `prefix`.
pub fn thread_cpu_secs(prefix: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    let mut total = 0.0;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let named = stat
            .find('(')
            .is_some_and(|open| stat[open + 1..].starts_with(prefix));
        if named {
            total += stat_cpu_secs(&stat);
        }
    }
    total
}

/// `conns` loops, each sending one request after the other until `duration` is over;
/// Reads a response body to its end without collecting it (as wrk does): the load
/// generator shares the machine with the server, and gathering every chunk of a 12 KB page
/// into one buffer costs it a copy per response that no real client of the page needs.
/// `false` when the body breaks off or is shorter than its `Content-Length`.
async fn drain(mut resp: reqwest::Response) -> bool {
    let expected = resp.content_length();
    let mut read = 0u64;
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => read += chunk.len() as u64,
            Ok(None) => return expected.is_none_or(|n| n == read),
            Err(_) => return false,
        }
    }
}

/// `server_cpu` reads the CPU seconds of whatever serves `url`.
pub async fn run(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    conns: usize,
    duration: Duration,
    server_cpu: &dyn Fn() -> f64,
) -> Outcome {
    run_accepting(client, url, token, None, conns, duration, server_cpu).await
}

/// [`run`] with an `Accept-Encoding` header (as browsers and most HTTP libraries send
/// one). A compressed body is drained as it came, not decompressed, as wrk does.
pub async fn run_accepting(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    accept_encoding: Option<&'static str>,
    conns: usize,
    duration: Duration,
    server_cpu: &dyn Fn() -> f64,
) -> Outcome {
    let start = Instant::now();
    let cpu_before = (server_cpu(), thread_cpu_secs("client"));
    let deadline = start + duration;
    let url: Arc<str> = url.into();
    let token: Option<Arc<str>> = token.map(Into::into);
    let tasks: Vec<_> = (0..conns)
        .map(|_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            tokio::spawn(async move {
                let (mut ok, mut errors, mut latencies) = (0u64, 0u64, Vec::new());
                while Instant::now() < deadline {
                    let began = Instant::now();
                    let mut req = client.get(&*url);
                    if let Some(t) = &token {
                        req = req.bearer_auth(t);
                    }
                    if let Some(a) = accept_encoding {
                        req = req.header(reqwest::header::ACCEPT_ENCODING, a);
                    }
                    let good = match req.send().await {
                        Ok(resp) => resp.status().is_success() && drain(resp).await,
                        Err(_) => false,
                    };
                    if good {
                        ok += 1;
                        latencies.push(began.elapsed());
                    } else {
                        errors += 1;
                    }
                }
                (ok, errors, latencies)
            })
        })
        .collect();
    let mut out = Outcome {
        elapsed: Duration::ZERO,
        server_cpu: Duration::ZERO,
        client_cpu: Duration::ZERO,
        ok: 0,
        errors: 0,
        latencies: Vec::new(),
    };
    for t in tasks {
        let (ok, errors, latencies) = t.await.expect("load task");
        out.ok += ok;
        out.errors += errors;
        out.latencies.extend(latencies);
    }
    out.elapsed = start.elapsed();
    let per_request = |before: f64, now: f64| {
        Duration::from_secs_f64((now - before).max(0.0) / out.ok.max(1) as f64)
    };
    out.server_cpu = per_request(cpu_before.0, server_cpu());
    out.client_cpu = per_request(cpu_before.1, thread_cpu_secs("client"));
    out.latencies.sort();
    out
}
