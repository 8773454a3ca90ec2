//! Byte streams through blocking work (the attachment cipher of `matrix-sdk-crypto` is a
//! `std::io::Read` wrapper): the input stream is fed chunk by chunk to a blocking thread
//! over a bounded channel, whose output comes back over another. At most a few chunks are
//! in flight, so memory stays flat whatever the file size; when either side goes away the
//! other stops.

use std::io::{self, Read};
use std::pin::pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc;

/// Chunks in flight on each side of the blocking thread.
const CHANNEL_CHUNKS: usize = 4;
/// Size of the chunks the blocking thread reads and writes.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// The blocking side's input: a `Read` over the chunks the feeder sends. An error of the
/// input stream is an error here (never a short end).
pub struct ChannelReader {
    rx: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(chunk)) => self.current = chunk,
                Some(Err(e)) => return Err(e),
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        let _ = self.current.split_to(n);
        Ok(n)
    }
}

/// The blocking side's output.
pub struct ChunkSink {
    tx: mpsc::Sender<io::Result<Bytes>>,
}

impl ChunkSink {
    /// Sends one chunk; an error when the reader of the output went away.
    pub fn send(&self, chunk: Bytes) -> io::Result<()> {
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "output closed"))
    }
}

/// The output of [`through_blocking`] as a stream.
pub type Output = std::pin::Pin<Box<dyn Stream<Item = io::Result<Bytes>> + Send>>;

/// Runs `work` on a blocking thread over `input`; returns its output stream and the
/// handle of its result. A failure of `work` ends the output with that error.
pub fn through_blocking<S, T, F>(
    input: S,
    work: F,
) -> (Output, tokio::task::JoinHandle<io::Result<T>>)
where
    S: Stream<Item = io::Result<Bytes>> + Send + 'static,
    T: Send + 'static,
    F: FnOnce(&mut ChannelReader, &ChunkSink) -> io::Result<T> + Send + 'static,
{
    let (in_tx, in_rx) = mpsc::channel(CHANNEL_CHUNKS);
    let (out_tx, out_rx) = mpsc::channel(CHANNEL_CHUNKS);
    tokio::spawn(async move {
        let mut input = pin!(input);
        while let Some(item) = input.next().await {
            let failed = item.is_err();
            if in_tx.send(item).await.is_err() || failed {
                break;
            }
        }
    });
    let handle = tokio::task::spawn_blocking(move || {
        let mut reader = ChannelReader {
            rx: in_rx,
            current: Bytes::new(),
        };
        let sink = ChunkSink { tx: out_tx };
        let result = work(&mut reader, &sink);
        if let Err(e) = &result {
            let _ = sink
                .tx
                .blocking_send(Err(io::Error::new(e.kind(), e.to_string())));
        }
        result
    });
    let output = futures_util::stream::unfold(out_rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    (Box::pin(output), handle)
}

/// Reads `reader` to its end in chunks of [`CHUNK_BYTES`], sending each to `sink`; each
/// chunk is held back until the next read succeeded, so a failure detected at the end
/// (the attachment hash check) means the last chunk is never sent.
pub fn copy_held_back(reader: &mut impl Read, sink: &ChunkSink) -> io::Result<u64> {
    let mut total = 0u64;
    let mut held: Option<Bytes> = None;
    loop {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let n = read_full(reader, &mut buf)?;
        if let Some(prev) = held.take() {
            sink.send(prev)?;
        }
        if n == 0 {
            return Ok(total);
        }
        buf.truncate(n);
        total += n as u64;
        held = Some(Bytes::from(buf));
    }
}

/// Fills `buf` as far as the reader goes (stops early only at its end).
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_pass_through_and_failures_end_the_output() {
        let chunks: Vec<io::Result<Bytes>> = (0..50u8)
            .map(|i| Ok(Bytes::from(vec![i; 10_000])))
            .collect();
        let (out, handle) = through_blocking(futures_util::stream::iter(chunks), |r, s| {
            copy_held_back(r, s)
        });
        let got: Vec<io::Result<Bytes>> = out.collect().await;
        let bytes: Vec<u8> = got.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
        assert_eq!(bytes.len(), 500_000);
        assert_eq!(&bytes[490_000..], &[49u8; 10_000][..]);
        assert_eq!(handle.await.unwrap().unwrap(), 500_000);
        let failing: Vec<io::Result<Bytes>> = vec![
            Ok(Bytes::from_static(b"abc")),
            Err(io::Error::other("upstream broke")),
        ];
        let (out, handle) = through_blocking(futures_util::stream::iter(failing), |r, s| {
            copy_held_back(r, s)
        });
        let got: Vec<io::Result<Bytes>> = out.collect().await;
        assert!(
            got.last().unwrap().is_err(),
            "the failure reaches the output"
        );
        assert!(
            got.iter()
                .all(|c| c.as_ref().map_or(true, |b| b.is_empty())),
            "held back"
        );
        assert!(handle.await.unwrap().is_err());
    }
}
