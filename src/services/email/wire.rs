//! An outgoing message as it goes on the wire, produced piece by piece so that a large file
//! is never held whole: at most one spool chunk and its base64 form are in memory at a time.
//!
//! The MIME is lettre's, as for every message: [`super::mime::build`] gives each spooled
//! file a base64 body that is only a random marker, so `Message::formatted()` is a small
//! skeleton holding lettre's headers, boundaries and part headers. On the wire each marker
//! is replaced by the file's base64 text, encoded chunk by chunk while the sealed spool is
//! read, in exactly the form lettre writes a base64 body (lines of 76 characters, 57 bytes
//! each, separated by CRLF, the last one shorter and without CRLF: `email-encoding`'s
//! `body::base64::encode`). Only that body text is produced in pieces; no header or
//! boundary is written here. The exact length is known beforehand (IMAP APPEND needs it
//! for its literal).

use std::io;

use base64::Engine;
use lettre::address::Envelope;

use super::spool::{SpoolReader, Spooled};

/// Bytes per base64 line (76 characters).
const LINE_BYTES: usize = 57;

/// Length of the base64 body lettre writes for `n` bytes.
pub fn encoded_len(n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    let lines = n.div_ceil(LINE_BYTES as u64);
    n.div_ceil(3) * 4 + (lines - 1) * 2
}

/// A base64 body encoder fed in pieces of any size; its output, concatenated, is what
/// lettre writes for the whole input.
#[derive(Default)]
pub struct Base64Lines {
    carry: Vec<u8>,
    started: bool,
}

impl Base64Lines {
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<u8>) {
        if !self.carry.is_empty() {
            let take = (LINE_BYTES - self.carry.len()).min(data.len());
            self.carry.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.carry.len() < LINE_BYTES {
                return;
            }
            let line = std::mem::take(&mut self.carry);
            self.line(&line, out);
        }
        let whole = data.len() / LINE_BYTES * LINE_BYTES;
        for line in data[..whole].chunks(LINE_BYTES) {
            self.line(line, out);
        }
        self.carry.extend_from_slice(&data[whole..]);
    }

    /// The last, shorter line.
    pub fn finish(mut self, out: &mut Vec<u8>) {
        let rest = std::mem::take(&mut self.carry);
        if !rest.is_empty() {
            self.line(&rest, out);
        }
    }

    fn line(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        if self.started {
            out.extend_from_slice(b"\r\n");
        }
        self.started = true;
        base64::engine::general_purpose::STANDARD.encode_slice_to_vec(bytes, out);
    }
}

/// `encode_slice` into the end of a `Vec` (the base64 crate writes into slices).
trait EncodeToVec {
    fn encode_slice_to_vec(&self, bytes: &[u8], out: &mut Vec<u8>);
}

impl EncodeToVec for base64::engine::GeneralPurpose {
    fn encode_slice_to_vec(&self, bytes: &[u8], out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + bytes.len().div_ceil(3) * 4, 0);
        let n = self
            .encode_slice(bytes, &mut out[at..])
            .expect("room for a base64 line");
        out.truncate(at + n);
    }
}

/// A message ready to go out: its envelope, lettre's skeleton and the files whose base64
/// bodies replace the markers in it.
pub struct Outgoing {
    pub envelope: Envelope,
    skeleton: Vec<u8>,
    /// Per file, in the order of the skeleton: where its marker sits and the file.
    spliced: Vec<(std::ops::Range<usize>, Spooled)>,
}

impl Outgoing {
    /// Finds each marker in the skeleton; each must be there exactly once, in order.
    pub fn new(
        envelope: Envelope,
        skeleton: Vec<u8>,
        files: Vec<(String, Spooled)>,
    ) -> Result<Self, String> {
        let mut spliced = Vec::with_capacity(files.len());
        let mut from = 0;
        for (marker, file) in files {
            let m = marker.as_bytes();
            let at = find(&skeleton[from..], m)
                .map(|i| from + i)
                .ok_or("a file's place is missing from the message")?;
            if find(&skeleton[at + 1..], m).is_some() || find(&skeleton[..at], m).is_some() {
                return Err("a file's place is in the message twice".into());
            }
            spliced.push((at..at + m.len(), file));
            from = at + m.len();
        }
        Ok(Self {
            envelope,
            skeleton,
            spliced,
        })
    }

    /// The exact number of bytes [`Outgoing::pieces`] produces.
    pub fn wire_len(&self) -> u64 {
        let markers: usize = self.spliced.iter().map(|(r, _)| r.len()).sum();
        let files: u64 = self.spliced.iter().map(|(_, f)| encoded_len(f.size)).sum();
        (self.skeleton.len() - markers) as u64 + files
    }

    /// Whether the message is all ASCII (else SMTP needs 8BITMIME); base64 is ASCII.
    pub fn is_ascii(&self) -> bool {
        self.skeleton.is_ascii()
    }

    /// The message in pieces; every spool file is opened here, so a missing one fails
    /// before anything goes out. A piece that fails later (a chunk that does not open) is
    /// an error item, and the transfer must then be abandoned.
    pub fn pieces(&self) -> io::Result<Pieces<'_>> {
        let readers = self
            .spliced
            .iter()
            .map(|(_, f)| f.open())
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Pieces {
            msg: self,
            readers: readers.into_iter(),
            next: 0,
            at: 0,
            file: None,
        })
    }
}

#[cfg(test)]
impl Outgoing {
    /// The whole message at once (tests only: sending streams it).
    pub fn to_vec(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for piece in self.pieces()? {
            out.extend(piece?);
        }
        Ok(out)
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The iterator of [`Outgoing::pieces`]: skeleton text, then a file's base64 in pieces of
/// one spool chunk, then skeleton text again, and so on.
pub struct Pieces<'a> {
    msg: &'a Outgoing,
    readers: std::vec::IntoIter<SpoolReader>,
    /// The index of the next file.
    next: usize,
    /// Where the skeleton text goes on.
    at: usize,
    /// The file being encoded.
    file: Option<(SpoolReader, Base64Lines)>,
}

impl Iterator for Pieces<'_> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((reader, enc)) = &mut self.file {
                match reader.next_chunk() {
                    Err(e) => {
                        self.file = None;
                        self.at = usize::MAX;
                        return Some(Err(e));
                    }
                    Ok(Some(plain)) => {
                        let mut out = Vec::with_capacity(plain.len() / 3 * 4 + plain.len() / 28);
                        enc.push(&plain, &mut out);
                        return Some(Ok(out));
                    }
                    Ok(None) => {
                        let (_, enc) = self.file.take().expect("a file");
                        let mut out = Vec::new();
                        enc.finish(&mut out);
                        return Some(Ok(out));
                    }
                }
            }
            let skeleton = &self.msg.skeleton;
            if self.at >= skeleton.len() {
                return None;
            }
            let Some((range, _)) = self.msg.spliced.get(self.next) else {
                let text = skeleton[self.at..].to_vec();
                self.at = skeleton.len();
                return Some(Ok(text));
            };
            let text = skeleton[self.at..range.start].to_vec();
            self.at = range.end;
            self.next += 1;
            let reader = self.readers.next().expect("one reader per file");
            self.file = Some((reader, Base64Lines::default()));
            if !text.is_empty() {
                return Some(Ok(text));
            }
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
