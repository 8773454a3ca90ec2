//! Switchboard: a self-hosted unified messaging backend in front of a Matrix homeserver
//! and mautrix bridges. `main.rs` is the CLI; everything else lives here so tests and
//! benchmarks can build the real application.

pub mod api;
pub mod clients;
pub mod clock;
pub mod commands;
pub mod config;
pub mod crypto;
pub mod error;
pub mod events;
pub mod http_server;
#[cfg(test)]
mod layering;
pub mod logging;
pub mod metrics;
pub mod ratelimit;
#[cfg(test)]
mod repo_docs;
pub mod services;
pub mod state;
pub mod store;
pub mod workers;

use std::future::Future;
use std::time::Duration;

use poem::listener::{
    Acceptor, AcceptorExt, IntoTlsConfigStream, Listener, RustlsCertificate, RustlsConfig,
    TcpListener,
};

pub use config::Config;
pub use state::AppState;

/// How long in-flight requests get to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves the application on `config.server.listen` (HTTPS when `tls_cert` and `tls_key`
/// are set) until `shutdown` resolves; in-flight requests then get [`SHUTDOWN_GRACE`].
pub async fn serve(
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let server = &state.config.server;
    // Bound before anything else starts, so a taken address is a startup error and the
    // logged address is the real one (`listen = "127.0.0.1:0"` picks a free port).
    let tcp = TcpListener::bind(server.listen).into_acceptor().await?;
    let bound = tcp
        .local_addr()
        .first()
        .and_then(|a| a.as_socket_addr().copied())
        .unwrap_or(server.listen);
    let tls = match (&server.tls_cert, &server.tls_key) {
        (Some(cert), Some(key)) => {
            let certificate = RustlsCertificate::new()
                .cert(read_pem(cert, "CERTIFICATE-----")?)
                .key(read_pem(key, "PRIVATE KEY-----")?);
            tracing::info!(addr = %bound, "listening on https://{bound}");
            // into_stream checks the key and certificate now, not at the first handshake.
            Some(RustlsConfig::new().fallback(certificate).into_stream()?)
        }
        _ => {
            tracing::info!(addr = %bound, "listening on http://{bound}");
            None
        }
    };
    let app_shutdown = state.shutdown.clone();
    let shutdown = async move {
        shutdown.await;
        // Background tasks and open event streams end first, so in-flight requests can.
        app_shutdown.trigger();
    };
    // Mailbox names of an earlier version are sealed before anything reads or syncs mail.
    services::email::mailboxes::seal_legacy_at_start(state.context()).await;
    workers::sync::spawn(state.context().clone());
    workers::scheduler::spawn(&state);
    workers::mailbox::spawn(&state);
    // `switchboard_imap_sessions`: the IMAP client's own count of open sessions.
    metrics::global().set_imap_sessions(|| clients::mail::imap::open_sessions() as u64);
    let limits = http_server::ConnectionLimits {
        max_connections: state.config.server.max_connections,
        header_timeout: state.config.server.header_timeout.0,
        idle_timeout: state.config.server.idle_timeout.0,
    };
    services::matrix_sessions::spawn(&state);
    if let Some(addr) = state.config.metrics.listen {
        spawn_metrics_listener(addr, &state).await?;
    }
    let app = api::app(state);
    // The acceptors stay unboxed: hyper then writes each response (head and body) with one
    // vectored write on the socket itself, instead of copying the body into its buffer
    // behind poem's boxed, split stream.
    match tls {
        Some(config) => {
            http_server::serve(tcp.rustls(config), app, limits, shutdown, SHUTDOWN_GRACE).await
        }
        None => http_server::serve(tcp, app, limits, shutdown, SHUTDOWN_GRACE).await,
    }
}

/// Serves `GET /metrics` without authentication on `[metrics] listen` until shutdown.
async fn spawn_metrics_listener(
    addr: std::net::SocketAddr,
    state: &AppState,
) -> std::io::Result<()> {
    let acceptor = TcpListener::bind(addr).into_acceptor().await?;
    let bound = acceptor
        .local_addr()
        .first()
        .and_then(|a| a.as_socket_addr().copied())
        .unwrap_or(addr);
    tracing::info!(addr = %bound, "metrics listening on http://{bound}/metrics");
    if !config::MetricsConfig::listen_is_internal(bound.ip()) {
        // Only reachable with `[metrics] allow_public = true` (validation refuses it else).
        tracing::warn!(
            addr = %bound,
            "metrics are served WITHOUT authentication on a public address ([metrics] allow_public = true)"
        );
    }
    let limits = http_server::ConnectionLimits {
        max_connections: 64,
        header_timeout: state.config.server.header_timeout.0,
        idle_timeout: state.config.server.idle_timeout.0,
    };
    let app = api::metrics::standalone(state.clone());
    let stop = state.shutdown.clone();
    tokio::spawn(async move {
        let shutdown = async move { stop.wait().await };
        let _ = http_server::serve(acceptor, app, limits, shutdown, Duration::from_secs(1)).await;
    });
    Ok(())
}

/// Reads a PEM file and checks it holds the expected block, so a wrong file is a startup
/// error rather than failing TLS handshakes later.
fn read_pem(path: &std::path::Path, marker: &str) -> std::io::Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    if !String::from_utf8_lossy(&bytes).contains(marker) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{}: no PEM \"{}\" block found",
                path.display(),
                marker.trim_end_matches('-')
            ),
        ));
    }
    Ok(bytes)
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
