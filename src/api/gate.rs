//! The one place every request passes: authentication, the general rate limit, the
//! auth requirement, personal-token policy, and error bodies.
//!
//! Order matters: the caller is identified first (so the budget is per user or token, and
//! per client IP only for anonymous callers), then counted, then admitted or refused. The
//! rate-limit headers are set on every response, refusals included.

use std::net::IpAddr;
use std::sync::Arc;

use poem::http::{header, HeaderValue, Method};
use poem::{Endpoint, IntoResponse, Request, Response};

use super::error::{ensure_json_error, json_error_response};
use super::routes::{route_table, Matched};
use crate::error::{AppError, ErrorCode};
use crate::ratelimit::Quota;
use crate::services::session::{self, Principal};
use crate::state::AppState;

pub async fn gate<E: Endpoint>(ep: Arc<E>, mut req: Request) -> poem::Result<Response> {
    let Some(state) = req.data::<AppState>().cloned() else {
        return Ok(AppError::internal("application state missing").to_response());
    };
    let ip = client_ip(&state, &req);
    let ip_key = || format!("ip:{ip}");
    let limits = &state.config.rate_limit;
    // The web app's files are public and counted on a budget of their own, so loading
    // the app never spends what the API needs (`[rate_limit] static_requests`).
    let app = super::assets::is_app_request(req.method(), req.uri().path());
    // Public routes ignore credentials: a bearer token sent along must not move the
    // request off the caller's address budget (nor cost a lookup).
    let matched = route_table().matched(&req);
    let api = is_api_path(req.uri().path());
    let public = app || route_table().is_public_at(matched);
    let token = (!public).then(|| bearer_token(&req)).flatten();
    let authenticated = match token {
        Some(token) => Some(identify(&state, &token, &ip_key()).await),
        None => None,
    };
    let (rate_key, budget) = match &authenticated {
        _ if app => (format!("static:{ip}"), limits.static_requests),
        Some(Ok(principal)) => (principal.rate_key(), limits.requests),
        _ => (ip_key(), limits.requests),
    };
    let (quota, within) = match state.limiter.count(&rate_key, budget, limits.window.0) {
        Ok(q) => (q, true),
        Err(q) => (q, false),
    };
    let mut resp = if !within {
        rate_limited(&quota, limits.window.0)
    } else {
        match admit(&req, matched, public, authenticated) {
            Err(e) => e.to_response(),
            Ok(principal) => {
                if let Some(p) = principal {
                    req.extensions_mut().insert(p);
                }
                req.extensions_mut().insert(ClientAddr(ip));
                match ep.call(req).await {
                    Ok(r) => ensure_json_error(r.into_response()),
                    Err(e) => json_error_response(e),
                }
            }
        }
    };
    set_rate_headers(&mut resp, quota);
    if api {
        // Answers of the API carry tokens, keys and private data: no cache (a browser's,
        // a proxy's) may keep them. A route with a policy of its own (attachments) keeps it.
        resp.headers_mut()
            .entry(header::CACHE_CONTROL)
            .or_insert(HeaderValue::from_static("no-store"));
    }
    Ok(resp)
}

/// Who a bearer token says the caller is. An address that has spent its budget may still
/// present a personal token known to exist; any other is refused before a lookup is made
/// for it (the budget is looked at first: hashing the token for the check is only needed
/// once it is spent).
async fn identify(state: &AppState, token: &str, ip_key: &str) -> Result<Principal, AppError> {
    if token.starts_with(session::PERSONAL_TOKEN_PREFIX) {
        if let Some(verdict) = session::authenticate_personal_cached(state, token) {
            return verdict;
        }
        let limits = &state.config.rate_limit;
        let spent = state
            .limiter
            .look(ip_key, limits.requests, limits.window.0)
            .remaining
            == 0;
        if spent && !session::is_known_personal_token(state, token) {
            return Err(AppError::unauthorized("invalid personal API token"));
        }
    }
    session::authenticate(state, token).await
}

/// 429 `rate_limited` with when to retry.
fn rate_limited(quota: &Quota, window: std::time::Duration) -> Response {
    AppError::TooManyRequests {
        code: ErrorCode::RateLimited,
        message: format!(
            "rate limit of {} requests per {} exceeded; retry after {} s",
            quota.limit,
            humantime::format_duration(window),
            quota.retry_after()
        ),
        retry_after_secs: Some(quota.retry_after()),
    }
    .to_response()
}

/// `/api` and everything under it (the web app's files and `/health` are not the API).
fn is_api_path(path: &str) -> bool {
    path.strip_prefix("/api")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The client's address as the gate determined it (see `[server] trusted_proxies`).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub IpAddr);

/// Decides whether the request may reach its handler, and as whom.
fn admit(
    req: &Request,
    matched: Matched,
    public: bool,
    authenticated: Option<Result<Principal, AppError>>,
) -> Result<Option<Principal>, AppError> {
    if public {
        return Ok(None);
    }
    let principal = match authenticated {
        // A path no operation has is the router's 404 (JSON), with or without a token:
        // `/api/…` never answers anything else (nor the app's HTML).
        None if !route_table().knows(matched) => return Ok(None),
        None => {
            return Err(AppError::unauthorized(
                "authentication required: send Authorization: Bearer <token>",
            ))
        }
        Some(result) => result?,
    };
    if let Principal::ApiToken {
        allowlist_version,
        opted_in_version,
        ..
    } = &principal
    {
        // The router answers HEAD with the GET handler, so HEAD is judged as GET.
        let method = match req.method() {
            &Method::HEAD => "GET",
            m => m.as_str(),
        };
        match route_table().resolve_personal(matched, method) {
            Some((template, entry))
                if !entry.is_some_and(|e| e.admits(*allowlist_version, *opted_in_version)) =>
            {
                return Err(AppError::forbidden(
                    ErrorCode::ForbiddenForApiToken,
                    format!("{method} {template} is not available to personal API tokens"),
                ));
            }
            Some(_) => {}
            // A known path with a method the document does not list (OPTIONS, TRACE, a
            // method the router may still serve): default deny.
            None if route_table().knows(matched) => {
                return Err(AppError::forbidden(
                    ErrorCode::ForbiddenForApiToken,
                    format!(
                        "{} {} is not available to personal API tokens",
                        req.method(),
                        req.uri().path()
                    ),
                ));
            }
            // Unknown paths fall through to the router's 404.
            None => {}
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

/// The client's address: the peer, or, when the peer is one of `[server] trusted_proxies`,
/// the right-most untrusted `X-Forwarded-For` hop. Without trusted proxies, every caller
/// behind a reverse proxy shares the proxy's address (and its anonymous budget).
fn client_ip(state: &AppState, req: &Request) -> IpAddr {
    let Some(peer) = req.remote_addr().as_socket_addr().map(|a| a.ip()) else {
        return IpAddr::from([0, 0, 0, 0]);
    };
    let proxies = &state.config.server.trusted_proxies;
    if proxies.is_empty() {
        return peer;
    }
    let forwarded: Vec<&str> = req
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    proxies.client_addr(peer, &forwarded)
}

// The names as constants: inserting by `&str` parses the name again on every response.
const RATELIMIT_LIMIT: header::HeaderName = header::HeaderName::from_static("x-ratelimit-limit");
const RATELIMIT_REMAINING: header::HeaderName =
    header::HeaderName::from_static("x-ratelimit-remaining");
const RATELIMIT_RESET: header::HeaderName = header::HeaderName::from_static("x-ratelimit-reset");

fn set_rate_headers(resp: &mut Response, quota: Quota) {
    let headers = resp.headers_mut();
    // Room for the three (and `Cache-Control`) at once rather than growing on the way.
    headers.reserve(4);
    headers.insert(RATELIMIT_LIMIT, HeaderValue::from(quota.limit));
    headers.insert(RATELIMIT_REMAINING, HeaderValue::from(quota.remaining));
    headers.insert(RATELIMIT_RESET, HeaderValue::from(quota.reset));
}
