//! `/mcp`: the Model Context Protocol for assistants (streamable HTTP transport, `rmcp`),
//! with a personal API token as the bearer.
//!
//! Every tool wraps one HTTP route ([`tools`]) and is executed as that route: an internal
//! request with the caller's own `Authorization` header through the whole application,
//! gate included. So a tool call passes exactly the checks the route does (the allowlist
//! and explicit opt-ins, the subscription, the rate limit, the route's own validation),
//! and a refusal comes back as an MCP (JSON-RPC) error carrying the route's `error` code
//! and `message` (`data: {error, message, status}`); nothing is re-implemented here.
//!
//! The transport runs stateless (every POST stands alone, answered as JSON): each request
//! carries the bearer anyway, so there is no session to keep or to hijack. `Host`/`Origin`
//! checks of the SDK (DNS-rebinding protection for unauthenticated local servers) are off:
//! a page a browser was tricked into loading cannot send the bearer.
//!
//! The `/mcp` request itself passes the gate first (authentication, subscription, rate
//! limit); its refusals are rewritten into JSON-RPC error bodies ([`json_rpc_refusals`]),
//! keeping the HTTP status, so MCP clients surface them as errors with the same code and
//! message.

use std::sync::Arc;

use poem::endpoint::{DynEndpoint, TowerCompatExt};
use poem::http::{header, HeaderValue, Method, StatusCode};
use poem::{Endpoint, EndpointExt, IntoResponse, Request, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode as RpcCode,
    Implementation, InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Value};

use crate::error::{AppError, ErrorCode};
use crate::services::session::Principal;
use crate::state::AppState;

mod catalogue;
mod media;
mod spec;
pub mod tools;

/// The application every tool call is sent through.
pub type Core = Arc<dyn DynEndpoint<Output = Response>>;

/// Largest `/mcp` request body.
const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The `/mcp` endpoint: gate, personal-token check, then the MCP transport.
pub fn endpoint(state: AppState, core: Core) -> impl Endpoint<Output = Response> {
    let server = McpServer { core };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    service
        .compat()
        .around(personal_tokens_only)
        .around(super::gate::gate)
        .around(json_rpc_refusals)
        .data(state)
        .map_to_response()
}

/// `/mcp` is for personal tokens: native sessions have the full API.
async fn personal_tokens_only<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    match req.extensions().get::<Principal>() {
        Some(Principal::ApiToken { .. }) => ep.call(req).await.map(IntoResponse::into_response),
        _ => Err(AppError::forbidden(
            ErrorCode::PersonalTokenRequired,
            "/mcp takes a personal API token (csk_…) as the bearer",
        )
        .into()),
    }
}

/// Turns the gate's refusals of the `/mcp` request itself (`{"error", "message"}` with a
/// 4xx/5xx status) into JSON-RPC error bodies with the same code and message.
async fn json_rpc_refusals<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let resp = ep.call(req).await.map(IntoResponse::into_response)?;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if status.is_success() || !is_json {
        return Ok(resp);
    }
    let (parts, body) = resp.into_parts();
    let bytes = body.into_bytes().await.unwrap_or_default();
    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let (Some(code), Some(message)) = (value["error"].as_str(), value["message"].as_str()) else {
        // Already a JSON-RPC body (the transport's own errors), or not ours.
        return Ok(Response::from_parts(parts, bytes.into()));
    };
    let error = route_error(parts.status, code, message);
    let body = json!({"jsonrpc": "2.0", "id": null, "error": error});
    let mut out = Response::from_parts(parts, body.to_string().into());
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(out)
}

/// The JSON-RPC error for a route's refusal: invalid params for a 400, a server error
/// otherwise; `data` carries the route's body and status.
fn route_error(status: StatusCode, code: &str, message: &str) -> ErrorData {
    let rpc = if status == StatusCode::BAD_REQUEST {
        RpcCode::INVALID_PARAMS
    } else {
        RpcCode(-32000)
    };
    ErrorData::new(
        rpc,
        message.to_owned(),
        Some(json!({"error": code, "message": message, "status": status.as_u16()})),
    )
}

#[derive(Clone)]
pub struct McpServer {
    core: Core,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "switchboard",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Switchboard: the user's chats (WhatsApp, Telegram, Discord, Matrix), e-mail \
                 and reminders. Each tool is one HTTP route of the Switchboard API and answers \
                 that route's JSON; refusals carry the route's error code in error.data.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            tools::specs().iter().map(tools::ToolSpec::tool).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let spec = tools::specs()
            .iter()
            .find(|s| s.name == request.name)
            .ok_or_else(|| {
                route_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    &format!("name: no tool named {:?}", request.name),
                )
            })?;
        let bearer = context
            .extensions
            .get::<poem::http::request::Parts>()
            .and_then(|p| p.headers.get(header::AUTHORIZATION).cloned())
            .ok_or_else(|| {
                route_error(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    "authentication required",
                )
            })?;
        if spec.acts() {
            allow_acting(&context).await?;
        }
        let args = request.arguments.unwrap_or_default();
        if let Some(result) = media::call(&self.core, spec, &args, bearer.clone()).await {
            return result.map(Into::into);
        }
        let (path, body) = spec
            .request(&args)
            .map_err(|why| route_error(StatusCode::BAD_REQUEST, "invalid_request", &why))?;
        let value = self.route(spec.method.clone(), &path, bearer, body).await?;
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        Ok(result.into())
    }
}

/// Refuses a tool that acts unless the calling token opted in to acting tools
/// (`mcpActions`); reading tools never get here.
async fn allow_acting(context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
    let parts = context.extensions.get::<poem::http::request::Parts>();
    let token = parts.and_then(|p| p.extensions.get::<Principal>());
    let state = parts.and_then(|p| p.extensions.get::<AppState>());
    let (Some(Principal::ApiToken { token_id, .. }), Some(state)) = (token, state) else {
        return Err(refusal_not_enabled());
    };
    match crate::services::tokens::mcp_actions_enabled(state, token_id).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(refusal_not_enabled()),
        Err(e) => Err(route_error(
            StatusCode::SERVICE_UNAVAILABLE,
            e.code(),
            "the token's settings cannot be read right now",
        )),
    }
}

fn refusal_not_enabled() -> ErrorData {
    route_error(
        StatusCode::FORBIDDEN,
        ErrorCode::McpActionsNotEnabled.as_str(),
        "this tool acts (sends, creates, changes or deletes) and this token may only use \
         reading tools; switch acting tools on for it with PATCH \
         /api/developer/tokens/{id} {\"mcpActions\": true}",
    )
}

impl McpServer {
    /// Sends one request through the application as the caller; a refusal is the MCP error.
    async fn route(
        &self,
        method: Method,
        path: &str,
        bearer: HeaderValue,
        body: Option<Value>,
    ) -> Result<Value, ErrorData> {
        let uri: poem::http::Uri = path.parse().map_err(|_| {
            route_error(StatusCode::BAD_REQUEST, "invalid_request", "path: invalid")
        })?;
        let builder = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, bearer);
        let req = match body {
            Some(b) => builder.content_type("application/json").body(b.to_string()),
            None => builder.finish(),
        };
        let resp = match self.core.call(req).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        };
        let status = resp.status();
        let bytes = resp.into_body().into_bytes().await.unwrap_or_default();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(value);
        }
        let code = value["error"].as_str().unwrap_or("upstream_error");
        let message = value["message"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("the route answered HTTP {}", status.as_u16()));
        Err(route_error(status, code, &message))
    }
}
