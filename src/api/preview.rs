//! Link previews: `GET /api/preview?url=`, the page's image `GET /api/preview/image?url=`
//! (both open to personal tokens from allowlist version 6) and the user's setting
//! `GET`/`PUT /api/settings/previews` (native sessions only).

use std::io;

use futures_util::StreamExt;
use poem::web::Data;
use poem::Body;
use poem_openapi::param::Query;
use poem_openapi::payload::{Binary, Json, Response};
use poem_openapi::{Object, OpenApi};

use super::security::{NativeAuth, TokenAuth};
use super::ApiTags;
use crate::clients::matrix::encode;
use crate::error::AppError;
use crate::services::media::preview;
use crate::state::AppState;

/// What a linked page shows of itself, as the homeserver read it.
#[derive(Debug, Object)]
#[oai(rename_all = "camelCase")]
pub struct LinkPreviewObject {
    /// The URL previewed, normalised (scheme and host in lower case).
    pub url: String,
    /// The page's title (`og:title`, else its `<title>`); null when it has none.
    pub title: Option<String>,
    /// The page's description (`og:description`, else its meta description); null when
    /// it has none.
    pub description: Option<String>,
    /// The page's image through Switchboard (`/api/preview/image?url=…`, with the same
    /// authorization as this call); absent when the page has none. Never the linked
    /// site's own address.
    #[oai(skip_serializing_if_is_none)]
    pub image_url: Option<String>,
}

/// Whether the user sees link previews.
#[derive(Debug, Object)]
pub struct PreviewSettingsObject {
    /// true (the default): `GET /api/preview` answers and the web app shows preview
    /// cards; false: `GET /api/preview` answers 403 `previews_disabled`.
    pub enabled: bool,
}

pub struct PreviewApi;

#[OpenApi(prefix_path = "/api", tag = "ApiTags::Messages")]
impl PreviewApi {
    /// Preview a link
    ///
    /// The title, description and image of the web page at `url`, fetched by the Matrix
    /// homeserver (its authenticated `GET /_matrix/client/v1/media/preview_url`, as the
    /// caller), so the caller's device never contacts the linked site; the image is served
    /// through `imageUrl` on this server. Previews are kept in memory for up to an hour,
    /// shared by all users (what a page says publicly is the same for everyone); nothing
    /// of them is stored on disk.
    ///
    /// `url`: absolute `http` or `https`, at most 2048 characters, without a user name or
    /// password. 400 `unsupported_url_scheme` for another scheme (`ftp:`, `javascript:`,
    /// `file:`, `data:` …); 400 `invalid_request` naming `url` when it is missing, too long
    /// or malformed. 403 `previews_disabled` when the user turned previews off (`PUT
    /// /api/settings/previews`). 404 `no_preview` when the homeserver could not preview
    /// the page (unreachable, refused by its address rules, not a page, or nothing to
    /// show). 429 `rate_limited` past `[rate_limit] previews_per_minute` calls of the user
    /// per minute (every token and session together). 503 `homeserver_unavailable` when
    /// the homeserver does not offer previews or cannot be reached.
    #[oai(path = "/preview", method = "get", operation_id = "preview_get")]
    async fn preview(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// The link to preview (URL-encoded).
        url: Query<Option<String>>,
    ) -> Result<Json<LinkPreviewObject>, AppError> {
        let raw = url.0.unwrap_or_default();
        let p = preview::preview(&state, auth.user_id(), &raw).await?;
        let image_url = p
            .has_image
            .then(|| format!("/api/preview/image?url={}", encode(&p.url)));
        Ok(Json(LinkPreviewObject {
            url: p.url,
            title: p.title,
            description: p.description,
            image_url,
        }))
    }

    /// A link preview's image
    ///
    /// The image of the preview of `url` (the `imageUrl` of `GET /api/preview`), from the
    /// homeserver's media store through its authenticated media API as the caller,
    /// streamed. Only image types are served (an SVG or any other type is 404
    /// `no_preview`), at most 10 MiB (413), with `X-Content-Type-Options: nosniff`. A preview
    /// not in memory any more is fetched again (counted against `previews_per_minute`).
    /// Errors as `GET /api/preview`; 404 `no_preview` also when the page has no image.
    #[oai(
        path = "/preview/image",
        method = "get",
        operation_id = "preview_image"
    )]
    async fn image(
        &self,
        state: Data<&AppState>,
        auth: TokenAuth,
        /// The previewed link (URL-encoded).
        url: Query<Option<String>>,
    ) -> Result<Response<Binary<Body>>, AppError> {
        let raw = url.0.unwrap_or_default();
        let d = preview::image(&state, auth.user_id(), &raw).await?;
        let body = Body::from_bytes_stream(d.body.map(|c| c.map_err(io::Error::other)));
        let mut resp = Response::new(Binary(body))
            .header("Content-Type", d.content_type)
            .header("X-Content-Type-Options", "nosniff")
            .header("Content-Disposition", "inline; filename=\"preview\"")
            .header("Cache-Control", "private, max-age=3600");
        if let Some(n) = d.length {
            resp = resp.header("Content-Length", n);
        }
        Ok(resp)
    }

    /// Link preview setting
    ///
    /// Whether link previews are on (`enabled`, true by default). Native sessions only.
    #[oai(
        path = "/settings/previews",
        method = "get",
        operation_id = "settings_previews_get",
        tag = "ApiTags::Auth"
    )]
    async fn get_settings(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
    ) -> Result<Json<PreviewSettingsObject>, AppError> {
        let enabled = preview::enabled(&state, auth.0.user_id()).await?;
        Ok(Json(PreviewSettingsObject { enabled }))
    }

    /// Turn link previews on or off
    ///
    /// `{"enabled": false}`: `GET /api/preview` and its images answer 403
    /// `previews_disabled` for every session and token of the user, and the web app shows
    /// no preview cards (so no link the user receives makes the homeserver fetch a page).
    /// Stored per user; answers the setting now. 400 naming `enabled` when it is missing or
    /// not a boolean. Native sessions only.
    #[oai(
        path = "/settings/previews",
        method = "put",
        operation_id = "settings_previews_put",
        tag = "ApiTags::Auth"
    )]
    async fn put_settings(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<PreviewSettingsObject>,
    ) -> Result<Json<PreviewSettingsObject>, AppError> {
        let enabled = preview::set_enabled(&state, auth.0.user_id(), body.0.enabled).await?;
        Ok(Json(PreviewSettingsObject { enabled }))
    }
}
