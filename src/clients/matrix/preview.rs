//! `GET /_matrix/client/v1/media/preview_url` (Matrix 1.11, authenticated media): the
//! homeserver fetches a web page and answers its OpenGraph data, so the user's browser never
//! contacts the linked site. An image of the page comes back as an `mxc://` URI the
//! homeserver already stored.

use futures_util::StreamExt;

use super::{http_error, unreachable, MatrixClient, MatrixError};

/// Largest answer read: OpenGraph data is a few hundred bytes; a homeserver answering
/// more is not trusted with the memory.
const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// What the homeserver says about a page (the `og:*` keys it found; any may be absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlPreview {
    pub title: Option<String>,
    pub description: Option<String>,
    /// `og:image`, an `mxc://` URI on the homeserver.
    pub image: Option<String>,
    pub image_type: Option<String>,
}

impl UrlPreview {
    fn from_json(v: &serde_json::Value) -> Self {
        let text = |k: &str| {
            v[k].as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Self {
            title: text("og:title"),
            description: text("og:description"),
            image: text("og:image").filter(|s| s.starts_with("mxc://")),
            image_type: text("og:image:type"),
        }
    }
}

impl MatrixClient {
    /// The homeserver's preview of `url`, fetched as the holder of `token`.
    pub async fn preview_url(&self, token: &str, url: &str) -> Result<UrlPreview, MatrixError> {
        let endpoint = format!("{}/_matrix/client/v1/media/preview_url", self.base);
        let endpoint = reqwest::Url::parse_with_params(&endpoint, [("url", url)])
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let resp = self
            .api
            .get(endpoint)
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        let status = resp.status();
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(unreachable)?;
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(MatrixError::Decode(format!(
                    "preview answer larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(http_error(status.as_u16(), &body));
        }
        let v: serde_json::Value =
            serde_json::from_slice(&body).map_err(|e| MatrixError::Decode(e.to_string()))?;
        Ok(UrlPreview::from_json(&v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_og_keys_and_mxc_images_are_kept() {
        let p = UrlPreview::from_json(&serde_json::json!({
            "og:title": " Garden ", "og:description": "", "og:image": "https://x/y.png",
            "matrix:image:size": 3
        }));
        assert_eq!(p.title.as_deref(), Some("Garden"));
        assert_eq!((p.description, p.image), (None, None));
        let p = UrlPreview::from_json(&serde_json::json!({"og:image": "mxc://hs/abc"}));
        assert_eq!(p.image.as_deref(), Some("mxc://hs/abc"));
    }
}
