//! `[media]`: attachments passed between clients and the homeserver (docs/design.md,
//! rich messages). Switchboard streams them and stores no bytes.

use serde::{Deserialize, Serialize};

use super::HumanDuration;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// Largest attachment `GET /api/rooms/{roomId}/media/{eventId}` serves, in MiB.
    pub max_download_mb: u32,
    /// Largest file `POST /api/rooms/{roomId}/media` accepts, in MiB (never more than the
    /// homeserver's own `m.upload.size`).
    pub max_upload_mb: u32,
    /// Uploads one user may have in progress at once (429 `too_many_uploads` past it).
    pub max_concurrent_uploads: u32,
    /// Deadline for the whole upload body (408 `request_timeout` past it).
    pub upload_timeout: HumanDuration,
    /// Spool space in MiB for uploads and encrypted downloads together (503 `spool_full`
    /// past it).
    pub max_spool_mb: u32,
    /// Memory, in MiB, for the link previews kept (a bounded in-memory cache shared by all
    /// users; each preview is kept at most an hour).
    pub preview_cache_mb: u32,
}

impl Default for MediaConfig {
    fn default() -> Self {
        Self {
            max_download_mb: 100,
            max_upload_mb: 50,
            max_concurrent_uploads: 4,
            upload_timeout: HumanDuration::from_secs(600),
            max_spool_mb: 2048,
            preview_cache_mb: 8,
        }
    }
}

impl MediaConfig {
    pub fn max_download_bytes(&self) -> u64 {
        u64::from(self.max_download_mb) * 1024 * 1024
    }

    pub fn max_upload_bytes(&self) -> u64 {
        u64::from(self.max_upload_mb) * 1024 * 1024
    }

    pub fn preview_cache_bytes(&self) -> u64 {
        u64::from(self.preview_cache_mb) * 1024 * 1024
    }

    pub fn max_spool_bytes(&self) -> u64 {
        u64::from(self.max_spool_mb) * 1024 * 1024
    }
}
