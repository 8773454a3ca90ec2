//! The homeserver's authenticated media API (`/_matrix/client/v1/media/*`, Matrix 1.11),
//! as the user: downloads and thumbnails of `mxc://` URIs, uploads, and the upload limit.
//! Bodies are streamed both ways; nothing is buffered whole.

use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use serde::Deserialize;

use super::{decode, http_error, unreachable, MatrixClient, MatrixError};
use crate::clients::segment::segment;

/// Longest wait for the next bytes of a media transfer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Size the homeserver is asked to scale thumbnails to (it picks the nearest it has).
const THUMBNAIL_WIDTH: &str = "800";
const THUMBNAIL_HEIGHT: &str = "600";

/// A `mxc://server/media_id` URI, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mxc {
    pub server: String,
    pub media_id: String,
}

impl Mxc {
    /// Parses an `mxc://` URI; `None` when it is not one (server names are host[:port],
    /// media ids `A-Z a-z 0-9 _ -`).
    pub fn parse(uri: &str) -> Option<Self> {
        let rest = uri.strip_prefix("mxc://")?;
        let (server, media_id) = rest.split_once('/')?;
        // `clients::segment`: a server name of `.` or `..` would be resolved away by
        // the URL parser (`mxc://../config` → `/_matrix/client/v1/media/config`).
        let server_ok = crate::clients::segment::check("url", server).is_ok()
            && server.len() <= 255
            && server.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']')
            });
        let id_ok = !media_id.is_empty()
            && media_id.len() <= 255
            && media_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
        (server_ok && id_ok).then(|| Self {
            server: server.to_owned(),
            media_id: media_id.to_owned(),
        })
    }

    pub fn uri(&self) -> String {
        format!("mxc://{}/{}", self.server, self.media_id)
    }
}

/// A download in progress: what the homeserver announced, and its body.
pub struct MediaStream {
    pub content_type: Option<String>,
    pub length: Option<u64>,
    pub response: reqwest::Response,
}

impl MediaStream {
    pub fn into_stream(self) -> impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static {
        self.response.bytes_stream()
    }
}

impl MatrixClient {
    fn media_url(&self, path: &str) -> String {
        format!("{}/_matrix/client/v1/media/{path}", self.base)
    }

    /// `GET /_matrix/client/v1/media/download/{server}/{mediaId}` (or `thumbnail/…`, scaled)
    /// as the holder of `token`; the response is returned before its body is read.
    pub async fn media_download(
        &self,
        token: &str,
        mxc: &Mxc,
        thumbnail: bool,
    ) -> Result<MediaStream, MatrixError> {
        let kind = if thumbnail { "thumbnail" } else { "download" };
        // `Mxc` is checked when parsed; the fields are public, so check again here.
        let path = format!(
            "{kind}/{}/{}",
            segment("url", &mxc.server)?,
            segment("url", &mxc.media_id)?
        );
        crate::clients::segment::check_path(&path)?;
        let url = self.media_url(&path);
        let query: &[(&str, &str)] = if thumbnail {
            &[
                ("width", THUMBNAIL_WIDTH),
                ("height", THUMBNAIL_HEIGHT),
                ("method", "scale"),
            ]
        } else {
            &[]
        };
        let url = reqwest::Url::parse_with_params(&url, query)
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let resp = self
            .media
            .get(url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        let status = resp.status();
        if !status.is_success() {
            let bytes = resp.bytes().await.map_err(unreachable)?;
            return Err(http_error(status.as_u16(), &bytes));
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Ok(MediaStream {
            content_type,
            length: resp.content_length(),
            response: resp,
        })
    }

    /// `POST /_matrix/media/v3/upload` as the holder of `token`, streaming `body` of
    /// `length` bytes; returns the new `mxc://` URI.
    pub async fn media_upload(
        &self,
        token: &str,
        content_type: &str,
        filename: &str,
        length: Option<u64>,
        body: reqwest::Body,
    ) -> Result<String, MatrixError> {
        #[derive(Deserialize)]
        struct Uploaded {
            content_uri: String,
        }
        let url = format!("{}/_matrix/media/v3/upload", self.base);
        let url = reqwest::Url::parse_with_params(&url, [("filename", filename)])
            .map_err(|e| MatrixError::Decode(e.to_string()))?;
        let mut req = self
            .media
            .post(url)
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, content_type);
        if let Some(n) = length {
            req = req.header(reqwest::header::CONTENT_LENGTH, n);
        }
        let resp = req.body(body).send().await.map_err(unreachable)?;
        let up: Uploaded = decode(resp).await?;
        Ok(up.content_uri)
    }

    /// `GET /_matrix/client/v1/media/config`: the homeserver's `m.upload.size` (bytes), if
    /// it announces one.
    pub async fn media_upload_limit(&self, token: &str) -> Result<Option<u64>, MatrixError> {
        let resp = self
            .api
            .get(self.media_url("config"))
            .bearer_auth(token)
            .send()
            .await
            .map_err(unreachable)?;
        let v: serde_json::Value = decode(resp).await?;
        Ok(v["m.upload.size"].as_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mxc_uris_are_checked() {
        let m = Mxc::parse("mxc://example.org:8448/AbC_-1").unwrap();
        assert_eq!(
            (m.server.as_str(), m.media_id.as_str()),
            ("example.org:8448", "AbC_-1")
        );
        assert_eq!(m.uri(), "mxc://example.org:8448/AbC_-1");
        for bad in [
            "https://x/y",
            "mxc://x",
            "mxc:///id",
            "mxc://x/",
            "mxc://x/../etc",
            "mxc://../config",
            "mxc://./config",
            "mxc://x/a/b",
            "mxc://x?y/a",
        ] {
            assert!(Mxc::parse(bad).is_none(), "{bad}");
        }
    }
}
