//! Link previews: `GET /api/preview?url=` asks the homeserver's authenticated
//! `preview_url` (as the user), so the user's browser never contacts the linked site, and
//! `GET /api/preview/image?url=` serves the page's image from the homeserver's media store
//! the same way. Only `http`/`https` URLs of at most [`MAX_URL_CHARS`] characters, without
//! credentials in them; a per-user budget (`[rate_limit] previews_per_minute`); a user setting
//! turns previews off (`PUT /api/settings/previews`).
//!
//! Previews are kept in a bounded in-memory cache (`[media] preview_cache_mb`, an hour each),
//! shared by all users and keyed by the URL: what a public page says is the same for
//! everyone, and the homeserver fetches it as itself, not as the user. Nothing is stored
//! at rest.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::clients::matrix::media::Mxc;
use crate::clients::matrix::preview::UrlPreview;
use crate::clients::matrix::{MatrixClient, MatrixError};
use crate::clock::unix_now;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::messages::send::matrix_token;
use crate::services::upstream::homeserver_error;
use crate::services::users::load_row;
use crate::services::Context;
use crate::store::preview_settings;

use super::{capped, pipe, safe_content_type, too_large, Download};

/// Longest URL previewed, in characters (browsers and servers commonly stop near here).
pub const MAX_URL_CHARS: usize = 2048;
/// How long a preview is kept.
const PREVIEW_TTL: Duration = Duration::from_secs(3600);
/// Window of `[rate_limit] previews_per_minute`.
const PREVIEW_WINDOW: Duration = Duration::from_secs(60);
/// Largest preview image served.
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// A page's preview as the API answers it.
#[derive(Debug, Clone)]
pub struct LinkPreview {
    /// The URL as previewed (normalised: scheme and host in lower case).
    pub url: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Whether the page has an image (served by [`image`]).
    pub has_image: bool,
}

type Previews = moka::sync::Cache<String, Arc<UrlPreview>>;

/// The process-wide preview cache, sized by the first caller's configuration.
fn cache(capacity_bytes: u64) -> &'static Previews {
    static CACHE: OnceLock<Previews> = OnceLock::new();
    CACHE.get_or_init(|| {
        let cache: Previews = moka::sync::Cache::builder()
            .max_capacity(capacity_bytes)
            .weigher(|url: &String, p: &Arc<UrlPreview>| weight(url, p))
            .time_to_live(PREVIEW_TTL)
            .build();
        let sized = cache.clone();
        crate::metrics::global()
            .cache(crate::metrics::CacheName::Previews)
            .set_size(Box::new(move || {
                sized.run_pending_tasks();
                (sized.entry_count(), sized.weighted_size())
            }));
        cache
    })
}

/// Bytes an entry holds: its strings and a fixed overhead.
fn weight(url: &str, p: &UrlPreview) -> u32 {
    let text = [&p.title, &p.description, &p.image, &p.image_type]
        .iter()
        .map(|s| s.as_ref().map_or(0, String::len))
        .sum::<usize>();
    u32::try_from(url.len() + text + 160).unwrap_or(u32::MAX)
}

/// The URL, checked: at most [`MAX_URL_CHARS`], absolute, `http` or `https` (400
/// `unsupported_url_scheme` otherwise), with a host and without a user name or password.
pub fn check_url(raw: &str) -> AppResult<reqwest::Url> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(AppError::invalid("url", "is required"));
    }
    if raw.chars().count() > MAX_URL_CHARS {
        return Err(AppError::invalid(
            "url",
            format!("must be at most {MAX_URL_CHARS} characters"),
        ));
    }
    // The scheme is looked at before the rest parses: `javascript:alert(1)` is refused
    // for its scheme, not as a malformed URL.
    if let Some((scheme, _)) = raw.split_once(':') {
        let scheme = scheme.to_ascii_lowercase();
        let looks_like_scheme = !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b));
        if looks_like_scheme && scheme != "http" && scheme != "https" {
            return Err(AppError::bad_request(
                ErrorCode::UnsupportedUrlScheme,
                format!("url: only http and https links are previewed, not {scheme}:"),
            ));
        }
    }
    let url = reqwest::Url::parse(raw)
        .map_err(|e| AppError::invalid("url", format!("is not an absolute URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(AppError::bad_request(
            ErrorCode::UnsupportedUrlScheme,
            "url: only http and https links are previewed",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(AppError::invalid("url", "has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(AppError::invalid(
            "url",
            "must not carry a user name or password",
        ));
    }
    Ok(url)
}

/// Why a preview is refused while the user has them off.
const PREVIEWS_OFF: &str = "link previews are off in this account's settings \
     (PUT /api/settings/previews {\"enabled\": true})";

/// The user's Matrix token, once their previews are known to be on (403
/// `previews_disabled` otherwise).
async fn acting(state: &Context, user_id: &str) -> AppResult<(MatrixClient, String)> {
    let matrix = state.matrix.clone().ok_or_else(|| {
        AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "no Matrix homeserver is configured on this server",
        )
    })?;
    let (uid, st) = (user_id.to_owned(), state.clone());
    let token = state
        .db(move |c| {
            let user = load_row(c, &uid)?;
            if !preview_settings::enabled(c, &uid)? {
                return Err(AppError::forbidden(
                    ErrorCode::PreviewsDisabled,
                    PREVIEWS_OFF,
                ));
            }
            matrix_token(&st, &user)
        })
        .await?;
    Ok((matrix, token))
}

/// Counts one preview fetch against the user's budget (429 beyond it).
async fn charge(state: &Context, user_id: &str) -> AppResult<()> {
    let limit = state.config.rate_limit.previews_per_minute;
    let key = format!("previews:{user_id}");
    match state.limiter.hit(&key, limit, PREVIEW_WINDOW).await {
        Ok(_) => Ok(()),
        Err(quota) => Err(AppError::rate_limited(
            format!(
                "at most {limit} link previews per minute; retry in {} s",
                quota.retry_after()
            ),
            quota.retry_after(),
        )),
    }
}

/// The homeserver's refusal as the API reports it: about the page (it could not be
/// fetched, is not allowed, is not a page) is 404 `no_preview`; a homeserver without
/// previews is 503; its own failures 502/503 as elsewhere.
fn preview_error(e: MatrixError) -> AppError {
    match &e {
        MatrixError::Http { errcode, .. } if errcode == "M_UNRECOGNIZED" => AppError::unavailable(
            ErrorCode::HomeserverUnavailable,
            "the Matrix homeserver does not offer link previews (url_preview_enabled)",
        ),
        MatrixError::Http { errcode, .. } if errcode == "M_LIMIT_EXCEEDED" => {
            AppError::rate_limited("the homeserver limits link previews; retry shortly", 5)
        }
        MatrixError::Http {
            status: 400 | 403 | 404 | 500 | 502 | 504,
            message,
            ..
        } => AppError::NotFound {
            code: ErrorCode::NoPreview,
            message: if message.is_empty() {
                "the homeserver could not preview this URL".to_owned()
            } else {
                format!("the homeserver could not preview this URL: {message}")
            },
        },
        _ => homeserver_error(e),
    }
}

/// The cached preview of `url`, or the homeserver's (counted against the budget when
/// `charge_always` is false and it is not cached).
async fn lookup(
    state: &Context,
    user_id: &str,
    url: &reqwest::Url,
    charge_always: bool,
) -> AppResult<(Arc<UrlPreview>, String)> {
    let (matrix, token) = acting(state, user_id).await?;
    if charge_always {
        charge(state, user_id).await?;
    }
    let previews = cache(state.config.media.preview_cache_bytes());
    let key = url.as_str().to_owned();
    let metric = crate::metrics::global().cache(crate::metrics::CacheName::Previews);
    if let Some(hit) = previews.get(&key) {
        metric.record(true);
        return Ok((hit, token));
    }
    metric.record(false);
    if !charge_always {
        charge(state, user_id).await?;
    }
    let fetched = matrix
        .preview_url(&token, url.as_str())
        .await
        .map_err(preview_error)?;
    if fetched.title.is_none() && fetched.description.is_none() && fetched.image.is_none() {
        return Err(AppError::NotFound {
            code: ErrorCode::NoPreview,
            message: "the page has no title, description or image to preview".into(),
        });
    }
    let fetched = Arc::new(fetched);
    previews.insert(key, fetched.clone());
    Ok((fetched, token))
}

/// `GET /api/preview?url=`.
pub async fn preview(state: &Context, user_id: &str, raw_url: &str) -> AppResult<LinkPreview> {
    let url = check_url(raw_url)?;
    let (p, _) = lookup(state, user_id, &url, true).await?;
    Ok(LinkPreview {
        url: url.to_string(),
        title: p.title.clone(),
        description: p.description.clone(),
        has_image: p.image.as_deref().and_then(Mxc::parse).is_some(),
    })
}

/// `GET /api/preview/image?url=`: the image of the page's preview, through the
/// homeserver's authenticated media API as the user. Only an image type is served (404
/// `no_preview` for a page without an image, or an image of another type such as SVG).
pub async fn image(state: &Context, user_id: &str, raw_url: &str) -> AppResult<Download> {
    let url = check_url(raw_url)?;
    let (p, token) = lookup(state, user_id, &url, false).await?;
    let no_image = || AppError::NotFound {
        code: ErrorCode::NoPreview,
        message: "the page's preview has no image".into(),
    };
    let mxc = p
        .image
        .as_deref()
        .and_then(Mxc::parse)
        .ok_or_else(no_image)?;
    let matrix = state.matrix.clone().ok_or_else(no_image)?;
    let stream = matrix
        .media_download(&token, &mxc, false)
        .await
        .map_err(|e| match e {
            MatrixError::Http { status: 404, .. } => no_image(),
            other => homeserver_error(other),
        })?;
    let declared = p.image_type.clone().or(stream.content_type.clone());
    let content_type = safe_content_type(declared.as_deref());
    if !content_type.starts_with("image/") {
        return Err(no_image());
    }
    if stream.length.is_some_and(|n| n > MAX_IMAGE_BYTES) {
        return Err(too_large(MAX_IMAGE_BYTES, "the preview's image"));
    }
    let length = stream.length;
    let body: pipe::Output = Box::pin(capped(stream.into_stream(), MAX_IMAGE_BYTES));
    Ok(Download {
        content_type,
        filename: "preview".into(),
        length,
        body,
    })
}

/// Whether link previews are on for the user.
pub async fn enabled(state: &Context, user_id: &str) -> AppResult<bool> {
    let uid = user_id.to_owned();
    Ok(state
        .store
        .query(move |c| preview_settings::enabled(c, &uid))
        .await?)
}

/// `PUT /api/settings/previews`: stores the setting; answers it.
pub async fn set_enabled(state: &Context, user_id: &str, on: bool) -> AppResult<bool> {
    let uid = user_id.to_owned();
    state
        .db(move |c| {
            preview_settings::set_enabled(c, &uid, on, unix_now() as i64)?;
            Ok(on)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_urls_of_bounded_length_are_previewed() {
        assert_eq!(
            check_url(" HTTPS://Example.org/a?b=1 ").unwrap().as_str(),
            "https://example.org/a?b=1"
        );
        assert!(check_url("http://127.0.0.1:8080/").is_ok());
        for bad in [
            "ftp://example.org/x",
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,hi",
            "mxc://hs/abc",
        ] {
            let e = check_url(bad).unwrap_err();
            assert_eq!(e.error_code(), ErrorCode::UnsupportedUrlScheme, "{bad}");
        }
        for bad in [
            "",
            "example.org",
            "/relative",
            "https://u:p@example.org/",
            "http://",
        ] {
            let e = check_url(bad).unwrap_err();
            assert_eq!(e.error_code(), ErrorCode::InvalidRequest, "{bad}");
            assert!(e.to_string().starts_with("url"), "{bad}: {e}");
        }
        let long = format!("https://example.org/{}", "a".repeat(MAX_URL_CHARS));
        assert_eq!(
            check_url(&long).unwrap_err().error_code(),
            ErrorCode::InvalidRequest
        );
    }

    #[test]
    fn entries_weigh_their_text() {
        let p = UrlPreview {
            title: Some("t".repeat(100)),
            ..UrlPreview::default()
        };
        assert_eq!(weight("https://x/", &p), 10 + 100 + 160);
    }
}
