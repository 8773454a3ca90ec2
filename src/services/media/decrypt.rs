//! Encrypted attachments decrypted as they stream through, on the task that serves them.
//!
//! `matrix-sdk-crypto`'s [`AttachmentDecryptor`] is a `Read` wrapper that hashes what its
//! inner reader put into the caller's buffer, then decrypts that buffer in place. Here the
//! inner reader is [`Prefilled`]: each ciphertext chunk from the homeserver is copied into
//! a buffer of its exact size and handed to the decryptor, whose inner "read" only
//! declares the buffer full. A chunk is a few hundred KiB at most (hyper's read buffer)
//! and costs well under a millisecond; the earlier design, a blocking thread fed over
//! channels, spent more on the hand-offs (two thread wake-ups and two copies per 64 KiB,
//! and a malloc arena per blocking thread) than on the cipher itself.
//!
//! Each decrypted chunk is held back until the next one (or the end) has been read, and
//! at the end the decryptor checks the SHA-256 of the whole ciphertext: on a mismatch the
//! last chunk is never sent and the stream ends with an error (the response stops short
//! of its `Content-Length`).

use std::io::{self, Read};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use matrix_sdk_crypto::{AttachmentDecryptor, MediaEncryptionInfo};

use super::pipe::Output;

/// Largest piece decrypted (and written to the client) at once: bounds the time one poll
/// spends in the cipher.
pub(super) const PIECE_BYTES: usize = 256 * 1024;

/// The decryptor's inner reader: the caller has already put the ciphertext in the buffer,
/// so every read "fills" it whole; an empty buffer reads as the end, which makes the
/// decryptor check its hash.
struct Prefilled;

impl Read for Prefilled {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
}

/// The decryptor borrows its reader for as long as it lives; [`Prefilled`] has no size,
/// so leaking a box of it allocates and loses nothing.
type Decryptor = AttachmentDecryptor<'static, Prefilled>;

/// Stream state: the input, the decryptor, the piece not yet sent, and input left over
/// from a chunk larger than [`PIECE_BYTES`].
struct State<S> {
    input: S,
    dec: Decryptor,
    held: Option<Bytes>,
    rest: Bytes,
    done: bool,
}

fn mismatch(e: io::Error) -> io::Error {
    tracing::warn!(error = %e, "encrypted attachment not delivered whole");
    e
}

impl<S> State<S>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    /// The next piece of ciphertext, decrypted; `None` at the end of the input.
    async fn next_plain(&mut self) -> Option<io::Result<Bytes>> {
        while self.rest.is_empty() {
            match self.input.next().await? {
                Ok(chunk) => self.rest = chunk,
                Err(e) => return Some(Err(e)),
            }
        }
        let n = self.rest.len().min(PIECE_BYTES);
        let mut buf = BytesMut::from(&self.rest.split_to(n)[..]);
        Some(match self.dec.read(&mut buf) {
            Ok(read) if read == n => Ok(buf.freeze()),
            Ok(_) => Err(io::Error::other("attachment decryptor read short")),
            Err(e) => Err(e),
        })
    }

    /// The next piece to send: the held one once its successor (or the verified end)
    /// is known.
    async fn step(&mut self) -> Option<io::Result<Bytes>> {
        if self.done {
            return None;
        }
        loop {
            match self.next_plain().await {
                Some(Ok(piece)) => {
                    if let Some(prev) = self.held.replace(piece) {
                        return Some(Ok(prev));
                    }
                }
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(mismatch(e)));
                }
                None => {
                    self.done = true;
                    // An empty read is the end: the decryptor compares the hash now.
                    return match self.dec.read(&mut []) {
                        Ok(_) => self.held.take().map(Ok),
                        Err(e) => Some(Err(mismatch(e))),
                    };
                }
            }
        }
    }
}

/// `input` (ciphertext) decrypted with `info`, whose hash must match before the last
/// piece is released.
pub fn decrypting<S>(input: S, info: MediaEncryptionInfo) -> io::Result<Output>
where
    S: Stream<Item = io::Result<Bytes>> + Send + Unpin + 'static,
{
    let reader: &'static mut Prefilled = Box::leak(Box::new(Prefilled));
    let dec = AttachmentDecryptor::new(reader, info).map_err(io::Error::other)?;
    let state = State {
        input,
        dec,
        held: None,
        rest: Bytes::new(),
        done: false,
    };
    Ok(Box::pin(futures_util::stream::unfold(
        state,
        |mut state| async move { state.step().await.map(|item| (item, state)) },
    )))
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

    fn chunks(data: &[u8], size: usize) -> Vec<io::Result<Bytes>> {
        data.chunks(size.max(1))
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect()
    }

    async fn run(
        input: Vec<io::Result<Bytes>>,
        info: MediaEncryptionInfo,
    ) -> Vec<io::Result<Bytes>> {
        decrypting(futures_util::stream::iter(input), info)
            .unwrap()
            .collect()
            .await
    }

    #[tokio::test]
    async fn decrypts_whatever_the_chunking() {
        let plain: Vec<u8> = (0..700_001u32).map(|i| (i * 7 % 251) as u8).collect();
        let (cipher, info) = encrypt(&plain);
        for size in [1, 1000, 65_536, PIECE_BYTES + 3, cipher.len()] {
            let copy = serde_json::from_value(serde_json::to_value(&info).unwrap()).unwrap();
            let out = run(chunks(&cipher, size), copy).await;
            let bytes: Vec<u8> = out.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
            assert!(bytes == plain, "chunks of {size}");
        }
        let (cipher, info) = encrypt(b"");
        assert!(run(chunks(&cipher, 10), info).await.is_empty());
    }

    #[tokio::test]
    async fn a_hash_mismatch_withholds_the_last_piece() {
        let plain = vec![9u8; 3 * PIECE_BYTES];
        let (mut cipher, info) = encrypt(&plain);
        cipher[10] ^= 1;
        let out = run(chunks(&cipher, PIECE_BYTES), info).await;
        assert!(out.last().unwrap().is_err(), "ends with the error");
        let sent: usize = out
            .iter()
            .filter_map(|c| c.as_ref().ok())
            .map(Bytes::len)
            .sum();
        assert_eq!(sent, 2 * PIECE_BYTES, "the last piece is withheld");
        // An input failure ends the output too, without the held piece.
        let (cipher, info) = encrypt(&plain);
        let mut input = chunks(&cipher[..PIECE_BYTES], PIECE_BYTES);
        input.push(Err(io::Error::other("upstream broke")));
        let out = run(input, info).await;
        assert_eq!(out.len(), 1);
        assert!(out[0].is_err());
    }
}
