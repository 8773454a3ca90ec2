//! The one place every request passes: authentication, the general rate limit, the
//! auth requirement, personal-token policy, and error bodies.
//!
//! Order matters: the caller is identified first (so the budget is per user or token, and
//! per client IP only for anonymous callers), then counted, then admitted or refused. The
//! rate-limit headers are set on every response, refusals included.

use std::sync::Arc;

use poem::http::{header, HeaderValue};
use poem::{Endpoint, IntoResponse, Request, Response};

use super::error::{ensure_json_error, json_error_response};
use super::routes::{is_public, personal_token_allows};
use crate::error::AppError;
use crate::ratelimit::Quota;
use crate::services::session::{self, Principal};
use crate::state::AppState;

pub async fn gate<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let Some(state) = req.data::<AppState>().cloned() else {
        return Ok(AppError::internal("application state missing").to_response());
    };
    let authenticated = match bearer_token(&req) {
        Some(token) => Some(session::authenticate(&state, &token).await),
        None => None,
    };
    let rate_key = match &authenticated {
        Some(Ok(principal)) => principal.rate_key(),
        _ => format!("ip:{}", client_ip(&req)),
    };
    let limits = &state.config.rate_limit;
    let (quota, within) = match state
        .limiter
        .hit(&rate_key, limits.requests, limits.window.0)
        .await
    {
        Ok(q) => (q, true),
        Err(q) => (q, false),
    };
    let mut resp = if !within {
        AppError::RateLimited {
            message: format!(
                "rate limit of {} requests per {} exceeded; retry after {} s",
                quota.limit,
                humantime::format_duration(limits.window.0),
                quota.retry_after()
            ),
            retry_after_secs: quota.retry_after(),
        }
        .to_response()
    } else {
        match admit(&state, &req, authenticated) {
            Err(e) => e.to_response(),
            Ok(principal) => {
                if let Some(p) = principal {
                    req.extensions_mut().insert(p);
                }
                match ep.call(req).await {
                    Ok(r) => ensure_json_error(r.into_response()),
                    Err(e) => json_error_response(e),
                }
            }
        }
    };
    set_rate_headers(&mut resp, quota);
    Ok(resp)
}

/// Decides whether the request may reach its handler, and as whom.
fn admit(
    state: &AppState,
    req: &Request,
    authenticated: Option<Result<Principal, AppError>>,
) -> Result<Option<Principal>, AppError> {
    let path = req.uri().path();
    if is_public(path) {
        // Credentials are irrelevant on public routes; a bad one is not an error there.
        return Ok(authenticated.and_then(Result::ok));
    }
    let principal = match authenticated {
        None => {
            return Err(AppError::unauthorized(
                "authentication required: send Authorization: Bearer <token>",
            ))
        }
        Some(result) => result?,
    };
    if let Principal::ApiToken {
        allowlist_version, ..
    } = &principal
    {
        let method = req.method().as_str();
        // Unknown paths fall through to the router's 404.
        if let Some(template) = state.routes.resolve(method, path) {
            if !personal_token_allows(method, template, *allowlist_version) {
                return Err(AppError::forbidden(
                    "forbidden_for_api_token",
                    format!("{method} {template} is not available to personal API tokens"),
                ));
            }
        }
    }
    Ok(Some(principal))
}

pub(crate) fn bearer_token(req: &Request) -> Option<String> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

/// The peer address. Behind a reverse proxy every anonymous caller shares the proxy's
/// address; authenticated callers are limited per user or token regardless.
fn client_ip(req: &Request) -> String {
    match req.remote_addr().as_socket_addr() {
        Some(addr) => addr.ip().to_string(),
        None => "unknown".to_owned(),
    }
}

fn set_rate_headers(resp: &mut Response, quota: Quota) {
    let headers = resp.headers_mut();
    headers.insert("x-ratelimit-limit", HeaderValue::from(quota.limit));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(quota.remaining));
    headers.insert("x-ratelimit-reset", HeaderValue::from(quota.reset));
}
