//! The log writer: formatted lines go through a bounded channel to one thread that writes
//! them to stderr in batches (one buffered write per batch instead of one unbuffered write
//! per line), so a request never waits for the terminal or the journal.
//!
//! The writer thread flushes whenever the channel is empty, so a line reaches stderr as
//! soon as the thread runs; [`FlushGuard`] flushes what is queued when the process ends.
//! A full channel (a burst the writer cannot keep up with) makes the logging thread wait
//! rather than lose lines: errors are never dropped.

use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::time::Duration;

/// Lines that may wait for the writer thread.
const QUEUE_LINES: usize = 8192;

enum Message {
    Line(Vec<u8>),
    /// Flush, then answer.
    Flush(SyncSender<()>),
}

/// A `MakeWriter` for tracing-subscriber: each event is formatted into its own buffer and
/// queued whole.
#[derive(Clone)]
pub struct QueuedStderr {
    tx: SyncSender<Message>,
}

/// Flushes the queue when dropped (at the end of `main`'s command).
pub struct FlushGuard {
    tx: SyncSender<Message>,
}

/// Starts the writer thread.
pub fn queued_stderr() -> (QueuedStderr, FlushGuard) {
    let (tx, rx) = sync_channel(QUEUE_LINES);
    let spawned = std::thread::Builder::new()
        .name("log-writer".into())
        // The unlocked handle: each batch locks stderr only while it is written, so an
        // `eprintln!` of another thread (main's last words on a failed start) never waits
        // for this thread, which lives as long as the process.
        .spawn(move || write_lines(&rx, std::io::stderr()));
    if let Err(e) = spawned {
        eprintln!("cannot start the log writer thread: {e}");
    }
    (QueuedStderr { tx: tx.clone() }, FlushGuard { tx })
}

fn write_lines(rx: &Receiver<Message>, out: impl Write) {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Line(line) => {
                    let _ = out.write_all(&line);
                }
                Message::Flush(done) => {
                    let _ = out.flush();
                    let _ = done.send(());
                }
            }
            next = rx.try_recv().ok();
        }
        let _ = out.flush();
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        let (done_tx, done_rx) = sync_channel(1);
        if self.tx.send(Message::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv_timeout(Duration::from_secs(2));
        }
    }
}

/// One event's bytes, queued when tracing drops the writer after formatting the event.
pub struct QueuedLine<'a> {
    buf: Vec<u8>,
    tx: &'a SyncSender<Message>,
}

impl Write for QueuedLine<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for QueuedLine<'_> {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.tx.send(Message::Line(std::mem::take(&mut self.buf)));
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for QueuedStderr {
    type Writer = QueuedLine<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        QueuedLine {
            buf: Vec::with_capacity(256),
            tx: &self.tx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn queued_lines_arrive_whole_and_in_order_and_a_flush_waits_for_them() {
        let (tx, rx) = sync_channel(4);
        let sink = Shared::default();
        let out = sink.clone();
        let writer = std::thread::spawn(move || write_lines(&rx, out));
        let make = QueuedStderr { tx: tx.clone() };
        for i in 0..100 {
            let mut line = tracing_subscriber::fmt::MakeWriter::make_writer(&make);
            write!(line, "line {i}").unwrap();
            writeln!(line, " end").unwrap();
        }
        drop(FlushGuard { tx });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[0], "line 0 end");
        assert_eq!(lines[99], "line 99 end");
        drop(make);
        writer.join().unwrap();
    }
}
