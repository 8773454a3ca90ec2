//! Switchboard: a self-hosted unified messaging backend in front of a Matrix homeserver
//! and mautrix bridges. `main.rs` is the CLI; everything else lives here so tests and
//! benchmarks can build the real application.

pub mod api;
pub mod commands;
pub mod config;
pub mod crypto;
pub mod error;
pub mod matrix;
pub mod ratelimit;
pub mod services;
pub mod state;
pub mod store;

use std::future::Future;
use std::time::Duration;

use poem::listener::TcpListener;
use poem::Server;

pub use config::Config;
pub use state::AppState;

/// How long in-flight requests get to finish after a shutdown signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves the application on `config.server.listen` until `shutdown` resolves; in-flight
/// requests then get [`SHUTDOWN_GRACE`] to finish.
pub async fn serve(
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = state.config.server.listen;
    let app = api::app(state);
    tracing::info!(%addr, "listening");
    Server::new(TcpListener::bind(addr))
        .run_with_graceful_shutdown(app, shutdown, Some(SHUTDOWN_GRACE))
        .await
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
