//! Checks of relations between keys that serde cannot express.

use super::*;

impl Config {
    /// Checks relations between keys that serde cannot express, section by section in a
    /// fixed order (the first problem found is the one reported).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check_server()?;
        self.check_durations()?;
        self.check_amounts()?;
        self.check_mail()?;
        self.check_matrix_and_bridges()?;
        if let Some(ai) = &self.ai {
            check_http_url("ai.url", &ai.url)?;
            let t = ai.timeout.0;
            if t < Duration::from_secs(1) || t > Duration::from_secs(600) {
                return Err(ConfigError::key("ai.timeout", "must be from 1s to 10m"));
            }
        }
        if let Some(push) = &self.push {
            push.validate()?;
        }
        self.check_metrics()?;
        self.log
            .level
            .parse::<tracing_subscriber::EnvFilter>()
            .map_err(|e| ConfigError::key("log.level", e.to_string()))?;
        Ok(())
    }

    /// `[server]`: the public URL, TLS files given in pairs, the listener's own checks.
    fn check_server(&self) -> Result<(), ConfigError> {
        if let Some(url) = &self.server.base_url {
            check_http_url("server.base_url", url)?;
        }
        if self.server.tls_cert.is_some() != self.server.tls_key.is_some() {
            return Err(ConfigError::key(
                "server.tls_cert",
                "tls_cert and tls_key must be set together",
            ));
        }
        self.server.validate()
    }

    /// Every duration that means "wait this long" must be longer than zero.
    fn check_durations(&self) -> Result<(), ConfigError> {
        for (key, d) in [
            ("auth.access_token_ttl", self.auth.access_token_ttl),
            ("auth.refresh_token_ttl", self.auth.refresh_token_ttl),
            ("auth.code_ttl", self.auth.code_ttl),
            ("rate_limit.window", self.rate_limit.window),
            ("email.poll_interval", self.email.poll_interval),
            ("email.network_timeout", self.email.network_timeout),
            ("media.upload_timeout", self.media.upload_timeout),
        ] {
            if d.0.is_zero() {
                return Err(ConfigError::key(key, "must be longer than zero"));
            }
        }
        Ok(())
    }

    /// Sizes, counts and budgets: at least 1 (a zero would refuse everything), and the
    /// mail sizes at most 512 MB.
    fn check_amounts(&self) -> Result<(), ConfigError> {
        for (key, mb) in [
            ("media.max_download_mb", self.media.max_download_mb),
            ("media.max_upload_mb", self.media.max_upload_mb),
            (
                "media.max_concurrent_uploads",
                self.media.max_concurrent_uploads,
            ),
            ("media.max_spool_mb", self.media.max_spool_mb),
            ("media.preview_cache_mb", self.media.preview_cache_mb),
        ] {
            if mb == 0 {
                return Err(ConfigError::key(key, "must be at least 1"));
            }
        }
        if self.auth.max_code_failures == 0 {
            return Err(ConfigError::key(
                "auth.max_code_failures",
                "must be at least 1",
            ));
        }
        self.check_budgets()
    }

    /// The request budgets and the e-mail sizes and counts: at least 1; the mail sizes at
    /// most 512 MB.
    fn check_budgets(&self) -> Result<(), ConfigError> {
        let e = &self.email;
        for (key, n) in [
            ("rate_limit.requests", self.rate_limit.requests),
            (
                "rate_limit.static_requests",
                self.rate_limit.static_requests,
            ),
            (
                "rate_limit.new_chats_per_hour",
                self.rate_limit.new_chats_per_hour,
            ),
            (
                "rate_limit.previews_per_minute",
                self.rate_limit.previews_per_minute,
            ),
            ("email.max_message_mb", e.max_message_mb),
            ("email.large_message_kb", e.large_message_kb),
            ("email.max_sessions", e.max_sessions),
            ("email.max_sessions_per_user", e.max_sessions_per_user),
            ("email.fetch_batch_mb", e.fetch_batch_mb),
            ("email.round_max_messages", e.round_max_messages),
            ("email.round_max_mb", e.round_max_mb),
            ("email.max_mailboxes", e.max_mailboxes),
            ("email.max_messages_per_account", e.max_messages_per_account),
            ("email.quota_mb", e.quota_mb),
            ("email.max_attachments_mb", e.max_attachments_mb),
        ] {
            if n == 0 {
                return Err(ConfigError::key(key, "must be at least 1"));
            }
        }
        if e.max_message_mb > 512 {
            return Err(ConfigError::key(
                "email.max_message_mb",
                "must be at most 512",
            ));
        }
        if e.max_attachments_mb > 512 {
            return Err(ConfigError::key(
                "email.max_attachments_mb",
                "must be at most 512",
            ));
        }
        Ok(())
    }

    /// `[mail]`: an SMTP host for the SMTP transport, a valid From mailbox.
    fn check_mail(&self) -> Result<(), ConfigError> {
        if self.mail.transport == MailTransport::Smtp && self.mail.smtp_host.is_none() {
            return Err(ConfigError::key(
                "mail.smtp_host",
                "required when mail.transport = \"smtp\"",
            ));
        }
        if self.mail.from.parse::<lettre::message::Mailbox>().is_err() {
            return Err(ConfigError::key(
                "mail.from",
                format!("{:?} is not a valid mailbox", self.mail.from),
            ));
        }
        Ok(())
    }

    /// `[matrix]` and `[bridges.*]`: URLs, the server name, bot IDs and ghost prefixes.
    fn check_matrix_and_bridges(&self) -> Result<(), ConfigError> {
        if let Some(matrix) = &self.matrix {
            check_http_url("matrix.homeserver_url", &matrix.homeserver_url)?;
            if matrix.server_name.trim().is_empty() {
                return Err(ConfigError::key("matrix.server_name", "must not be empty"));
            }
        }
        for (name, bridge) in self.bridges.iter() {
            if let Some(url) = &bridge.provisioning_url {
                check_http_url(&format!("bridges.{name}.provisioning_url"), url)?;
            }
            if let Some(bot) = &bridge.bot_user_id {
                if matrix_ids::server_of(bot).is_none() {
                    return Err(ConfigError::key(
                        &format!("bridges.{name}.bot_user_id"),
                        format!("{bot:?} is not a Matrix user ID (@localpart:server)"),
                    ));
                }
            }
            if let Some(prefix) = &bridge.ghost_prefix {
                matrix_ids::check_ghost_prefix(prefix)
                    .map_err(|m| ConfigError::key(&format!("bridges.{name}.ghost_prefix"), m))?;
            }
        }
        Ok(())
    }

    /// `[metrics]`: the unauthenticated listener stays on an internal address unless the
    /// operator says otherwise.
    fn check_metrics(&self) -> Result<(), ConfigError> {
        if let Some(addr) = self.metrics.listen {
            if !self.metrics.allow_public && !MetricsConfig::listen_is_internal(addr.ip()) {
                return Err(ConfigError::key(
                    "metrics.listen",
                    format!(
                        "{addr} is not a loopback or private address: the metrics there need no \
                         authentication; use one (e.g. 127.0.0.1:9100) or set \
                         metrics.allow_public = true"
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl PushConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if !self.apns() {
            for (key, set) in [
                ("push.key_id", self.key_id.is_some()),
                ("push.team_id", self.team_id.is_some()),
                ("push.bundle_id", self.bundle_id.is_some()),
                ("push.endpoint", self.endpoint.is_some()),
            ] {
                if set {
                    return Err(ConfigError::key(
                        key,
                        "is an APNs setting: set push.key_file too (or remove it)",
                    ));
                }
            }
        }
        if let Some(contact) = &self.contact {
            let ok = reqwest::Url::parse(contact)
                .is_ok_and(|u| matches!(u.scheme(), "mailto" | "https"));
            if !ok {
                return Err(ConfigError::key(
                    "push.contact",
                    "must be a mailto: or https: URL (e.g. \"mailto:admin@example.org\")",
                ));
            }
        }
        let t = self.timeout.0;
        if t < Duration::from_secs(1) || t > Duration::from_secs(60) {
            return Err(ConfigError::key("push.timeout", "must be from 1s to 60s"));
        }
        Ok(())
    }
}

pub(super) fn check_http_url(key: &str, url: &str) -> Result<(), ConfigError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| ConfigError::key(key, format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ConfigError::key(key, "must be an http:// or https:// URL"));
    }
    Ok(())
}

impl MetricsConfig {
    /// Whether the unauthenticated metrics listener stays off the public internet on
    /// `ip`: loopback, private (RFC 1918, 100.64/10 shared, IPv6 unique local) or
    /// link-local. The unspecified `0.0.0.0` / `::` is not: it listens on every interface.
    pub fn listen_is_internal(ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr;
        let v4 = |ip: std::net::Ipv4Addr| {
            let o = ip.octets();
            ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
        };
        match ip {
            IpAddr::V4(ip) => v4(ip),
            IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                Some(mapped) => v4(mapped),
                None => {
                    let first = ip.segments()[0];
                    ip.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
                }
            },
        }
    }
}
