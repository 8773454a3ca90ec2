//! HTTP API: one module per tag, assembled here into one OpenAPI service.

use crate::error::ErrorCode;
use std::sync::OnceLock;

use poem::endpoint::make_sync;
use poem::http::StatusCode;
use poem::middleware::CatchPanic;
use poem::{get, Endpoint, EndpointExt, Response, Route};
use poem_openapi::{OpenApi, OpenApiService, Tags};

use crate::state::AppState;

pub mod accounts;
pub mod admin;
pub mod ai;
pub mod assets;
pub mod attestation;
pub mod auth;
pub mod bridges;
pub mod contacts;
pub mod conversation;
pub mod devices;
pub mod e2ee;
pub mod email;
pub mod encoding;
pub mod error;
pub mod fast_json;
pub mod gate;
pub mod groups;
pub mod health;
pub mod invites;
pub mod keys;
pub mod linked;
pub mod mcp;
pub mod media;
pub mod messages;
pub mod metrics;
pub mod observe;
pub mod openapi;
pub mod preview;
pub mod push;
pub mod reminders;
pub mod rooms;
pub mod route_match;
pub mod routes;
pub mod scheduled;
pub mod search;
pub mod security;
pub mod streamed_form;
pub mod strict_json;
pub mod sync;
pub mod tokens;
pub mod views;
pub mod web_session;

/// Request bodies above this size are refused with 413 (avatars as base64 fit).
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// What a media upload's body may carry beyond the file (`[media] max_upload_mb`): its
/// text fields (four of 64 KiB at most) and the multipart headers.
const MEDIA_FORM_BYTES: u64 = 1024 * 1024;

#[derive(Tags)]
pub enum ApiTags {
    /// Service and dependency health.
    Health,
    /// Passwordless sign-in, sessions and the user's profile.
    Auth,
    /// The user's X25519 encryption key and recovery material.
    Keys,
    /// Several e-mail identities under one sign-in, and switching between them.
    Accounts,
    /// Personal API tokens for scripts (native sessions only).
    Tokens,
    /// Operator endpoints (administrators only).
    Admin,
    /// Server identity: keys clients pin and seal to (no authentication).
    Attestation,
    /// Messages scheduled for later delivery (native sessions only).
    Scheduled,
    /// Reminders with a due time (native sessions and personal tokens).
    Reminders,
    /// Push-notification devices (APNs) and the push configuration.
    Devices,
    /// Web Push for browsers: the VAPID key, subscriptions and previews (native sessions
    /// only).
    Push,
    /// The caller's rooms (conversations): list, read, mark read, archive, flags, delete.
    Rooms,
    /// Linked room groups: one conversation across several platforms.
    Linked,
    /// Message history (encrypted or readable), deletion, statistics and sending.
    Messages,
    /// Real-time change notifications (server-sent events).
    Sync,
    /// Bridges to WhatsApp, Telegram and Discord: status and interactive logins.
    Bridges,
    /// The user's own mailboxes over IMAP and SMTP: accounts, threads, messages, labels,
    /// signatures.
    Email,
    /// Encrypted full-text search over messages (and e-mail).
    Search,
    /// Summaries, translations and search by meaning (native sessions only).
    Ai,
    /// Contacts on the bridges and Matrix, and starting new conversations with them.
    Contacts,
    /// Managing a group the user is in: name, topic, picture, members, leaving.
    Groups,
    /// The sync device as a trusted end-to-end encryption device: cross-signing, key
    /// backup, recovery key and verification with the user's other Matrix devices (native
    /// sessions only).
    E2ee,
}

fn apis() -> impl OpenApi {
    (
        health::HealthApi,
        attestation::AttestationApi,
        auth::AuthApi,
        keys::KeysApi,
        accounts::AccountsApi,
        tokens::TokensApi,
        (admin::AdminApi, metrics::MetricsApi),
        (
            scheduled::ScheduledApi,
            reminders::RemindersApi,
            devices::DevicesApi,
            push::PushApi,
        ),
        (
            messages::MessagesApi,
            messages::MessageActionsApi,
            media::MediaApi,
            preview::PreviewApi,
        ),
        (
            (rooms::RoomsApi, rooms::MemberAvatarApi),
            rooms::RoomFlagsApi,
            rooms::RoomNotificationsApi,
            invites::InvitesApi,
            conversation::ConversationApi,
        ),
        linked::LinkedApi,
        sync::SyncApi,
        (
            (bridges::BridgesApi, bridges::BridgeLoginApi),
            (
                email::EmailApi,
                email::EmailLabelsApi,
                email::EmailSignaturesApi,
                email::EmailOutgoingApi,
            ),
            search::SearchApi,
            ai::AiApi,
            contacts::ContactsApi,
            (groups::GroupsApi, groups::GroupAvatarApi),
        ),
        e2ee::apis(),
    )
}

/// The description at the top of the OpenAPI document.
const DESCRIPTION: &str = "Unified messaging backend: one inbox over WhatsApp, Telegram and \
     Discord conversations held on a Matrix homeserver. Every route except /health, \
     /openapi.yaml, /api/attestation and the sign-in routes /api/auth/code, /api/auth/verify \
     and /api/auth/refresh requires `Authorization: Bearer <token>`. Every response carries \
     X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (Unix seconds); errors \
     are `{\"error\", \"message\"}`.";

fn service() -> OpenApiService<impl OpenApi, ()> {
    OpenApiService::new(apis(), "Switchboard", openapi::API_VERSION).description(DESCRIPTION)
}

/// The OpenAPI 3.1 document as JSON.
pub fn spec_json() -> serde_json::Value {
    static SPEC: OnceLock<serde_json::Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let raw: serde_json::Value =
            serde_json::from_str(&service().spec()).unwrap_or(serde_json::Value::Null);
        openapi::to_openapi_31(raw)
    })
    .clone()
}

/// The OpenAPI 3.1 document as YAML, as served at `/openapi.yaml`.
pub fn spec_yaml() -> String {
    static YAML: OnceLock<String> = OnceLock::new();
    YAML.get_or_init(|| serde_yaml::to_string(&spec_json()).unwrap_or_default())
        .clone()
}

/// The whole HTTP application: routes, the gate, panic and size guards, metrics and the
/// access log ([`observe`]),
/// and `/mcp`, whose tools are sent through the rest of the application ([`mcp`]).
pub fn app(state: AppState) -> impl Endpoint {
    // The web app's files are read, hashed and compressed now, not on a first request.
    let files = assets::load();
    tracing::debug!(files, "web app files embedded");
    let access = state.config.log.access;
    observe::init_metrics();
    let core: mcp::Core = std::sync::Arc::new(poem::endpoint::ToDynEndpoint(
        core(state.clone()).map_to_response(),
    ));
    Route::new()
        .at("/mcp", mcp::endpoint(state, core.clone()))
        .nest("/", core)
        .around(move |ep, req| observe::observe(ep, req, access))
}

/// Every route but `/mcp`, behind the gate.
fn core(state: AppState) -> impl Endpoint {
    let yaml = spec_yaml();
    Route::new()
        .at(
            "/openapi.yaml",
            get(make_sync(move |_| {
                Response::builder()
                    .status(StatusCode::OK)
                    .content_type("application/yaml")
                    .body(yaml.clone())
            })),
        )
        .nest("/", service())
        .around(limit_body)
        .around(assets::serve)
        .with(CatchPanic::new().with_handler(|_| {
            error::json_body(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::InternalError,
                "an internal error occurred; the server log has the details",
            )
        }))
        .around(gate::gate)
        .data(state)
}

/// Treats an empty body without Content-Type as JSON, and refuses bodies over
/// [`MAX_BODY_BYTES`]: by `Content-Length` up front (413), and caps
/// chunked bodies so they cannot grow without bound (the truncated body fails to parse).
async fn limit_body<E: Endpoint>(
    ep: std::sync::Arc<E>,
    mut req: poem::Request,
) -> poem::Result<Response> {
    use poem::IntoResponse;
    if let Some(cap) = media_upload_cap(&req) {
        cap_upload(&mut req, cap)?;
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let declared = declared_length(&req);
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large(MAX_BODY_BYTES as u64).into());
    }
    let chunked = req
        .headers()
        .contains_key(poem::http::header::TRANSFER_ENCODING);
    let empty = declared == Some(0) || (declared.is_none() && !chunked);
    if empty && !req.headers().contains_key(poem::http::header::CONTENT_TYPE) {
        // An empty body is an absent optional JSON body, not an unsupported media type.
        req.headers_mut().insert(
            poem::http::header::CONTENT_TYPE,
            poem::http::HeaderValue::from_static("application/json"),
        );
    }
    let strict = if empty { None } else { strict_route(&req) };
    if let Some(template) = strict {
        check_strict_body(&mut req, &template).await?;
    } else if declared.is_none() {
        cap_body(&mut req, MAX_BODY_BYTES as u64);
    }
    ep.call(req).await.map(IntoResponse::into_response)
}

/// The `Content-Length` the client declared, if any (and readable).
fn declared_length(req: &poem::Request) -> Option<u64> {
    req.headers()
        .get(poem::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

fn too_large(limit: u64) -> crate::error::AppError {
    crate::error::AppError::PayloadTooLarge {
        limit: usize::try_from(limit).unwrap_or(usize::MAX),
    }
}

/// Lets the body through up to `limit` bytes and one more (so an overlong body shows as
/// such to the parser instead of being cut silently to a valid length).
fn cap_body(req: &mut poem::Request, limit: u64) {
    use tokio::io::AsyncReadExt;
    let body = req.take_body().into_async_read().take(limit + 1);
    req.set_body(poem::Body::from_async_read(body));
}

/// An upload route: streamed to the homeserver under its own cap; the body as a whole may
/// carry that plus the form's text fields and part headers.
fn cap_upload(req: &mut poem::Request, cap: u64) -> Result<(), crate::error::AppError> {
    let limit = cap + MEDIA_FORM_BYTES;
    if declared_length(req).is_some_and(|n| n > limit) {
        return Err(too_large(limit));
    }
    cap_body(req, limit);
    Ok(())
}

/// Reads the body here (bounded) so its string fields can be checked before the typed body
/// parser sees them (see `strict_json`), then puts it back.
async fn check_strict_body(req: &mut poem::Request, template: &str) -> poem::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    req.take_body()
        .into_async_read()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| crate::error::AppError::invalid("body", e.to_string()))?;
    if bytes.len() > MAX_BODY_BYTES {
        return Err(too_large(MAX_BODY_BYTES as u64).into());
    }
    // A body that is not JSON is left to the typed parser's own 400.
    if let Ok(body) = serde_json::from_slice::<serde_json::Value>(&bytes) {
        routes::route_table()
            .string_fields
            .check(req.method().as_str(), template, &body)?;
    }
    req.set_body(bytes);
    Ok(())
}

/// The route template of a request whose operation has string fields in its JSON body
/// (resolved once, used for the check after the body is read).
fn strict_route(req: &poem::Request) -> Option<String> {
    let table = routes::route_table();
    let method = req.method().as_str();
    let template = table.resolve_at(table.matched(req), method)?;
    table
        .string_fields
        .covers(method, template)
        .then(|| template.to_owned())
}

/// The file cap of an upload route (`POST /api/rooms/{roomId}/media` and `POST
/// /api/email/attachments`: `[media] max_upload_mb`; a group's picture: 5 MiB), whose body
/// is a file capped by the upload itself; `None` for every other request.
fn media_upload_cap(req: &poem::Request) -> Option<u64> {
    let table = routes::route_table();
    if req.method() != poem::http::Method::POST {
        return None;
    }
    match table.resolve_at(table.matched(req), "POST")? {
        "/api/rooms/{roomId}/media" | "/api/email/attachments" => Some(
            req.data::<crate::state::AppState>()
                .map_or(MAX_BODY_BYTES as u64, |s| s.config.media.max_upload_bytes()),
        ),
        "/api/rooms/{roomId}/avatar" => Some(crate::services::groups::MAX_AVATAR_BYTES),
        _ => None,
    }
}
