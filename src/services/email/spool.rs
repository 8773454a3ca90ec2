//! The sealed spool of outgoing files: uploads (`POST /api/email/attachments`) and the
//! files of a forwarded message while it is being sent. A file is cut into chunks of
//! [`CHUNK`] plaintext bytes, each sealed on its own (XChaCha20-Poly1305 under the owner's
//! data key, AAD `email_uploads` / `chunk` / `<id>/<n>`, so chunks cannot be reordered,
//! swapped between files or cut off unnoticed: the reader checks the size it was told) and
//! written as `u32 length (big-endian) ‖ sealed chunk`.
//!
//! Reading and writing here are plain blocking file calls on local disk, one chunk at a
//! time: they run inside the loops that feed SMTP and IMAP (lettre's `message_iter` takes a
//! synchronous iterator), where a 64 KiB read costs far less than the network write it feeds.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use crate::crypto::{Aad, DataKey};

/// The table name in the AAD (the uploads' rows are in `email_uploads`).
pub const T: &str = "email_uploads";
/// Plaintext bytes per sealed chunk.
pub const CHUNK: usize = 64 * 1024;
/// The largest sealed chunk a reader accepts (the cipher adds a nonce and a tag).
const MAX_SEALED: usize = CHUNK + 64;

fn chunk_aad(id: &str, n: u64) -> String {
    format!("{id}/{n}")
}

/// Cuts bytes into sealed frames (`u32 length ‖ sealed chunk`) of [`CHUNK`] plaintext bytes.
pub struct Sealer {
    dek: DataKey,
    id: String,
    n: u64,
    buf: Vec<u8>,
}

impl Sealer {
    pub fn new(dek: DataKey, id: &str) -> Self {
        Self {
            dek,
            id: id.to_owned(),
            n: 0,
            buf: Vec::with_capacity(CHUNK),
        }
    }

    /// Takes bytes; returns the frames completed by them (usually none or one).
    pub fn push(&mut self, mut data: &[u8]) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        while !data.is_empty() {
            let take = (CHUNK - self.buf.len()).min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == CHUNK {
                frames.push(self.frame());
            }
        }
        frames
    }

    /// The last, shorter frame, if any bytes are left.
    pub fn finish(mut self) -> Option<Vec<u8>> {
        (!self.buf.is_empty()).then(|| self.frame())
    }

    fn frame(&mut self) -> Vec<u8> {
        let aad = chunk_aad(&self.id, self.n);
        let sealed = self.dek.seal(&self.buf, &Aad::new(T, "chunk", &aad));
        self.n += 1;
        self.buf.clear();
        let mut frame = Vec::with_capacity(4 + sealed.len());
        frame.extend_from_slice(&(sealed.len() as u32).to_be_bytes());
        frame.extend_from_slice(&sealed);
        frame
    }
}

/// A spooled file to read back: where it is, the id its chunks were sealed under, the
/// size it must have.
#[derive(Clone)]
pub struct Spooled {
    pub path: PathBuf,
    pub id: String,
    pub size: u64,
    pub dek: DataKey,
}

impl Spooled {
    /// Opens the file (an error here comes before anything is sent).
    pub fn open(&self) -> io::Result<SpoolReader> {
        let file = std::fs::File::open(&self.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("file {} is not in the spool: {e}", self.id),
            )
        })?;
        Ok(SpoolReader {
            file: io::BufReader::with_capacity(MAX_SEALED + 4, file),
            spooled: self.clone(),
            n: 0,
            read: 0,
        })
    }
}

/// Reads a spooled file back one opened chunk at a time.
pub struct SpoolReader {
    file: io::BufReader<std::fs::File>,
    spooled: Spooled,
    n: u64,
    read: u64,
}

impl SpoolReader {
    /// The next chunk's plaintext; `None` at the end, once the size is checked.
    pub fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let id = &self.spooled.id;
        let mut len = [0u8; 4];
        match self.file.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                if self.read != self.spooled.size {
                    return Err(invalid(format!(
                        "file {id} holds {} bytes, not {}",
                        self.read, self.spooled.size
                    )));
                }
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
        let len = u32::from_be_bytes(len) as usize;
        if len > MAX_SEALED {
            return Err(invalid(format!("a chunk of file {id} is too long")));
        }
        let mut sealed = vec![0u8; len];
        self.file.read_exact(&mut sealed)?;
        let aad = chunk_aad(id, self.n);
        let plain = self
            .spooled
            .dek
            .open(&sealed, &Aad::new(T, "chunk", &aad))
            .map_err(|_| invalid(format!("chunk {} of file {id} does not open", self.n)))?;
        self.n += 1;
        self.read += plain.len() as u64;
        if self.read > self.spooled.size {
            return Err(invalid(format!("file {id} is longer than it should be")));
        }
        Ok(Some(plain))
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Writes a spool file synchronously (for files taken from a mail server in a callback);
/// the file is removed when the writer or the [`Spooled`] guard made of it is dropped
/// without [`SpoolWriter::finish`] / [`TempFiles`] keeping it.
pub struct SpoolWriter {
    file: io::BufWriter<std::fs::File>,
    sealer: Option<Sealer>,
    path: PathBuf,
    id: String,
    dek: DataKey,
    size: u64,
    done: bool,
}

impl SpoolWriter {
    pub fn create(dir: &std::path::Path, id: &str, dek: &DataKey) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(id);
        let file = std::fs::File::create(&path)?;
        Ok(Self {
            file: io::BufWriter::new(file),
            sealer: Some(Sealer::new(dek.clone(), id)),
            path,
            id: id.to_owned(),
            dek: dek.clone(),
            size: 0,
            done: false,
        })
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.size += data.len() as u64;
        let sealer = self.sealer.as_mut().expect("not finished");
        for frame in sealer.push(data) {
            self.file.write_all(&frame)?;
        }
        Ok(())
    }

    /// The bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Seals the rest and closes the file; it is then the caller's to remove.
    pub fn finish(mut self) -> io::Result<Spooled> {
        if let Some(frame) = self.sealer.take().and_then(Sealer::finish) {
            self.file.write_all(&frame)?;
        }
        self.file.flush()?;
        self.done = true;
        Ok(Spooled {
            path: self.path.clone(),
            id: self.id.clone(),
            size: self.size,
            dek: self.dek.clone(),
        })
    }
}

impl Drop for SpoolWriter {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Spool files that live as long as one send (a forward's files): removed when dropped,
/// whatever way the send ended. A stop in between leaves them to the spool's purge (files
/// without an upload row go after an hour).
#[derive(Default)]
pub struct TempFiles(Vec<PathBuf>);

impl TempFiles {
    pub fn keep(&mut self, s: &Spooled) {
        self.0.push(s.path.clone());
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spool(dir: &std::path::Path, id: &str, dek: &DataKey, bytes: &[u8]) -> Spooled {
        let mut w = SpoolWriter::create(dir, id, dek).unwrap();
        for piece in bytes.chunks(10_000) {
            w.write(piece).unwrap();
        }
        w.finish().unwrap()
    }

    fn read_all(s: &Spooled) -> io::Result<Vec<u8>> {
        let mut r = s.open()?;
        let mut out = Vec::new();
        while let Some(c) = r.next_chunk()? {
            assert!(c.len() <= CHUNK);
            out.extend(c);
        }
        Ok(out)
    }

    #[test]
    fn a_file_reads_back_whole_and_a_wrong_size_or_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dek = DataKey::from_bytes([7; 32]);
        let bytes: Vec<u8> = (0..(3 * CHUNK + 5)).map(|i| (i % 251) as u8).collect();
        let s = spool(dir.path(), "f1", &dek, &bytes);
        assert_eq!(s.size, bytes.len() as u64);
        assert_eq!(read_all(&s).unwrap(), bytes);
        let short = Spooled {
            size: s.size + 1,
            ..s.clone()
        };
        assert!(read_all(&short).is_err(), "a cut-off file is noticed");
        let other = Spooled {
            id: "f2".into(),
            ..s.clone()
        };
        assert!(read_all(&other).is_err(), "chunks are bound to their file");
        let missing = Spooled {
            path: dir.path().join("nope"),
            ..s
        };
        assert!(missing.open().is_err());
    }

    #[test]
    fn an_unfinished_writer_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let dek = DataKey::from_bytes([7; 32]);
        let mut w = SpoolWriter::create(dir.path(), "gone", &dek).unwrap();
        w.write(b"half").unwrap();
        drop(w);
        assert!(!dir.path().join("gone").exists());
    }
}
