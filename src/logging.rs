//! The log writer: formatted lines are appended to one shared buffer and written to stderr
//! by one thread in batches, so a request never waits for the terminal or the journal and
//! never wakes another thread per line (a wake-up per line cost more than the line:
//! the access log must cost no measurable share of a request, docs/operations.md).
//!
//! A line that lands in an empty buffer wakes the writer thread, which writes at once unless
//! it wrote less than [`BATCH_WINDOW`] ago: then it first waits for the rest of that window,
//! and everything that arrived meanwhile goes out in one write. A quiet server's lines thus
//! reach stderr at once, a busy one's at most that late, with at most one write (and one
//! wake-up) per window; [`FlushGuard`] writes what is left when the process ends. A
//! buffer past [`HIGH_WATER`] (a burst the writer cannot keep up with) makes the logging
//! thread wait for the writer rather than lose lines: errors are never dropped.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// The shortest time between two writes (the longest a line waits under load).
const BATCH_WINDOW: Duration = Duration::from_millis(2);

/// Bytes that may wait for the writer before a logging thread waits for it.
const HIGH_WATER: usize = 4 * 1024 * 1024;

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Set by [`FlushGuard`]: the writer thread ends after its last batch.
    closing: bool,
}

/// What the logging threads and the writer share.
struct Shared {
    pending: Mutex<Pending>,
    /// The writer waits here for a first line; a full buffer's producers wait for room.
    changed: Condvar,
    /// Held while a batch is written, so batches reach stderr in the order they were taken.
    output: Mutex<Box<dyn Write + Send>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        // A panic while holding the lock left plain bytes behind: still usable.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, line: &[u8]) {
        let mut pending = self.lock();
        while pending.bytes.len() > HIGH_WATER && !pending.closing {
            self.changed.notify_all();
            pending = self
                .changed
                .wait(pending)
                .unwrap_or_else(|p| p.into_inner());
        }
        let was_empty = pending.bytes.is_empty();
        pending.bytes.extend_from_slice(line);
        drop(pending);
        if was_empty {
            self.changed.notify_all();
        }
    }

    /// Writes what is pending; `spare` is the empty buffer swapped in (its capacity is
    /// reused batch after batch).
    fn write_batch(&self, spare: &mut Vec<u8>) {
        let mut output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut pending = self.lock();
            std::mem::swap(&mut pending.bytes, spare);
        }
        // Producers waiting for room may go on.
        self.changed.notify_all();
        if !spare.is_empty() {
            let _ = output.write_all(spare);
            let _ = output.flush();
        }
        spare.clear();
        if spare.capacity() > HIGH_WATER {
            spare.shrink_to(64 * 1024);
        }
    }
}

/// A `MakeWriter` for tracing-subscriber.
#[derive(Clone)]
pub struct QueuedStderr {
    shared: Arc<Shared>,
}

/// Writes what is left when dropped (at the end of `main`'s command) and stops the writer.
pub struct FlushGuard {
    shared: Arc<Shared>,
}

/// Starts the writer thread.
pub fn queued_stderr() -> (QueuedStderr, FlushGuard) {
    // The unlocked handle: a batch locks stderr only while it is written, so an
    // `eprintln!` of another thread (main's last words on a failed start) never waits
    // for this thread.
    queued(Box::new(std::io::stderr()))
}

fn queued(output: Box<dyn Write + Send>) -> (QueuedStderr, FlushGuard) {
    let shared = Arc::new(Shared {
        pending: Mutex::new(Pending::default()),
        changed: Condvar::new(),
        output: Mutex::new(output),
    });
    let writer = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("log-writer".into())
        .spawn(move || write_lines(&writer));
    if let Err(e) = spawned {
        eprintln!("cannot start the log writer thread: {e}");
    }
    (
        QueuedStderr {
            shared: shared.clone(),
        },
        FlushGuard { shared },
    )
}

fn write_lines(shared: &Shared) {
    let mut spare = Vec::with_capacity(64 * 1024);
    let mut last_write: Option<std::time::Instant> = None;
    loop {
        {
            let mut pending = shared.lock();
            while pending.bytes.is_empty() && !pending.closing {
                pending = shared
                    .changed
                    .wait(pending)
                    .unwrap_or_else(|p| p.into_inner());
            }
            if pending.closing {
                return;
            }
        }
        // Lines coming thick and fast: gather the rest of the window into the same write.
        if let Some(wait) = last_write.and_then(|at| BATCH_WINDOW.checked_sub(at.elapsed())) {
            std::thread::sleep(wait);
        }
        shared.write_batch(&mut spare);
        last_write = Some(std::time::Instant::now());
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.changed.notify_all();
        let mut spare = Vec::new();
        self.shared.write_batch(&mut spare);
    }
}

/// The writer tracing-subscriber gets for one event. Its fmt layer formats the whole event
/// into its own thread-local buffer first and hands it over in one `write_all`, so each
/// `write` here is a whole line and is appended as it comes (no allocation per line).
pub struct QueuedLine<'a> {
    shared: &'a Shared,
}

impl Write for QueuedLine<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.shared.push(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for QueuedStderr {
    type Writer = QueuedLine<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        QueuedLine {
            shared: &self.shared,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn log_line(make: &QueuedStderr, text: &str) {
        let mut line = tracing_subscriber::fmt::MakeWriter::make_writer(make);
        line.write_all(text.as_bytes()).unwrap();
    }

    #[test]
    fn lines_of_many_threads_arrive_whole_and_in_order_and_the_guard_writes_the_rest() {
        let sink = Sink::default();
        let (make, guard) = queued(Box::new(sink.clone()));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let make = make.clone();
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        log_line(&make, &format!("thread {t} line {i} end\n"));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8000);
        for t in 0..4 {
            let prefix = format!("thread {t} ");
            let own: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| l.starts_with(&prefix))
                .collect();
            let expected: Vec<String> = (0..2000)
                .map(|i| format!("thread {t} line {i} end"))
                .collect();
            assert_eq!(own, expected);
        }
    }

    #[test]
    fn a_line_reaches_the_output_without_a_flush() {
        let sink = Sink::default();
        let (make, _guard) = queued(Box::new(sink.clone()));
        log_line(&make, "first\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while sink.0.lock().unwrap().is_empty() {
            assert!(std::time::Instant::now() < deadline, "line never written");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(&*sink.0.lock().unwrap(), b"first\n");
    }

    #[test]
    fn a_burst_past_the_high_water_mark_loses_nothing() {
        let sink = Sink::default();
        let (make, guard) = queued(Box::new(sink.clone()));
        let line = format!("{}\n", "x".repeat(1023));
        let lines = 3 * HIGH_WATER / line.len();
        for _ in 0..lines {
            log_line(&make, &line);
        }
        drop(guard);
        assert_eq!(sink.0.lock().unwrap().len(), lines * line.len());
    }
}
