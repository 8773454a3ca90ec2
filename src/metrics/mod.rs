//! Process-wide counters behind `GET /metrics` (Prometheus text format, docs/operations.md).
//!
//! Hand-rolled atomics instead of a metrics crate: the set is small and fixed, recording
//! is one or two relaxed atomic adds on the request path, and nothing here allocates after
//! start. Labels are fixed words (route templates, status codes, cache and worker names),
//! never ids or user input: a route is recorded by its index in the route table, a status
//! by its slot in [`STATUS_CODES`].
//!
//! One registry per process ([`global`]): the recorders sit in layers that do not share a
//! handle (the store, the caches, the workers, the HTTP layer).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

mod http;
mod render;

pub use http::{HttpMetrics, STATUS_CODES};
pub use render::{render, Gauge};

/// Upper bounds (seconds) of the latency buckets: requests and database waits.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// A cumulative histogram over [`LATENCY_BUCKETS`].
pub struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        // Only the first bucket that holds it: rendering accumulates.
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
}

/// What a cache holds now: entries, and the bytes its weigher counts (its bound).
pub type CacheSize = Box<dyn Fn() -> (u64, u64) + Send + Sync>;

/// Hits and misses of one in-memory cache, and how to read its size.
#[derive(Default)]
pub struct CacheCounters {
    hits: AtomicU64,
    misses: AtomicU64,
    size: OnceLock<CacheSize>,
}

impl CacheCounters {
    pub fn record(&self, hit: bool) {
        let counter = if hit { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Hook for the cache's owner: `(entries, bytes)` read at scrape time (first call
    /// wins: one cache of each name per process).
    pub fn set_size(&self, size: CacheSize) {
        let _ = self.size.set(size);
    }

    /// `(entries, bytes)`, when the owner registered its size.
    pub fn size(&self) -> Option<(u64, u64)> {
        self.size.get().map(|f| f())
    }
}

/// The caches `/metrics` reports, by their label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheName {
    /// Rendered read pages (`services::pages`).
    Pages,
    /// Authentication results (`services::session`).
    Auth,
    /// Opened message contents (`services::messages::cache`).
    Contents,
    /// Link previews (`services::media::preview`).
    Previews,
}

impl CacheName {
    const ALL: [Self; 4] = [Self::Pages, Self::Auth, Self::Contents, Self::Previews];
    fn label(self) -> &'static str {
        match self {
            Self::Pages => "pages",
            Self::Auth => "auth",
            Self::Contents => "contents",
            Self::Previews => "previews",
        }
    }
}

/// Background workers that sync with an upstream, by their label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerKind {
    /// The per-user Matrix `/sync` long-poll.
    Matrix,
    /// The per-account IMAP mailbox sync.
    Mailbox,
}

impl WorkerKind {
    const ALL: [Self; 2] = [Self::Matrix, Self::Mailbox];
    fn label(self) -> &'static str {
        match self {
            Self::Matrix => "matrix",
            Self::Mailbox => "mailbox",
        }
    }
}

/// Rounds, errors and the live workers of one kind (for the lag gauge).
#[derive(Default)]
pub struct WorkerMetrics {
    rounds: AtomicU64,
    errors: AtomicU64,
    live: Mutex<Vec<Weak<AtomicU64>>>,
}

/// One running worker: records its rounds; dropped when the worker ends.
pub struct WorkerHandle {
    kind: WorkerKind,
    /// Milliseconds since [`Registry::started`] at the last successful round.
    last_ok: Arc<AtomicU64>,
}

impl WorkerHandle {
    /// A round that reached its upstream and stored what it got.
    pub fn round_ok(&self) {
        let now = u64::try_from(global().started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ok.store(now, Ordering::Relaxed);
        global()
            .worker(self.kind)
            .rounds
            .fetch_add(1, Ordering::Relaxed);
    }

    /// A round that failed (the worker backs off and tries again).
    pub fn round_failed(&self) {
        global()
            .worker(self.kind)
            .errors
            .fetch_add(1, Ordering::Relaxed);
    }
}

/// Every metric of the process.
pub struct Registry {
    started: Instant,
    http: OnceLock<HttpMetrics>,
    caches: [CacheCounters; 4],
    workers: [WorkerMetrics; 2],
    /// From asking for a database job to holding a pooled connection.
    pub db_wait: Histogram,
    /// Open IMAP sessions, when the mail client registers its count
    /// ([`Registry::set_imap_sessions`]).
    imap_sessions: OnceLock<fn() -> u64>,
}

/// The registry of this process.
pub fn global() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry {
        started: Instant::now(),
        http: OnceLock::new(),
        caches: Default::default(),
        workers: Default::default(),
        db_wait: Histogram::default(),
        imap_sessions: OnceLock::new(),
    })
}

impl Registry {
    /// The HTTP counters, sized for `routes` (`(method, template)` of each route the
    /// HTTP layer records by index); the first call fixes the set. `routes` runs only on
    /// that first call: every request asks for the counters, and building the labels
    /// again each time showed as 2 % of the cheapest route's CPU.
    pub fn http_init(&self, routes: impl FnOnce() -> Vec<(String, String)>) -> &HttpMetrics {
        self.http.get_or_init(|| HttpMetrics::new(routes()))
    }

    pub fn http(&self) -> Option<&HttpMetrics> {
        self.http.get()
    }

    pub fn cache(&self, name: CacheName) -> &CacheCounters {
        &self.caches[CacheName::ALL.iter().position(|c| *c == name).unwrap_or(0)]
    }

    fn worker(&self, kind: WorkerKind) -> &WorkerMetrics {
        &self.workers[WorkerKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)]
    }

    /// A new running worker of `kind`; its lag counts from now until its first round.
    pub fn worker_started(&self, kind: WorkerKind) -> WorkerHandle {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last_ok = Arc::new(AtomicU64::new(now));
        if let Ok(mut live) = self.worker(kind).live.lock() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&last_ok));
        }
        WorkerHandle { kind, last_ok }
    }

    /// Hook for the IMAP client: a function counting its open sessions (first call wins).
    pub fn set_imap_sessions(&self, count: fn() -> u64) {
        let _ = self.imap_sessions.set(count);
    }

    /// (live workers, the largest lag in seconds) of one kind.
    fn worker_lag(&self, kind: WorkerKind) -> (usize, f64) {
        let now = self.started.elapsed().as_millis();
        let Ok(mut live) = self.worker(kind).live.lock() else {
            return (0, 0.0);
        };
        live.retain(|w| w.strong_count() > 0);
        let max = live
            .iter()
            .filter_map(Weak::upgrade)
            .map(|t| now.saturating_sub(u128::from(t.load(Ordering::Relaxed))))
            .max()
            .unwrap_or(0);
        (live.len(), max as f64 / 1000.0)
    }
}

#[cfg(test)]
mod tests;
