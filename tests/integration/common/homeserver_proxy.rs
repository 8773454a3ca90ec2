//! A forwarding proxy in front of the real Synapse, for what Synapse itself cannot be made
//! to do on cue: refuse one route, or answer one route late (after it has done the work).

use std::time::Duration;

use poem::http::StatusCode;

use super::synapse::synapse;
use super::{serve_standin, MatrixMode, TestApp, TestConfig};

/// What the proxy does with one request (method, path and query).
pub enum Rule {
    /// Forward it and answer at once.
    Forward,
    /// Answer 403 `M_FORBIDDEN` without forwarding.
    Refuse,
    /// Forward it, then hold Synapse's answer this long before passing it on.
    AnswerLate(Duration),
}

/// Starts the proxy; its URL and the handle that keeps it running.
pub fn homeserver_proxy(
    rule: impl Fn(&str, &str) -> Rule + Send + Sync + 'static,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let rule = std::sync::Arc::new(rule);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let http = reqwest::Client::new();
    let upstream = synapse().base_url.clone();
    let ep = poem::endpoint::make(move |req: poem::Request| {
        let (http, upstream, rule) = (http.clone(), upstream.clone(), rule.clone());
        async move {
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            let late = match rule(req.method().as_str(), &path) {
                Rule::Refuse => {
                    return poem::Response::builder()
                        .status(StatusCode::FORBIDDEN)
                        .content_type("application/json")
                        .body(r#"{"errcode":"M_FORBIDDEN","error":"refused by the test"}"#)
                }
                Rule::Forward => None,
                Rule::AnswerLate(d) => Some(d),
            };
            let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).unwrap();
            let mut out = http.request(method, format!("{upstream}{path}"));
            for (k, v) in req.headers() {
                if k != "host" && k != "content-length" {
                    out = out.header(k.as_str(), v.as_bytes());
                }
            }
            let body = req.into_body().into_vec().await.unwrap_or_default();
            let answer = match out.body(body).send().await {
                Ok(r) => {
                    let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
                    let bytes = r.bytes().await.unwrap_or_default();
                    poem::Response::builder()
                        .status(status)
                        .content_type("application/json")
                        .body(bytes.to_vec())
                }
                Err(_) => poem::Response::builder()
                    .status(StatusCode::BAD_GATEWAY)
                    .finish(),
            };
            if let Some(d) = late {
                tokio::time::sleep(d).await;
            }
            answer
        }
    });
    let (stop, _task) = serve_standin(listener, ep);
    (format!("http://127.0.0.1:{port}"), stop)
}

/// A server (with mail) whose homeserver is reached through `proxy_url`.
pub async fn start_behind(proxy_url: &str) -> TestApp {
    let s = synapse();
    let matrix = format!(
        "\n[matrix]\nhomeserver_url = \"{proxy_url}\"\nserver_name = \"{}\"\nregistration_shared_secret = \"{}\"\n",
        s.server_name, s.shared_secret
    );
    TestApp::start_with(TestConfig {
        matrix: MatrixMode::Missing,
        extra: format!("{}{matrix}", super::mail::smtp_config()),
    })
    .await
}
