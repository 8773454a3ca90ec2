//! Encrypted attachments: verified before a byte is served, then decrypted.
//!
//! The event's SHA-256 covers the *ciphertext*, so the ciphertext is spooled as it
//! streams in from the homeserver (into an unlinked file in the data directory, counted
//! against `[media] max_spool_mb` and bounded by `[media] max_download_mb`) and hashed on
//! the way. Only when the hash matches is anything sent: the spool is read back and
//! decrypted (AES-256-CTR) piece by piece to the client. A mismatch is 502
//! `attachment_corrupt` before the response starts, so a byte flipped in transit or at
//! rest on the homeserver (AES-CTR does not notice it) never reaches the client.
//!
//! The spool needs no cipher of its own: it is ciphertext whose key is only in the
//! (sealed) event. Each byte costs one SHA-256 and one AES-CTR pass, the floor for a
//! checked decryption; the spool lives in the page cache, not in the process's memory,
//! and at most one [`PIECE_BYTES`] buffer per download is held. File writes and reads are
//! done on the serving task: page-cache copies of at most a few hundred KiB, cheaper than
//! handing each chunk to a blocking thread.

use std::io::{self, Read, Seek, Write};
use std::sync::Arc;

use aes::Aes256;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use ctr::cipher::{KeyIvInit, StreamCipher};
use futures_util::{Stream, StreamExt};
use matrix_sdk_crypto::MediaEncryptionInfo;
use sha2::{Digest, Sha256};

use super::pipe::Output;
use super::spool::{self, Reservation};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::Context;

/// Largest piece decrypted (and written to the client) at once: bounds the time one poll
/// spends in the cipher and the memory a download holds.
pub(super) const PIECE_BYTES: usize = 256 * 1024;

type Aes256Ctr = ctr::Ctr128BE<Aes256>;

/// The key, counter block and expected ciphertext hash of an encrypted attachment.
pub(super) struct CipherParams {
    key: [u8; 32],
    iv: [u8; 16],
    sha256: [u8; 32],
}

/// Base64 with or without padding, as Matrix clients write it.
fn lenient(alphabet: &alphabet::Alphabet) -> GeneralPurpose {
    GeneralPurpose::new(
        alphabet,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    )
}

fn bytes_of<const N: usize>(engine: &GeneralPurpose, value: &serde_json::Value) -> Option<[u8; N]> {
    engine.decode(value.as_str()?).ok()?.try_into().ok()
}

impl CipherParams {
    /// The parameters of `info` (already parsed by `matrix-sdk-crypto`, which checked its
    /// shape): version `v2`, an `A256CTR` key of 32 bytes, a 16-byte counter block and a
    /// SHA-256. `None` when any is missing.
    pub(super) fn of(info: &MediaEncryptionInfo) -> Option<Self> {
        let v = serde_json::to_value(info).ok()?;
        if v["v"] != "v2" || v["key"]["alg"] != "A256CTR" {
            return None;
        }
        Some(Self {
            key: bytes_of(&lenient(&alphabet::URL_SAFE), &v["key"]["k"])?,
            iv: bytes_of(&lenient(&alphabet::STANDARD), &v["iv"])?,
            sha256: bytes_of(&lenient(&alphabet::STANDARD), &v["hashes"]["sha256"])?,
        })
    }
}

fn corrupt() -> AppError {
    AppError::BadGateway {
        code: ErrorCode::AttachmentCorrupt,
        message: "the attachment's bytes on the homeserver do not match the SHA-256 its \
                  event names (damaged or tampered with); nothing of it was sent"
            .into(),
    }
}

/// A failure while spooling: over the size cap (413), out of spool space (503), the
/// homeserver breaking off (502), or the data disk failing (500).
fn spool_error(e: io::Error, max: u64) -> AppError {
    match e.kind() {
        io::ErrorKind::FileTooLarge => {
            super::too_large(max, "the attachment is larger than this server serves")
        }
        io::ErrorKind::StorageFull => spool::full(),
        _ => {
            tracing::warn!(error = %e, "encrypted attachment not received whole");
            AppError::BadGateway {
                code: ErrorCode::HomeserverError,
                message: "the homeserver broke off the attachment".into(),
            }
        }
    }
}

/// Spools `input` (ciphertext, already capped at `max` bytes), checks its SHA-256 and
/// returns its length and the decrypted stream. 502 `attachment_corrupt` on a mismatch,
/// before anything is sent.
pub(super) async fn verified<S>(
    state: &Context,
    mut input: S,
    params: CipherParams,
    max: u64,
) -> AppResult<(u64, Output)>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    let reservation = Reservation::new(state);
    let mut file = tempfile::tempfile_in(&state.config.storage.data_dir)
        .map_err(|e| AppError::internal(format!("attachment spool: {e}")))?;
    let mut sha = Sha256::new();
    let mut length = 0u64;
    while let Some(chunk) = input.next().await {
        let chunk = chunk.map_err(|e| spool_error(e, max))?;
        reservation
            .grow(chunk.len() as u64)
            .map_err(|e| spool_error(e, max))?;
        sha.update(&chunk);
        file.write_all(&chunk).map_err(|e| match e.kind() {
            io::ErrorKind::StorageFull => spool::full(),
            _ => AppError::internal(format!("attachment spool: {e}")),
        })?;
        length += chunk.len() as u64;
    }
    if sha.finalize().as_slice() != params.sha256.as_slice() {
        tracing::warn!(length, "encrypted attachment refused: SHA-256 mismatch");
        return Err(corrupt());
    }
    file.rewind()
        .map_err(|e| AppError::internal(format!("attachment spool: {e}")))?;
    let cipher = Aes256Ctr::new(&params.key.into(), &params.iv.into());
    let state = Readback {
        file,
        cipher,
        left: length,
        _reservation: reservation,
    };
    let body = futures_util::stream::unfold(state, |mut s| async move {
        s.next_piece().map(|piece| (piece, s))
    });
    Ok((length, Box::pin(body)))
}

/// The verified spool, decrypted as it is read back.
struct Readback {
    file: std::fs::File,
    cipher: Aes256Ctr,
    left: u64,
    /// Keeps the spool's space counted until the download ends.
    _reservation: Arc<Reservation>,
}

impl Readback {
    fn next_piece(&mut self) -> Option<io::Result<Bytes>> {
        if self.left == 0 {
            return None;
        }
        let n = usize::try_from(self.left).map_or(PIECE_BYTES, |l| l.min(PIECE_BYTES));
        let mut buf = BytesMut::zeroed(n);
        if let Err(e) = self.file.read_exact(&mut buf) {
            self.left = 0;
            return Some(Err(e));
        }
        self.cipher.apply_keystream(&mut buf);
        self.left -= n as u64;
        Some(Ok(buf.freeze()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use matrix_sdk_crypto::AttachmentEncryptor;

    fn encrypt(plain: &[u8]) -> (Vec<u8>, MediaEncryptionInfo) {
        let mut cursor = std::io::Cursor::new(plain.to_vec());
        let mut enc = AttachmentEncryptor::new(&mut cursor);
        let mut cipher = Vec::new();
        enc.read_to_end(&mut cipher).unwrap();
        (cipher, enc.finish())
    }

    #[test]
    fn parameters_come_from_the_event_and_decrypt_like_the_crate() {
        let plain: Vec<u8> = (0..70_001u32).map(|i| (i * 7 % 251) as u8).collect();
        let (cipher, info) = encrypt(&plain);
        let p = CipherParams::of(&info).expect("v2 parameters");
        assert_eq!(Sha256::digest(&cipher).as_slice(), p.sha256.as_slice());
        let mut out = cipher.clone();
        Aes256Ctr::new(&p.key.into(), &p.iv.into()).apply_keystream(&mut out);
        assert!(out == plain);
        let mut v = serde_json::to_value(&info).unwrap();
        v["v"] = "v1".into();
        if let Ok(old) = serde_json::from_value::<MediaEncryptionInfo>(v) {
            assert!(CipherParams::of(&old).is_none(), "only v2");
        }
    }
}
