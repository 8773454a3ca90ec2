//! `[media]`: attachments passed between clients and the homeserver (docs/design.md,
//! rich messages). Switchboard streams them and stores no bytes.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MediaConfig {
    /// Largest attachment `GET /api/rooms/{roomId}/media/{eventId}` serves, in MiB.
    pub max_download_mb: u32,
    /// Largest file `POST /api/rooms/{roomId}/media` accepts, in MiB (never more than the
    /// homeserver's own `m.upload.size`).
    pub max_upload_mb: u32,
}

impl Default for MediaConfig {
    fn default() -> Self {
        Self {
            max_download_mb: 100,
            max_upload_mb: 50,
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
}
