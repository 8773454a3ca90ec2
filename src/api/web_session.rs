//! The web session (docs/security.md): the browser app keeps its refresh token where page
//! scripts cannot read it.
//!
//! A request that carries `X-Switchboard-Client: web` on `POST /api/auth/verify` or
//! `POST /api/accounts/{id}/switch` gets the refresh token in the cookie [`COOKIE`]
//! (`HttpOnly; Secure; SameSite=Strict; Path=/api/auth`) and `refreshToken: ""` in the
//! body. `POST /api/auth/refresh` with the header reads that cookie. Logout clears it.
//!
//! The cookie is always `Secure`, whatever the configuration: the server cannot tell from
//! its own settings whether a TLS proxy is in front of it, and browsers accept `Secure`
//! cookies from `http://localhost` and `http://127.0.0.1` (which the web app's WebCrypto
//! needs as a secure context anyway), so only a plain-http public address loses the web
//! session, and there it must.
//!
//! Web sessions get no Matrix access token (the web app never uses one, and a page script
//! should not hold a token to the user's Matrix account): see `services::auth::open_session`.
//!
//! CSRF: the cookie is only ever read on a request that carries the custom header, which a
//! cross-site form cannot send and a cross-site script cannot either (no CORS is allowed,
//! so the browser refuses the preflight); the cookie is `SameSite=Strict`; and a request
//! with the header whose `Origin` is another origin, or whose `Sec-Fetch-Site` is not
//! `same-origin`, is refused with 403 `cross_site_request`.

use std::time::Duration;

use cookie::{Cookie, SameSite};
use poem::http::{header, Uri};
use poem::Request;

use crate::error::{AppError, ErrorCode};
use crate::state::AppState;

/// The header that asks for the web session; its value is [`WEB`].
pub const CLIENT_HEADER: &str = "X-Switchboard-Client";
pub const WEB: &str = "web";
/// The cookie that holds the web session's refresh token.
pub const COOKIE: &str = "sb_refresh";
/// The only path the cookie is sent to.
pub const COOKIE_PATH: &str = "/api/auth";

/// Whether the request asked for the web session (`X-Switchboard-Client: web`). Such a
/// request must come from the server's own origin (403 `cross_site_request`).
pub fn requested(req: &Request, client: Option<&str>) -> Result<bool, AppError> {
    if !client.is_some_and(|c| c.trim().eq_ignore_ascii_case(WEB)) {
        return Ok(false);
    }
    same_origin(req)?;
    Ok(true)
}

/// Refuses a request another site made: `Sec-Fetch-Site` other than `same-origin` (or
/// `none`, a user's own navigation), or an `Origin` that is not this server's (the
/// request's `Host`, or `[server] base_url`).
fn same_origin(req: &Request) -> Result<(), AppError> {
    let refuse = |why: &str| {
        AppError::forbidden(
            ErrorCode::CrossSiteRequest,
            format!("web-session requests must come from this server's own pages ({why})"),
        )
    };
    let text = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        if !matches!(site.trim(), "same-origin" | "none") {
            return Err(refuse(&format!("Sec-Fetch-Site: {site}")));
        }
    }
    let Some(origin) = text(header::ORIGIN) else {
        return Ok(());
    };
    let state = req.data::<AppState>();
    let base = state
        .and_then(|s| s.config.server.base_url.as_deref())
        .and_then(|b| b.parse::<Uri>().ok());
    let origin_uri = origin.parse::<Uri>().ok();
    let authority = origin_uri
        .as_ref()
        .and_then(|u| u.authority())
        .map(|a| a.as_str());
    let host = text(header::HOST);
    let same_host = authority.is_some_and(|a| host.is_some_and(|h| a.eq_ignore_ascii_case(h)));
    let same_base = base.is_some_and(|b| {
        origin_uri.as_ref().is_some_and(|o| {
            o.scheme() == b.scheme()
                && o.authority().map(|a| a.as_str().to_ascii_lowercase())
                    == b.authority().map(|a| a.as_str().to_ascii_lowercase())
        })
    });
    if same_host || same_base {
        Ok(())
    } else {
        Err(refuse(&format!("Origin: {origin}")))
    }
}

/// The refresh token of the request's [`COOKIE`] (the first one, as browsers send the
/// most specific first).
pub fn refresh_cookie(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE)
        .map(|c| c.value().to_owned())
        .filter(|v| !v.is_empty())
}

fn cookie(value: &str, max_age: Duration) -> String {
    let seconds = i64::try_from(max_age.as_secs()).unwrap_or(i64::MAX);
    Cookie::build((COOKIE, value))
        .http_only(true)
        .secure(true)
        .same_site(SameSite::Strict)
        .path(COOKIE_PATH)
        .max_age(cookie::time::Duration::seconds(seconds))
        .build()
        .to_string()
}

/// `Set-Cookie` value holding `refresh_token` for the refresh token's lifetime.
pub fn set_cookie(state: &AppState, refresh_token: &str) -> String {
    cookie(refresh_token, state.config.auth.refresh_token_ttl.0)
}

/// `Set-Cookie` value that removes the cookie.
pub fn clear_cookie() -> String {
    cookie("", Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(headers: &[(&str, &str)]) -> Request {
        let mut b = Request::builder();
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.finish()
    }

    #[test]
    fn only_the_web_value_asks_for_the_cookie() {
        assert!(!requested(&req(&[]), None).unwrap());
        assert!(!requested(&req(&[]), Some("ios")).unwrap());
        assert!(requested(&req(&[]), Some("web")).unwrap());
        assert!(requested(&req(&[]), Some(" Web ")).unwrap());
    }

    #[test]
    fn other_sites_are_refused() {
        let same = [
            vec![
                ("host", "sb.example:8080"),
                ("origin", "http://sb.example:8080"),
            ],
            vec![("host", "sb.example"), ("sec-fetch-site", "same-origin")],
            vec![("sec-fetch-site", "none")],
        ];
        for headers in same {
            assert!(
                requested(&req(&headers), Some("web")).is_ok(),
                "{headers:?}"
            );
        }
        let cross = [
            vec![("host", "sb.example"), ("origin", "https://evil.example")],
            vec![("host", "sb.example"), ("origin", "null")],
            vec![("host", "sb.example"), ("sec-fetch-site", "cross-site")],
            vec![("host", "sb.example"), ("sec-fetch-site", "same-site")],
        ];
        for headers in cross {
            let err = requested(&req(&headers), Some("web")).unwrap_err();
            assert_eq!(err.error_code(), ErrorCode::CrossSiteRequest, "{headers:?}");
        }
    }

    #[test]
    fn the_cookie_is_read_by_name() {
        let r = req(&[("cookie", "a=1; sb_refresh=abc123; b=2")]);
        assert_eq!(refresh_cookie(&r).as_deref(), Some("abc123"));
        assert_eq!(refresh_cookie(&req(&[("cookie", "sb_refresh=")])), None);
        assert_eq!(refresh_cookie(&req(&[])), None);
    }
}
