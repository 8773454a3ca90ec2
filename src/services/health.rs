//! Dependency checks behind `GET /health`: database, cache, AI service, homeserver, and
//! the mail transport (reported, never a reason for 503).

use std::time::{Duration, Instant};

use crate::services::Context;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    Ok,
    Down,
    Disabled,
    NotConfigured,
    /// Mail only: sign-in codes go to the server log (transport `log`), not to mailboxes.
    LogOnly,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Down => "down",
            Self::Disabled => "disabled",
            Self::NotConfigured => "not_configured",
            Self::LogOnly => "log_only",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Check {
    pub status: CheckStatus,
    pub latency_ms: Option<u64>,
    pub error: Option<String>,
}

impl Check {
    fn timed(started: Instant, result: Result<(), String>) -> Self {
        let latency_ms = Some(started.elapsed().as_millis() as u64);
        match result {
            Ok(()) => Self {
                status: CheckStatus::Ok,
                latency_ms,
                error: None,
            },
            Err(error) => Self {
                status: CheckStatus::Down,
                latency_ms,
                error: Some(error),
            },
        }
    }

    fn without(status: CheckStatus, why: Option<&str>) -> Self {
        Self {
            status,
            latency_ms: None,
            error: why.map(str::to_owned),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub database: Check,
    pub cache: Check,
    pub ai: Check,
    pub matrix: Check,
    pub mail: Check,
}

impl Report {
    /// Healthy when nothing is down and every required dependency (database, cache,
    /// homeserver) is configured. The AI service is optional: `disabled` is healthy. The
    /// mail check is informational: `log_only` is a configuration choice, not an outage.
    pub fn healthy(&self) -> bool {
        let checks = [&self.database, &self.cache, &self.ai, &self.matrix];
        !checks.iter().any(|c| c.status == CheckStatus::Down)
            && [&self.database, &self.cache, &self.matrix]
                .iter()
                .all(|c| c.status != CheckStatus::NotConfigured)
    }
}

pub async fn check_all(state: &Context) -> Report {
    let (database, cache, ai, matrix) = tokio::join!(
        check_database(state),
        check_cache(state),
        check_ai(state),
        check_matrix(state)
    );
    Report {
        database,
        cache,
        ai,
        matrix,
        mail: check_mail(state),
    }
}

/// `log_only` with the `log` transport (whatever the listen address: behind a reverse
/// proxy a loopback server is public too); `ok` with SMTP, which is not contacted here
/// (a failing SMTP server shows as 500 on `POST /api/auth/code` and in the log).
fn check_mail(state: &Context) -> Check {
    match state.config.mail.transport {
        crate::config::MailTransport::Log => Check::without(
            CheckStatus::LogOnly,
            Some(
                "sign-in codes are written to the server log, not mailed (mail transport \"log\")",
            ),
        ),
        crate::config::MailTransport::Smtp => Check::without(CheckStatus::Ok, None),
    }
}

async fn check_database(state: &Context) -> Check {
    let started = Instant::now();
    let result = state
        .db(|c| {
            let n: i64 = c.query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))?;
            Ok(n)
        })
        .await;
    Check::timed(started, result.map(|_| ()).map_err(|e| e.to_string()))
}

/// Writes and reads back a value through the in-process cache.
async fn check_cache(state: &Context) -> Check {
    let started = Instant::now();
    let probe = started.elapsed().as_nanos() as u64 ^ 0x5eed;
    state.health_cache.insert("probe", probe).await;
    let result = match state.health_cache.get("probe").await {
        Some(v) if v == probe => Ok(()),
        _ => Err("cache did not return the value just written".to_owned()),
    };
    Check::timed(started, result)
}

async fn check_ai(state: &Context) -> Check {
    let Some(ai) = &state.config.ai else {
        return Check::without(CheckStatus::Disabled, None);
    };
    let started = Instant::now();
    let url = format!("{}/models", ai.url.trim_end_matches('/'));
    let mut request = state.http.get(url).timeout(Duration::from_secs(3));
    if let Some(key) = &ai.api_key {
        request = request.bearer_auth(key.expose());
    }
    let result = match request.send().await {
        Ok(resp) if resp.status().is_success() => Ok(()),
        Ok(resp) => Err(format!(
            "AI service answered HTTP {}",
            resp.status().as_u16()
        )),
        Err(e) => {
            // reqwest's text names the URL (internal host and port): log only.
            tracing::warn!(error = %e, "health: AI service unreachable");
            Err("AI service unreachable".to_owned())
        }
    };
    Check::timed(started, result)
}

async fn check_matrix(state: &Context) -> Check {
    let Some(matrix) = &state.matrix else {
        return Check::without(
            CheckStatus::NotConfigured,
            Some("no [matrix] section in the configuration"),
        );
    };
    let started = Instant::now();
    let result = matrix.versions().await.map(|_| ()).map_err(|e| {
        tracing::warn!(error = %e, "health: homeserver check failed");
        e.public_message()
    });
    Check::timed(started, result)
}
