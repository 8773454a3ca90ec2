//! Request bodies left unread by an early answer (401, 403, 404, 413, 429, …).
//!
//! hyper (HTTP/1) drops a request whose body was not read to the end by closing the
//! connection after the response, *without* `Connection: close` on that response when the
//! body is not already in its buffer: a keep-alive client that sends its next request on
//! that connection meets a silent close (`RemoteDisconnected` in Python `requests`, which
//! never retries). So every HTTP/1 request body is wrapped in [`Tracked`], which hands
//! itself back when dropped unread; the connection loop then reads what is left, bounded
//! in bytes and time ([`finish`]), before the response goes out, and says
//! `Connection: close` when it could not.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};

/// What is left of an unread body is read at most up to this many bytes (the largest
/// body the API accepts, so a refused upload of allowed size keeps its connection)…
pub const DRAIN_MAX_BYTES: u64 = 2 * 1024 * 1024 + 1;
/// …and for at most this long.
pub const DRAIN_MAX_TIME: Duration = Duration::from_secs(5);

type Boxed = BoxBody<Bytes, io::Error>;

/// Where a [`Tracked`] body puts itself back when dropped before its end.
#[derive(Clone, Default)]
pub struct Leftover(Arc<Mutex<Option<Boxed>>>);

impl Leftover {
    /// Wraps `body` so that, dropped unread, it lands here.
    pub fn track(&self, body: Boxed) -> Boxed {
        BoxBody::new(Tracked {
            inner: Some(body),
            finished: false,
            leftover: self.clone(),
        })
    }

    fn take(&self) -> Option<Boxed> {
        self.0.lock().ok()?.take()
    }
}

/// Reads what the handler left of the request body. True when the connection can be kept
/// (nothing left, or the rest read within [`DRAIN_MAX_BYTES`] and [`DRAIN_MAX_TIME`]).
pub async fn finish(leftover: &Leftover) -> bool {
    let Some(mut body) = leftover.take() else {
        return true;
    };
    if body.size_hint().lower() > DRAIN_MAX_BYTES {
        return false;
    }
    let drain = async {
        let mut seen: u64 = 0;
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else { return false };
            if let Some(data) = frame.data_ref() {
                seen += data.len() as u64;
                if seen > DRAIN_MAX_BYTES {
                    return false;
                }
            }
        }
        true
    };
    tokio::time::timeout(DRAIN_MAX_TIME, drain)
        .await
        .unwrap_or(false)
}

/// A request body that remembers whether it was read to its end.
struct Tracked {
    inner: Option<Boxed>,
    finished: bool,
    leftover: Leftover,
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        // The end, or a broken body (the connection is lost anyway): nothing to drain.
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            this.finished = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.finished || self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(inner) = self.inner.take() {
            if !inner.is_end_stream() {
                if let Ok(mut slot) = self.leftover.0.lock() {
                    *slot = Some(inner);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::Full;

    fn boxed(bytes: &'static [u8]) -> Boxed {
        Full::new(Bytes::from_static(bytes))
            .map_err(|never| match never {})
            .boxed()
    }

    #[tokio::test]
    async fn a_body_dropped_unread_is_handed_back_and_drained() {
        let leftover = Leftover::default();
        drop(leftover.track(boxed(b"{\"text\":\"unread\"}")));
        assert!(leftover.0.lock().unwrap().is_some());
        assert!(
            finish(&leftover).await,
            "a small rest is read and the connection kept"
        );
        assert!(leftover.0.lock().unwrap().is_none());
    }

    #[tokio::test]
    async fn a_body_read_to_its_end_leaves_nothing() {
        let leftover = Leftover::default();
        let body = leftover.track(boxed(b"read"));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "read");
        assert!(leftover.0.lock().unwrap().is_none());
        assert!(finish(&leftover).await);
    }

    #[tokio::test]
    async fn a_rest_over_the_bound_closes_the_connection() {
        static BIG: [u8; 3 * 1024 * 1024] = [b'x'; 3 * 1024 * 1024];
        let leftover = Leftover::default();
        drop(leftover.track(boxed(&BIG)));
        assert!(!finish(&leftover).await);
    }
}
