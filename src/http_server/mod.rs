//! The HTTP connection loop: poem's acceptor (TCP, optionally rustls) and poem's endpoint,
//! served by hyper with the limits a public service needs and poem's own `Server` lacks.
//!
//! - **Header timeout** (`server.header_timeout`, 30 s): a request head must arrive
//!   completely within it once it has started. Without it a client that sends half a
//!   request line keeps its connection (and a slot) forever (slowloris).
//! - **Idle timeout** (`server.idle_timeout`, 60 s): a keep-alive connection that starts no
//!   new request within it is closed, and each response announces it (see [`timers`]).
//! - **Connection cap** (`server.max_connections`): past it, a new connection is answered
//!   at once with `503 busy` (the JSON error body, `Retry-After: 1`) and closed, so a flood
//!   of idle connections cannot grow memory and file descriptors without bound.
//! - **Graceful shutdown**: on the signal the loop stops accepting, every connection is
//!   asked to finish its in-flight request, and whatever is left after the grace period is
//!   dropped.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use poem::listener::Acceptor;
use poem::{Endpoint, EndpointExt, IntoEndpoint};
use tokio::io::AsyncWriteExt;
use tokio::sync::{watch, Semaphore};

mod timers;
mod unread;

use timers::{Activity, Tracked};

/// What the connection loop hands hyper as a response.
type ResponseBody = Tracked<BoxBody<Bytes, std::io::Error>>;

/// Connection limits, from `[server]`.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
}

/// The raw answer to a connection over the cap: there is no request to route yet.
fn busy_response() -> Vec<u8> {
    let body = r#"{"error":"busy","message":"too many open connections; retry in a moment"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `acceptor` until `shutdown` resolves; connections then get `grace` to
/// finish what they are doing.
pub async fn serve<A, E>(
    mut acceptor: A,
    app: E,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()>
where
    A: Acceptor,
    E: IntoEndpoint,
    E::Endpoint: 'static,
{
    let endpoint = Arc::new(app.into_endpoint().map_to_response());
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    // Announced a second short of the truth, so a client that honours it closes first.
    let announced = limits.idle_timeout.as_secs().saturating_sub(1).max(1);
    let keep_alive = poem::http::HeaderValue::from_str(&format!("timeout={announced}"))
        .expect("digits are a valid header value");
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = acceptor.accept() => {
                let Ok((io, local, remote, scheme)) = accepted else {
                    // A failed handshake or accept error concerns one connection only.
                    continue;
                };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    tracing::warn!(remote_addr = %remote, "connection refused: max_connections reached");
                    tokio::spawn(refuse_busy(io));
                    continue;
                };
                let endpoint = endpoint.clone();
                let stop = stop_rx.clone();
                let keep_alive = keep_alive.clone();
                tokio::spawn(async move {
                    let activity = Activity::new();
                    let watched = timers::Watched::new(io, activity.clone());
                    let requests = activity.clone();
                    let service = hyper::service::service_fn(move |req| {
                        let guard = requests.request_started(req.version() >= hyper::Version::HTTP_2);
                        let endpoint = endpoint.clone();
                        let keep_alive = keep_alive.clone();
                        let request =
                            poem::Request::from((req, local.clone(), remote.clone(), scheme.clone()));
                        async move {
                            let response = respond(&*endpoint, request, keep_alive).await;
                            Ok::<_, Infallible>(response.map(|body| Tracked::new(body, guard)))
                        }
                    });
                    serve_connection(watched, service, &activity, limits, stop).await;
                    drop(permit);
                });
            }
        }
    }
    let _ = stop_tx.send(true);
    // Every connection returns its slot when it ends: all slots back means all done.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, slots.acquire_many(all))
        .await
        .is_err()
    {
        tracing::warn!("grace period over; dropping the connections still open");
    }
    Ok(())
}

/// One request: the endpoint's response, after what the handler left of an HTTP/1 request
/// body has been read (bounded), so the connection can carry the next request; when it
/// could not be, the response says `Connection: close` (see [`unread`]); otherwise it says
/// how long the connection waits for the next request (`Keep-Alive`).
async fn respond<E: Endpoint<Output = poem::Response>>(
    endpoint: &E,
    mut request: poem::Request,
    keep_alive: poem::http::HeaderValue,
) -> hyper::Response<BoxBody<Bytes, std::io::Error>> {
    let http1 = request.version() < poem::http::Version::HTTP_2;
    let leftover = unread::Leftover::default();
    if http1 {
        let body = leftover.track(request.take_body().into());
        request.set_body(poem::Body::from(body));
    }
    let mut response = endpoint.get_response(request).await;
    if http1 {
        let headers = response.headers_mut();
        if !unread::finish(&leftover).await {
            headers.insert(
                poem::http::header::CONNECTION,
                poem::http::HeaderValue::from_static("close"),
            );
        } else if !headers.contains_key(poem::http::header::CONNECTION) {
            headers.insert(HEADER_KEEP_ALIVE, keep_alive);
        }
    }
    response.into()
}

/// `Keep-Alive` (not among `http`'s constants).
const HEADER_KEEP_ALIVE: poem::http::HeaderName = poem::http::HeaderName::from_static("keep-alive");

async fn serve_connection<Io, S>(
    io: Io,
    service: S,
    activity: &Activity,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<ResponseBody>,
            Error = Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        // Our own timers (see `timers`): hyper's would also end idle connections early.
        .header_read_timeout(None);
    builder
        .http2()
        .timer(TokioTimer::new())
        // An HTTP/2 peer that stops answering pings is gone: free its slot.
        .keep_alive_interval(Some(limits.header_timeout))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(Some(64));
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    let deadline = timers::Deadline::new(activity, limits.header_timeout, limits.idle_timeout);
    tokio::pin!(deadline);
    tokio::select! {
        // The connection first: the deadline reads what its poll just did.
        biased;
        _ = conn.as_mut() => return,
        _ = stop.wait_for(|stopped| *stopped) => {}
        expired = deadline.as_mut() => {
            if expired == timers::Expired::Head {
                // Half a request head after all this time: not a client worth a goodbye.
                return;
            }
        }
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

async fn refuse_busy<Io>(mut io: Io)
where
    Io: tokio::io::AsyncWrite + Unpin,
{
    let answer = async {
        io.write_all(&busy_response()).await?;
        io.shutdown().await
    };
    // A peer that does not read its refusal gets no more of our time than this.
    let _ = tokio::time::timeout(Duration::from_secs(2), answer).await;
}

#[cfg(test)]
mod tests {
    use super::busy_response;

    #[test]
    fn the_busy_answer_declares_its_exact_length() {
        let bytes = busy_response();
        let text = std::str::from_utf8(&bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let parsed: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(parsed["error"], "busy");
    }
}
