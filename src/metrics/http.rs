//! Requests by route template and status, and their latency, recorded lock-free by route
//! index (one slot per known status code).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::Histogram;

/// The status codes with their own counter; any other is counted as `other`.
pub const STATUS_CODES: &[u16] = &[
    200, 201, 202, 204, 206, 301, 302, 304, 307, 308, 400, 401, 403, 404, 405, 406, 409, 410, 413,
    415, 416, 422, 429, 500, 501, 502, 503, 504,
];

pub(super) struct RouteMetrics {
    pub(super) method: String,
    pub(super) route: String,
    /// One counter per [`STATUS_CODES`] entry, then `other`.
    pub(super) statuses: Vec<AtomicU64>,
    pub(super) latency: Histogram,
}

/// Per-route counters, indexed as the HTTP layer registered them.
pub struct HttpMetrics {
    pub(super) routes: Vec<RouteMetrics>,
}

impl HttpMetrics {
    pub(super) fn new(routes: Vec<(String, String)>) -> Self {
        Self {
            routes: routes
                .into_iter()
                .map(|(method, route)| RouteMetrics {
                    method,
                    route,
                    statuses: (0..=STATUS_CODES.len())
                        .map(|_| AtomicU64::new(0))
                        .collect(),
                    latency: Histogram::default(),
                })
                .collect(),
        }
    }

    /// `METHOD template` of route `index`, as the access log writes it (`route` field).
    pub fn route_label(&self, index: usize) -> &str {
        self.routes
            .get(index)
            .map_or("unmatched", |r| r.route.as_str())
    }

    /// One finished request of route `index` (out-of-range indexes are ignored).
    pub fn observe(&self, index: usize, status: u16, elapsed: Duration) {
        let Some(route) = self.routes.get(index) else {
            return;
        };
        let slot = STATUS_CODES
            .iter()
            .position(|c| *c == status)
            .unwrap_or(STATUS_CODES.len());
        route.statuses[slot].fetch_add(1, Ordering::Relaxed);
        route.latency.observe(elapsed);
    }
}
