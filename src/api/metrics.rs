//! `GET /metrics`: Prometheus text format for administrators (docs/operations.md). The same text is
//! served without authentication on `[metrics] listen` when set ([`standalone`]).

use poem::web::Data;
use poem::{get, handler, Endpoint, EndpointExt, Route};
use poem_openapi::payload::PlainText;
use poem_openapi::OpenApi;

use super::security::AdminAuth;
use super::ApiTags;
use crate::services::metrics;
use crate::state::AppState;

pub struct MetricsApi;

#[OpenApi(tag = "ApiTags::Admin")]
impl MetricsApi {
    /// Server metrics (Prometheus)
    ///
    /// The Prometheus text exposition format (0.0.4), for an administrator's native session
    /// (401 without a token, 403 `admin_required` for other users, 403
    /// `forbidden_for_api_token` for personal tokens). Series: `switchboard_http_requests_total`
    /// and `switchboard_http_request_duration_seconds` by method and route template (never
    /// ids or query words; `unmatched` for unknown paths), `switchboard_cache_requests_total`
    /// by cache and hit/miss, `switchboard_sync_rounds_total`, `_errors_total`, `_workers` and
    /// `_lag_seconds` by worker kind, `switchboard_db_wait_seconds`,
    /// `switchboard_scheduler_pending` and `_due`, and `switchboard_imap_sessions`. Set
    /// `[metrics] listen` to also serve it without authentication on a separate address.
    #[oai(path = "/metrics", method = "get", operation_id = "get_metrics")]
    async fn metrics(&self, state: Data<&AppState>, _admin: AdminAuth) -> PlainText<String> {
        PlainText(metrics::exposition(&state).await)
    }
}

#[handler]
async fn unauthenticated(state: Data<&AppState>) -> poem::Response {
    poem::Response::builder()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(metrics::exposition(&state).await)
}

/// The application of `[metrics] listen`: `GET /metrics` only, no authentication.
pub fn standalone(state: AppState) -> impl Endpoint {
    Route::new()
        .at("/metrics", get(unauthenticated))
        .data(state)
}
