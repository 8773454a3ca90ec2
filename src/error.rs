//! The one error type services return. HTTP mapping lives in `api::error`, so nothing
//! here knows about poem.

mod code;

pub use code::ErrorCode;

use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// 400: the request is well-formed HTTP but its content is not acceptable.
    #[error("{message}")]
    BadRequest { code: ErrorCode, message: String },
    /// 401: no, or no longer valid, credentials.
    #[error("{message}")]
    Unauthorized { code: ErrorCode, message: String },
    /// 403: valid credentials that may not do this.
    #[error("{message}")]
    Forbidden { code: ErrorCode, message: String },
    #[error("{message}")]
    NotFound { code: ErrorCode, message: String },
    #[error("{message}")]
    Conflict { code: ErrorCode, message: String },
    /// 429: a request rate (with `Retry-After`) or a limit on concurrent use (without:
    /// capacity comes back when something in use ends).
    #[error("{message}")]
    TooManyRequests {
        code: ErrorCode,
        message: String,
        retry_after_secs: Option<u64>,
    },
    /// 502: an upstream (homeserver, bridge, AI) answered with an error.
    #[error("{message}")]
    BadGateway { code: ErrorCode, message: String },
    /// 503: an upstream is unreachable or not configured, or the server is saturated
    /// (`busy`, with `Retry-After`: the request may be retried as it is).
    #[error("{message}")]
    Unavailable {
        code: ErrorCode,
        message: String,
        retry_after_secs: Option<u64>,
    },
    #[error("request body larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// 413 `payload_too_large` with its own explanation (an attachment over a size cap).
    #[error("{message}")]
    TooLarge { message: String },
    #[error("{message}")]
    NotImplemented { message: String },
    /// 408 `request_timeout`: the request body did not arrive within its deadline.
    #[error("{message}")]
    RequestTimeout { message: String },
    /// 500: the detail is logged, never sent to the client.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    /// 400 `invalid_request` with a message of the form `"<field>: <why>"`.
    pub fn invalid(field: &str, why: impl std::fmt::Display) -> Self {
        Self::BadRequest {
            code: ErrorCode::InvalidRequest,
            message: format!("{field}: {why}"),
        }
    }

    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::BadRequest {
            code,
            message: message.into(),
        }
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::Unauthorized {
            code: ErrorCode::Unauthorized,
            message: message.into(),
        }
    }

    pub fn forbidden(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Forbidden {
            code,
            message: message.into(),
        }
    }

    pub fn not_found(what: &str) -> Self {
        Self::NotFound {
            code: ErrorCode::NotFound,
            message: format!("{what} not found"),
        }
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::Internal(detail.to_string())
    }

    /// 429 `rate_limited` with `Retry-After`.
    pub fn rate_limited(message: impl Into<String>, retry_after_secs: u64) -> Self {
        Self::TooManyRequests {
            code: ErrorCode::RateLimited,
            message: message.into(),
            retry_after_secs: Some(retry_after_secs),
        }
    }

    /// 503 `busy`, retry after a second.
    pub fn busy(message: impl Into<String>) -> Self {
        Self::Unavailable {
            code: ErrorCode::Busy,
            message: message.into(),
            retry_after_secs: Some(1),
        }
    }

    /// 503 without `Retry-After`: an upstream is unreachable or not configured.
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Unavailable {
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// The code sent in the `error` field.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::BadRequest { code, .. }
            | Self::Unauthorized { code, .. }
            | Self::Forbidden { code, .. }
            | Self::NotFound { code, .. }
            | Self::Conflict { code, .. }
            | Self::TooManyRequests { code, .. }
            | Self::BadGateway { code, .. }
            | Self::Unavailable { code, .. } => *code,
            Self::PayloadTooLarge { .. } | Self::TooLarge { .. } => ErrorCode::PayloadTooLarge,
            Self::NotImplemented { .. } => ErrorCode::NotImplemented,
            Self::RequestTimeout { .. } => ErrorCode::RequestTimeout,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// The code as clients see it.
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// Seconds for `Retry-After`, when the condition names them.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Self::TooManyRequests {
                retry_after_secs, ..
            }
            | Self::Unavailable {
                retry_after_secs, ..
            } => *retry_after_secs,
            _ => None,
        }
    }
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            // No connection came free within the pool's timeout: the server is saturated,
            // not broken, so the client is told to retry rather than shown a 500.
            StoreError::Pool(detail) => {
                tracing::warn!(%detail, "database pool exhausted");
                Self::busy("the server is busy; retry in a moment")
            }
            StoreError::Saturated => Self::busy("the server is busy; retry in a moment"),
            StoreError::Sqlite(e) => e.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> Self {
        // The write lock was still held by another connection after busy_timeout.
        if matches!(
            e.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        ) {
            tracing::warn!(error = %e, "database busy");
            return Self::busy("the server is busy; retry in a moment");
        }
        Self::Internal(format!("database error: {e}"))
    }
}

impl From<crate::crypto::CryptoError> for AppError {
    fn from(e: crate::crypto::CryptoError) -> Self {
        Self::Internal(format!("crypto error: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saturated_database_is_busy_not_an_internal_error() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        let e: AppError = StoreError::Sqlite(busy).into();
        assert_eq!(e.code(), "busy");
        assert_eq!(e.retry_after_secs(), Some(1));
        // A pool that gives no connection within its timeout.
        let pool = r2d2::Pool::builder()
            .max_size(1)
            .connection_timeout(std::time::Duration::from_millis(50))
            .build_unchecked(r2d2_sqlite::SqliteConnectionManager::memory());
        let _held = pool.get().unwrap();
        let e: AppError = StoreError::from(pool.get().unwrap_err()).into();
        assert_eq!(e.code(), "busy");
        // Anything else stays an internal error (logged, never shown).
        let other: AppError = StoreError::Join("boom".into()).into();
        assert_eq!(other.code(), "internal_error");
    }
}
