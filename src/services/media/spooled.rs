//! The spooled file of an upload: the bytes encrypted while they arrive (AES-256-CTR
//! under a fresh key held only in memory, `matrix-sdk-crypto`'s attachment encryptor)
//! into an unlinked file of the data directory, its length known before it is sent on,
//! as it is or decrypted on the way out.

use std::io::{self, Read, Seek, Write};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use matrix_sdk_crypto::{AttachmentDecryptor, AttachmentEncryptor, MediaEncryptionInfo};

use super::pipe;
use crate::clients::matrix::MatrixClient;
use crate::error::{AppError, AppResult};
use crate::services::upstream::homeserver_error;
use crate::services::Context;

/// Bytes looked at for the type and image dimensions.
const SNIFF_BYTES: usize = 64 * 1024;

/// The spool: the file encrypted under a fresh key, its length and that key.
pub(super) struct Spool {
    file: std::fs::File,
    pub(super) length: u64,
    pub(super) info: MediaEncryptionInfo,
}

/// Reads the head (for the type), then spools everything; over `max` bytes is 413, past
/// the spool space (`[media] max_spool_mb`, reserved chunk by chunk in `reservation`) 503
/// `spool_full`.
pub(super) async fn spool<S>(
    state: &Context,
    stream: S,
    max: u64,
    reservation: std::sync::Arc<super::spool::Reservation>,
) -> AppResult<(Vec<u8>, Spool)>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    // Fused: a file shorter than the head ends inside `read_head`, and the chain after
    // it polls the stream once more (a bare `unfold` panics when polled past its end).
    let mut stream = stream.fuse();
    let (head, first) = read_head(&mut stream).await?;
    let mut seen = 0u64;
    let input = futures_util::stream::iter(first.into_iter().map(Ok))
        .chain(stream)
        .map(move |chunk: io::Result<Bytes>| {
            let chunk = chunk?;
            seen += chunk.len() as u64;
            if seen > max {
                return Err(io::Error::new(io::ErrorKind::FileTooLarge, "over the cap"));
            }
            reservation.grow(chunk.len() as u64)?;
            Ok(chunk)
        });
    let dir = state.config.storage.data_dir.clone();
    let (_, handle) =
        pipe::through_blocking(input, move |reader, _| encrypt_into_file(&dir, reader));
    let spool = handle
        .await
        .map_err(AppError::internal)?
        .map_err(|e| match e.kind() {
            io::ErrorKind::FileTooLarge => super::too_large(max, "file: is larger than allowed"),
            _ => read_error(e),
        })?;
    Ok((head, spool))
}

/// The first [`SNIFF_BYTES`] of the file (400 when it is empty), and the chunks read to
/// get them.
async fn read_head<S>(stream: &mut S) -> AppResult<(Vec<u8>, Vec<Bytes>)>
where
    S: Stream<Item = io::Result<Bytes>> + Unpin,
{
    let mut head = Vec::new();
    let mut first: Vec<Bytes> = Vec::new();
    while head.len() < SNIFF_BYTES {
        match stream.next().await {
            Some(chunk) => {
                let chunk = chunk.map_err(read_error)?;
                head.extend_from_slice(&chunk[..chunk.len().min(SNIFF_BYTES - head.len())]);
                first.push(chunk);
            }
            None => break,
        }
    }
    if head.is_empty() {
        return Err(AppError::invalid("file", "is empty"));
    }
    Ok((head, first))
}

/// Encrypts everything `reader` gives into an unlinked file in `dir` (blocking).
fn encrypt_into_file(dir: &std::path::Path, reader: &mut impl Read) -> io::Result<Spool> {
    let mut file = tempfile::tempfile_in(dir)?;
    let mut enc = AttachmentEncryptor::new(reader);
    let mut buf = vec![0u8; pipe::CHUNK_BYTES];
    let mut length = 0u64;
    loop {
        let n = enc.read(&mut buf)?;
        if n == 0 {
            break;
        }
        file.write_all(&buf[..n])?;
        length += n as u64;
    }
    let info = enc.finish();
    file.flush()?;
    file.rewind()?;
    Ok(Spool { file, length, info })
}

/// A failure reading the file part: the body deadline (408), the spool space (503), or
/// the client's body itself (400 naming `file`).
fn read_error(e: io::Error) -> AppError {
    match e.kind() {
        io::ErrorKind::TimedOut => body_timeout(),
        io::ErrorKind::StorageFull => super::spool::full(),
        _ => AppError::invalid("file", format!("could not be read: {e}")),
    }
}

/// 408 `request_timeout`: the upload body did not arrive within `[media] upload_timeout`.
pub fn body_timeout() -> AppError {
    AppError::RequestTimeout {
        message: "the upload did not arrive within [media] upload_timeout; send it faster \
                  or in smaller parts"
            .into(),
    }
}

/// Uploads the spool (as it is, or decrypted) and returns its `mxc://` URI.
pub(super) async fn send_spool(
    matrix: &MatrixClient,
    token: &str,
    spool: Spool,
    decrypt: Option<MediaEncryptionInfo>,
    content_type: &str,
    name: &str,
) -> AppResult<String> {
    let Spool {
        mut file, length, ..
    } = spool;
    let (out, _) =
        pipe::through_blocking(
            futures_util::stream::empty(),
            move |_, sink| match decrypt {
                Some(info) => {
                    let mut dec =
                        AttachmentDecryptor::new(&mut file, info).map_err(io::Error::other)?;
                    pipe::copy_held_back(&mut dec, sink)
                }
                None => pipe::copy_held_back(&mut file, sink),
            },
        );
    matrix
        .media_upload(
            token,
            content_type,
            name,
            Some(length),
            reqwest::Body::wrap_stream(out),
        )
        .await
        .map_err(homeserver_error)
}

pub(super) fn copy_info(info: &MediaEncryptionInfo) -> AppResult<MediaEncryptionInfo> {
    serde_json::to_value(info)
        .and_then(serde_json::from_value)
        .map_err(AppError::internal)
}
