//! The single mapping from errors to HTTP: `AppError` → status + `{"error","message"}`.
//!
//! Errors poem raises itself (unparsable body, unknown route, …) are rewritten into the
//! same body by [`json_error_response`], called from the gate.

use poem::http::{header, HeaderValue, StatusCode};
use poem::{Body, Response};
use poem_openapi::registry::{MetaMediaType, MetaResponse, MetaResponses, Registry};
use poem_openapi::types::ToJSON;
use poem_openapi::{ApiResponse, Object};

use crate::error::{AppError, ErrorCode};

/// The body of every error response.
#[derive(Debug, Clone, Object)]
#[oai(rename = "Error")]
pub struct ErrorBody {
    /// Machine-readable snake_case code, e.g. `invalid_request`, `unauthorized`,
    /// `forbidden_for_api_token`, `subscription_expired`, `rate_limited`, `not_found`.
    pub error: String,
    /// Human-readable explanation; for validation errors `"<field>: <why>"`.
    pub message: String,
}

impl AppError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            Self::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::PayloadTooLarge { .. } | Self::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::NotImplemented { .. } => StatusCode::NOT_IMPLEMENTED,
            Self::RequestTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The message the client sees: internal detail is logged, never returned.
    fn public_message(&self) -> String {
        match self {
            Self::Internal(detail) => {
                tracing::error!(%detail, "internal error");
                "an internal error occurred; the server log has the details".to_owned()
            }
            other => other.to_string(),
        }
    }

    pub fn to_response(&self) -> Response {
        let mut resp = json_body(self.status(), self.error_code(), &self.public_message());
        if let Some(secs) = self.retry_after_secs() {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status() == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

pub fn json_body(status: StatusCode, code: ErrorCode, message: &str) -> Response {
    let body = ErrorBody {
        error: code.as_str().to_owned(),
        message: message.to_owned(),
    };
    Response::builder()
        .status(status)
        .content_type("application/json")
        .body(Body::from_string(body.to_json_string()))
}

impl poem::error::ResponseError for AppError {
    fn status(&self) -> StatusCode {
        AppError::status(self)
    }

    fn as_response(&self) -> Response {
        self.to_response()
    }
}

/// Documents the error body as the `default` response of every operation.
impl ApiResponse for AppError {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "Error: `{\"error\": \"snake_case_code\", \"message\": \"…\"}` with the \
                    status of the condition (400 invalid input, 401 missing/invalid bearer token, \
                    403 not allowed, 404 not found, 408 body too slow, 409 conflict, 429 rate limited with Retry-After, \
                    500 internal, 502/503 upstream)",
                status: None,
                status_range: None,
                content: vec![MetaMediaType {
                    content_type: "application/json",
                    schema: <ErrorBody as poem_openapi::types::Type>::schema_ref(),
                }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        <ErrorBody as poem_openapi::types::Type>::register(registry);
    }
}

/// Turns any error poem produced into the JSON error body with a fitting code.
pub fn json_error_response(err: poem::Error) -> Response {
    if let Some(app) = err.downcast_ref::<AppError>() {
        return app.to_response();
    }
    let status = err.status();
    let code = match status {
        StatusCode::BAD_REQUEST => ErrorCode::InvalidRequest,
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ErrorCode::UnsupportedMediaType,
        s if s.is_server_error() => ErrorCode::InternalError,
        _ => ErrorCode::BadRequest,
    };
    let message = if status.is_server_error() {
        tracing::error!(error = %err, "internal error");
        "an internal error occurred; the server log has the details".to_owned()
    } else if status == StatusCode::NOT_FOUND {
        "no such route".to_owned()
    } else {
        err.to_string()
    };
    json_body(status, code, &message)
}

/// Normalises an error *response* that did not come through our error type (e.g. a
/// plain-text 4xx from a poem extractor) into the JSON body.
pub fn ensure_json_error(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return resp;
    }
    json_error_response(poem::Error::from_status(status))
}
