//! Typed test clients, one per API tag of the served OpenAPI document, so a test says what
//! it does (`alice.rooms().get(&id).await`) instead of spelling out paths, bodies and the
//! status checks of each request.
//!
//! Every call answers an [`ApiResult`]: `Ok` with the documented success body (or the
//! object inside its envelope, e.g. the `room` of `{"room": …}`) when the status is the
//! route's documented success status, `Err(ApiError)` with the status and the error code
//! otherwise. A success with another 2xx status than the documented one panics: the tests
//! pin the status as well as the body. [`Refusal::refused`] asserts an expected error the
//! way `expect_error` does (status, code, a message, the rate-limit headers).

use reqwest::Method;
use serde_json::Value;

use super::TestApp;

pub mod accounts;
pub mod admin;
pub mod bridges;
pub mod devices;
pub mod keys;
pub mod linked;
pub mod messages;
pub mod reminders;
pub mod rooms;
pub mod scheduled;
pub mod session;
pub mod tokens;

/// A caller of the API: the app and the bearer token it sends (a native access token or a
/// personal `csk_…` token; none for the public routes).
#[derive(Clone, Copy)]
pub struct Api<'a> {
    pub app: &'a TestApp,
    pub token: Option<&'a str>,
}

impl TestApp {
    /// Calls as the holder of `token`.
    pub fn api<'a>(&'a self, token: &'a str) -> Api<'a> {
        Api {
            app: self,
            token: Some(token),
        }
    }

    /// Calls as a signed-in user, with its native access token.
    pub fn user<'a>(&'a self, session: &'a super::Session) -> Api<'a> {
        self.api(&session.access_token)
    }

    /// Calls without a bearer token.
    pub fn anonymous(&self) -> Api<'_> {
        Api {
            app: self,
            token: None,
        }
    }
}

/// A refusal: the status and the `error` code of the JSON error body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: u16,
    pub code: String,
    /// The whole body (for `message` and the fields some errors add).
    pub body: Value,
    /// Whether the `x-ratelimit-*` headers were present and numeric.
    pub rate_headers: bool,
    pub headers: reqwest::header::HeaderMap,
}

impl ApiError {
    /// `(status, code)`, for `assert_eq!`.
    pub fn pair(&self) -> (u16, &str) {
        (self.status, self.code.as_str())
    }
}

/// The error is boxed: it carries the headers and the body, and results stay small.
pub type ApiResult<T = Value> = Result<T, Box<ApiError>>;

/// Asserting an expected refusal.
pub trait Refusal {
    /// Asserts the call was refused with `status` and `code`, with a non-empty message and
    /// the rate-limit headers; returns the error body.
    fn refused(self, status: u16, code: &str) -> Value;
}

impl<T: std::fmt::Debug> Refusal for ApiResult<T> {
    #[track_caller]
    fn refused(self, status: u16, code: &str) -> Value {
        let err = match self {
            Ok(v) => panic!("expected {status} {code}, got a success: {v:?}"),
            Err(e) => e,
        };
        assert_eq!(err.pair(), (status, code), "body: {}", err.body);
        assert!(
            err.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "message; body: {}",
            err.body
        );
        assert!(err.rate_headers, "rate-limit headers on {status} {code}");
        err.body
    }
}

/// One answer, read whole.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Reply {
    /// Reads a response whole.
    pub async fn read(resp: reqwest::Response) -> Self {
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        Self {
            status,
            headers,
            text,
        }
    }

    /// The body as JSON (panics with the text when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text))
    }

    /// `Ok(body)` on `want`, `Err` on an error status; panics on another success status.
    #[track_caller]
    pub fn expect(self, want: u16) -> ApiResult {
        if self.status == want {
            return Ok(if self.text.is_empty() {
                Value::Null
            } else {
                self.json()
            });
        }
        assert!(
            self.status >= 400,
            "expected {want}, got {}: {}",
            self.status,
            self.text
        );
        let body = self.json();
        let rate_headers = [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
        ]
        .iter()
        .all(|name| {
            self.headers
                .get(*name)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.parse::<u64>().is_ok())
        });
        Err(Box::new(ApiError {
            status: self.status,
            code: body["error"].as_str().unwrap_or_default().to_owned(),
            body,
            rate_headers,
            headers: self.headers,
        }))
    }
}

/// The field `name` of an envelope (`{"room": …}` → the room).
pub fn field(body: Value, name: &str) -> Value {
    match body {
        Value::Object(mut map) => map
            .remove(name)
            .unwrap_or_else(|| panic!("no `{name}` in the body")),
        other => panic!("no `{name}` in {other}"),
    }
}

/// One path segment, percent-encoded (room ids have `!` and `:`).
pub fn seg(s: &str) -> String {
    switchboard::clients::matrix::encode(s)
}

impl<'a> Api<'a> {
    /// Sends one request and reads the answer whole.
    pub async fn call(self, method: Method, path: &str, body: Option<Value>) -> Reply {
        Reply::read(self.app.send(method, path, self.token, body).await).await
    }

    pub async fn get(self, path: &str) -> Reply {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(self, path: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(body)).await
    }

    pub async fn put(self, path: &str, body: Value) -> Reply {
        self.call(Method::PUT, path, Some(body)).await
    }

    pub async fn patch(self, path: &str, body: Value) -> Reply {
        self.call(Method::PATCH, path, Some(body)).await
    }

    pub async fn delete(self, path: &str) -> Reply {
        self.call(Method::DELETE, path, None).await
    }
}
