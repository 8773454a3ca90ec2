//! The HTTP connection loop: poem's acceptor (TCP, optionally rustls) and poem's endpoint,
//! served by hyper with the limits a public service needs and poem's own `Server` lacks.
//!
//! - **Header timeout** (`server.header_timeout`, 30 s): a request head must arrive
//!   completely within it, and a keep-alive connection that starts no new request within it
//!   is closed. Without it a client that sends half a request line keeps its connection
//!   (and a slot) forever (slowloris).
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

mod unread;

/// Connection limits, from `[server]`.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
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
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let endpoint = endpoint.clone();
                        let request =
                            poem::Request::from((req, local.clone(), remote.clone(), scheme.clone()));
                        async move { Ok::<_, Infallible>(respond(&*endpoint, request).await) }
                    });
                    serve_connection(io, service, limits.header_timeout, stop).await;
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
/// could not be, the response says `Connection: close` (see [`unread`]).
async fn respond<E: Endpoint<Output = poem::Response>>(
    endpoint: &E,
    mut request: poem::Request,
) -> hyper::Response<BoxBody<Bytes, std::io::Error>> {
    let http1 = request.version() < poem::http::Version::HTTP_2;
    let leftover = unread::Leftover::default();
    if http1 {
        let body = leftover.track(request.take_body().into());
        request.set_body(poem::Body::from(body));
    }
    let mut response = endpoint.get_response(request).await;
    if http1 && !unread::finish(&leftover).await {
        response.headers_mut().insert(
            poem::http::header::CONNECTION,
            poem::http::HeaderValue::from_static("close"),
        );
    }
    response.into()
}

async fn serve_connection<Io, S>(
    io: Io,
    service: S,
    header_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) where
    Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<BoxBody<Bytes, std::io::Error>>,
            Error = Infallible,
        > + Send
        + 'static,
    S::Future: Send + 'static,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        // An HTTP/2 peer that stops answering pings is gone: free its slot.
        .keep_alive_interval(Some(header_timeout))
        .keep_alive_timeout(Duration::from_secs(20))
        .max_concurrent_streams(Some(64));
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.wait_for(|stopped| *stopped) => {}
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
