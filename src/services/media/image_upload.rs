//! An image for the homeserver that is not a message: a room's avatar. Spooled like an
//! attachment (so the homeserver gets its length; the spool is ciphertext under a key held
//! in memory) and uploaded in the clear, since room state is not end-to-end encrypted.

use std::io;

use bytes::Bytes;
use futures_util::Stream;

use super::spooled::{copy_info, send_spool, spool};
use super::upload::resolve_type;
use crate::clients::matrix::MatrixClient;
use crate::error::{AppError, AppResult};
use crate::services::Context;

/// Image types accepted: the raster formats every Matrix client and bridge shows (no SVG,
/// which is active content).
pub const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An uploaded image and what `m.room.avatar`'s `info` says about it.
#[derive(Debug, Clone)]
pub struct UploadedImage {
    pub mxc: String,
    pub mimetype: String,
    pub size: u64,
    pub width: Option<u32>,
    pub height: Option<u32>,
}

/// Uploads the image of `stream` (at most `max` bytes: 413 beyond; its bytes must be one
/// of [`IMAGE_TYPES`] and what `claimed` says: 400 naming `file` otherwise).
pub async fn upload_image<S>(
    state: &Context,
    matrix: &MatrixClient,
    token: &str,
    claimed: Option<&str>,
    stream: S,
    max: u64,
) -> AppResult<UploadedImage>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    let reservation = super::spool::Reservation::new(state);
    let (head, spooled) = spool(state, stream, max, reservation.clone()).await?;
    let mimetype = resolve_type(claimed, &head)?;
    if !IMAGE_TYPES.contains(&mimetype.as_str()) {
        return Err(AppError::invalid(
            "file",
            format!("must be a PNG, JPEG, GIF or WebP image (got {mimetype})"),
        ));
    }
    let dim = imagesize::blob_size(&head).ok();
    let size = spooled.length;
    let key = copy_info(&spooled.info)?;
    let mxc = send_spool(matrix, token, spooled, Some(key), &mimetype, "avatar").await?;
    drop(reservation);
    Ok(UploadedImage {
        mxc,
        mimetype,
        size,
        width: dim.map(|d| d.width as u32),
        height: dim.map(|d| d.height as u32),
    })
}
