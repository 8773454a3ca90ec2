//! `GET /health`: dependency status for monitors and load balancers. No authentication.

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{ApiResponse, Object, OpenApi};

use super::ApiTags;
use crate::services::health::{self, Check};
use crate::state::AppState;

/// Result of one dependency check.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct HealthCheck {
    /// `ok`, `down`, `disabled` (optional dependency switched off) or `not_configured`;
    /// for `mail` also `log_only`.
    pub status: String,
    /// Time the check took in milliseconds; null when nothing was contacted.
    pub latency_ms: Option<u64>,
    /// Why the dependency is not `ok`.
    #[oai(skip_serializing_if_is_none)]
    pub error: Option<String>,
}

#[derive(Debug, Object)]
pub struct HealthChecks {
    pub database: HealthCheck,
    pub cache: HealthCheck,
    /// The AI service; `disabled` without an `[ai]` section.
    pub ai: HealthCheck,
    /// The Matrix homeserver (`GET /_matrix/client/versions`, 3 s timeout).
    pub matrix: HealthCheck,
    /// How sign-in codes are delivered: `log_only` when the `log` transport writes them to
    /// the server log (development; whoever reads the log can sign in as anyone), `ok` with
    /// SMTP (configured; not contacted by this check). Informational: it never makes
    /// `/health` 503 by itself.
    pub mail: HealthCheck,
}

/// Health result.
#[derive(Debug, Object)]
pub struct HealthResult {
    /// `ok` or `degraded`.
    pub status: String,
    /// Version of the switchboard binary.
    pub version: String,
    pub checks: HealthChecks,
}

#[derive(ApiResponse)]
pub enum HealthResponse {
    /// Every configured dependency is healthy.
    #[oai(status = 200)]
    Healthy(Json<HealthResult>),
    /// A dependency is down, or a required one (database, cache, homeserver) is not configured.
    #[oai(status = 503)]
    Unhealthy(Json<HealthResult>),
}

pub struct HealthApi;

#[OpenApi(tag = "ApiTags::Health")]
impl HealthApi {
    /// Service health
    ///
    /// Checks the database (a real query), the in-process cache (write and read back), the
    /// AI service (`disabled` when `[ai]` is not configured) and the Matrix homeserver, each
    /// with status and latency, and reports the mail transport (`mail`: `log_only` or `ok`;
    /// never a reason for 503). 200 when healthy, 503 with the same body otherwise. An
    /// `error` names the failing dependency, never its address (details are in the log).
    #[oai(path = "/health", method = "get", operation_id = "get_health")]
    async fn health(&self, state: Data<&AppState>) -> HealthResponse {
        let report = health::check_all(&state).await;
        let healthy = report.healthy();
        let body = HealthResult {
            status: if healthy { "ok" } else { "degraded" }.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            checks: HealthChecks {
                database: to_api(report.database),
                cache: to_api(report.cache),
                ai: to_api(report.ai),
                matrix: to_api(report.matrix),
                mail: to_api(report.mail),
            },
        };
        if healthy {
            HealthResponse::Healthy(Json(body))
        } else {
            HealthResponse::Unhealthy(Json(body))
        }
    }
}

fn to_api(check: Check) -> HealthCheck {
    HealthCheck {
        status: check.status.as_str().to_owned(),
        latency_ms: check.latency_ms,
        error: check.error,
    }
}
