//! The connection's two timers, kept apart (hyper has only one, `header_read_timeout`,
//! which starts as soon as the connection waits for the next request and so also closes
//! every keep-alive connection idle for that long):
//!
//! - **Head timer** (`server.header_timeout`): runs from the first byte of a request head
//!   until the request is dispatched; a client that trickles half a head is cut off
//!   (slowloris). HTTP/1 only: an HTTP/2 connection's pings keep it honest.
//! - **Idle timer** (`server.idle_timeout`): runs while no request is in flight and no head
//!   has started; when it ends the connection is shut down gracefully (HTTP/2: GOAWAY).
//!
//! The idle close of HTTP/1 cannot be announced on the wire (there is no request to answer),
//! so every keep-alive response says how long the connection will wait for the next one
//! (`Keep-Alive: timeout=N`, a second short of the truth): clients that honour it close
//! first, and the others (urllib3) find the connection closed long before they reuse it,
//! instead of meeting a close in flight after the head timer (30 s).
//!
//! Bytes of the next request that arrive while a response is still being written start no
//! head timer; such a connection is bounded by the idle timer instead.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// No partial head (in `head_since`).
const NONE: u64 = u64::MAX;

/// What one connection's requests and reads have done, in milliseconds since it opened.
pub struct Activity {
    opened: Instant,
    in_flight: AtomicU32,
    head_since: AtomicU64,
    idle_since: AtomicU64,
    http2: AtomicBool,
}

/// Why the timer task should end the connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Expired {
    /// A request head took too long: drop the connection.
    Head,
    /// Nothing happened for the idle timeout: shut down gracefully.
    Idle,
}

impl Activity {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            opened: Instant::now(),
            in_flight: AtomicU32::new(0),
            head_since: AtomicU64::new(NONE),
            idle_since: AtomicU64::new(0),
            http2: AtomicBool::new(false),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    fn at(&self, ms: u64) -> Instant {
        self.opened + Duration::from_millis(ms)
    }

    /// A read brought bytes.
    fn bytes_read(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.head_since.load(Ordering::Relaxed) == NONE
        {
            self.head_since.store(self.now_ms(), Ordering::Relaxed);
        }
    }

    /// A request was dispatched; it is in flight until the guard (kept by its response
    /// body) is dropped.
    pub fn request_started(self: &Arc<Self>, http2: bool) -> RequestGuard {
        if http2 {
            self.http2.store(true, Ordering::Relaxed);
        }
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.head_since.store(NONE, Ordering::Relaxed);
        RequestGuard(self.clone())
    }

    /// When to look again; `None` while a request is in flight (its end restarts the
    /// idle timer).
    pub fn next_check(&self, head: Duration, idle: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let head_since = self.head_since.load(Ordering::Relaxed);
        if head_since != NONE && !self.http2.load(Ordering::Relaxed) {
            return Some(self.at(head_since) + head);
        }
        Some(self.at(self.idle_since.load(Ordering::Relaxed)) + idle)
    }

    /// Whether a timer has run out now.
    pub fn expired(&self, head: Duration, idle: Duration) -> Option<Expired> {
        let due = self.next_check(head, idle)?;
        if Instant::now() < due {
            return None;
        }
        let head_started = self.head_since.load(Ordering::Relaxed) != NONE;
        Some(if head_started && !self.http2.load(Ordering::Relaxed) {
            Expired::Head
        } else {
            Expired::Idle
        })
    }
}

/// Resolves when one of the connection's timers runs out. It must be polled after the
/// connection in the same task (a `biased` select): reads and finished requests happen
/// inside the connection's poll, and this then re-arms its sleep for the new deadline.
/// While a request is in flight it waits without a timer.
pub struct Deadline<'a> {
    activity: &'a Activity,
    head: Duration,
    idle: Duration,
    sleep: Pin<Box<Sleep>>,
}

impl<'a> Deadline<'a> {
    pub fn new(activity: &'a Activity, head: Duration, idle: Duration) -> Self {
        Self {
            activity,
            head,
            idle,
            sleep: Box::pin(tokio::time::sleep(idle)),
        }
    }
}

impl std::future::Future for Deadline<'_> {
    type Output = Expired;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Expired> {
        let (head, idle) = (self.head, self.idle);
        let Some(due) = self.activity.next_check(head, idle) else {
            return Poll::Pending;
        };
        // Moving a timer means a trip to the runtime's timer wheel. Every request moves
        // the deadline *later* (its end restarts the idle timer, the next head starts its
        // own), so the sleep is only moved earlier here; one that ends before the real
        // deadline is re-armed below (at most once per timeout, not once per request).
        if due < self.sleep.deadline() {
            self.sleep.as_mut().reset(due);
        }
        loop {
            if self.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if let Some(expired) = self.activity.expired(head, idle) {
                return Poll::Ready(expired);
            }
            // An earlier deadline than the current one: wait for the current one. (The
            // timer's granularity may end it a hair early: never re-arm in the past.)
            let Some(due) = self.activity.next_check(head, idle) else {
                return Poll::Pending;
            };
            let floor = Instant::now() + Duration::from_millis(1);
            self.sleep.as_mut().reset(due.max(floor));
        }
    }
}

/// Marks its request finished when dropped (hyper drops the response body once written).
pub struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.idle_since.store(self.0.now_ms(), Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body that keeps its request's [`RequestGuard`].
pub struct Tracked<B> {
    body: B,
    _guard: RequestGuard,
}

impl<B> Tracked<B> {
    pub fn new(body: B, guard: RequestGuard) -> Self {
        Self {
            body,
            _guard: guard,
        }
    }
}

impl<B: Body + Unpin> Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The connection's IO, reporting reads to its [`Activity`].
pub struct Watched<Io> {
    io: Io,
    activity: Arc<Activity>,
}

impl<Io> Watched<Io> {
    pub fn new(io: Io, activity: Arc<Activity>) -> Self {
        Self { io, activity }
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Watched<Io> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.bytes_read();
        }
        polled
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Watched<Io> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real time, scaled down: tokio's paused clock needs a feature that would rebuild every
    // crate depending on tokio for the tests.
    const HEAD: Duration = Duration::from_millis(200);
    const IDLE: Duration = Duration::from_millis(400);

    async fn wait(ms: u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    #[tokio::test]
    async fn an_idle_connection_waits_for_the_idle_timer_not_the_head_timer() {
        let activity = Activity::new();
        drop(activity.request_started(false));
        wait(300).await;
        assert_eq!(activity.expired(HEAD, IDLE), None);
        wait(150).await;
        assert_eq!(activity.expired(HEAD, IDLE), Some(Expired::Idle));
    }

    #[tokio::test]
    async fn a_started_head_must_complete_within_the_head_timer() {
        let activity = Activity::new();
        wait(100).await;
        activity.bytes_read();
        wait(100).await;
        assert_eq!(activity.expired(HEAD, IDLE), None);
        wait(150).await;
        assert_eq!(activity.expired(HEAD, IDLE), Some(Expired::Head));
    }

    #[tokio::test]
    async fn nothing_expires_while_a_request_is_in_flight_and_its_end_restarts_idle() {
        let activity = Activity::new();
        activity.bytes_read();
        let guard = activity.request_started(false);
        wait(500).await;
        assert_eq!(activity.next_check(HEAD, IDLE), None);
        assert_eq!(activity.expired(HEAD, IDLE), None);
        drop(guard);
        wait(300).await;
        assert_eq!(activity.expired(HEAD, IDLE), None);
        wait(150).await;
        assert_eq!(activity.expired(HEAD, IDLE), Some(Expired::Idle));
    }

    #[tokio::test]
    async fn http2_frames_between_requests_start_no_head_timer() {
        let activity = Activity::new();
        drop(activity.request_started(true));
        activity.bytes_read();
        wait(300).await;
        assert_eq!(activity.expired(HEAD, IDLE), None);
    }

    #[tokio::test]
    async fn a_request_that_ends_later_pushes_the_idle_deadline_back() {
        let activity = Activity::new();
        let started = Instant::now();
        let deadline = Deadline::new(&activity, HEAD, IDLE);
        tokio::pin!(deadline);
        assert!(futures_util::poll!(deadline.as_mut()).is_pending());
        wait(200).await;
        // A request at 200 ms: idle now runs from its end, not from the connection's start
        // (the armed sleep ends first and is re-armed, never early).
        drop(activity.request_started(false));
        assert!(futures_util::poll!(deadline.as_mut()).is_pending());
        assert_eq!(deadline.await, Expired::Idle);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(590), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    #[tokio::test]
    async fn the_deadline_fires_when_a_head_starts_during_a_long_idle_wait() {
        let activity = Activity::new();
        let started = Instant::now();
        let long_idle = Duration::from_secs(60);
        let deadline = Deadline::new(&activity, HEAD, long_idle);
        tokio::pin!(deadline);
        // Armed for the idle timer first, as a fresh connection is.
        assert!(futures_util::poll!(deadline.as_mut()).is_pending());
        activity.bytes_read();
        assert_eq!(deadline.await, Expired::Head);
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
