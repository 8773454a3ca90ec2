//! The outermost layer: per-route request metrics and the access log line.
//!
//! Both name a request by its method and *route template* (`/api/search`,
//! `/api/rooms/{roomId}`), never by the URI: queries carry search words and labels, paths
//! carry room and message ids (docs/operations.md). A path no operation matches is `unmatched`.
//! The line is one `tracing` event with four fields, written by the queued log writer
//! (`crate::logging`); `[log] access = false` leaves it out (metrics stay).

use std::sync::Arc;
use std::time::Instant;

use poem::http::Method;
use poem::{Endpoint, IntoResponse, Request, Response};

use super::routes::{route_table, DOCUMENT_PATH};
use crate::metrics;

/// Labels of requests that match no operation of the document.
const EXTRA_ROUTES: [(&str, &str); 3] = [("GET", DOCUMENT_PATH), ("*", "/mcp"), ("*", "unmatched")];

/// Index of each extra label after the document's operations.
fn extra_index(path: &str) -> usize {
    let base = route_table().operations().count();
    match path {
        DOCUMENT_PATH => base,
        "/mcp" => base + 1,
        _ => base + 2,
    }
}

/// Registers the route labels with the metrics registry (once per process).
pub fn init_metrics() -> &'static metrics::HttpMetrics {
    metrics::global().http_init(route_labels)
}

/// `(method, template)` of every operation, then the extra labels.
fn route_labels() -> Vec<(String, String)> {
    let mut labels: Vec<(String, String)> = route_table()
        .operations()
        .map(|(m, p)| (m.to_owned(), p.to_owned()))
        .collect();
    labels.extend(
        EXTRA_ROUTES
            .iter()
            .map(|(m, p)| ((*m).to_owned(), (*p).to_owned())),
    );
    labels
}

/// Wraps the whole application; `access` is `[log] access`.
pub async fn observe<E: Endpoint>(
    ep: Arc<E>,
    mut req: Request,
    access: bool,
) -> poem::Result<Response> {
    let started = Instant::now();
    let method = req.method().clone();
    // The router answers HEAD with the GET handler: count it there.
    let lookup = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    // The router's verdict, once: the gate and the body guard read it from here.
    let table = route_table();
    let matched = table.match_uri(req.uri());
    let index = table
        .operation(matched, lookup)
        .unwrap_or_else(|| extra_index(req.uri().path()));
    req.extensions_mut().insert(matched);
    let accepts_gzip = super::encoding::accepts_gzip(req.headers());
    let mut resp = match ep.call(req).await {
        Ok(r) => r.into_response(),
        Err(e) => e.into_response(),
    };
    super::encoding::negotiate(&mut resp, accepts_gzip).await;
    let elapsed = started.elapsed();
    let status = resp.status().as_u16();
    let http = init_metrics();
    http.observe(index, status, elapsed);
    if access {
        let route = http.route_label(index);
        tracing::info!(
            target: "switchboard::access",
            method = method.as_str(),
            route,
            status,
            duration_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            "access"
        );
    }
    Ok(resp)
}
