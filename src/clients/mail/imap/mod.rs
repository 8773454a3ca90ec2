//! IMAP client for the user's own mailboxes (async-imap over tokio, TLS by tokio-rustls
//! with the aws-lc-rs provider and the webpki roots). Protocol only: no cache, no HTTP.
//!
//! A mail server is untrusted input: every network step (TCP connect, TLS handshake,
//! greeting, login, each command and each response of a command) runs under `[email]
//! network_timeout`, so a server that stops answering turns into an error instead of a
//! hung request or sync task; the bytes it sends pass a bounded reader ([`guard`]) before
//! async-imap parses them; and the sessions open at once are limited ([`sessions`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_imap::types::NameAttribute;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use tokio::net::TcpStream;

use super::dial;
pub use super::uids::uid_set;
use crate::config::EmailConfig;

mod append;
mod guard;
mod messages;
mod outline;
mod parts;
mod sessions;
pub(crate) mod stream;

pub use append::append_pieces;
pub use guard::Guarded;
pub use messages::*;
pub use outline::{fetch_pieces, outline, Outline, Piece};
pub use parts::{fetch_part, structure, Part, PartKind};
pub use sessions::open_sessions;
use stream::tls;
pub use stream::MailStream;

/// The deadline of one step, from `[email] network_timeout` (set by [`connect`]; every
/// session of the process is made by it, so later commands use the same value).
static STEP_TIMEOUT_MS: AtomicU64 = AtomicU64::new(30_000);

fn step_timeout() -> Duration {
    Duration::from_millis(STEP_TIMEOUT_MS.load(Ordering::Relaxed))
}

/// How the connection is protected: implicit TLS, STARTTLS, or none (loopback and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    Tls,
    Starttls,
    None,
}

impl Security {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "tls" => Some(Self::Tls),
            "starttls" => Some(Self::Starttls),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// Where and as whom to connect (IMAP or SMTP).
#[derive(Clone, Serialize, Deserialize)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub security: Security,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImapError {
    /// The server refused the credentials (its own words).
    #[error("{0}")]
    Login(String),
    /// No connection (DNS, refused, timeout, TLS).
    #[error("{0}")]
    Unreachable(String),
    /// The server answered NO or BAD to a command (its own words).
    #[error("{0}")]
    Refused(String),
    /// The connection broke or the server spoke nonsense.
    #[error("{0}")]
    Protocol(String),
    /// The host resolves to an address this server does not connect to ([`dial`]).
    #[error("{0}")]
    NotAllowed(String),
    /// A message being appended could not be read (our side, not the server's); the
    /// connection was ended before the message was complete, so nothing was stored.
    #[error("{0}")]
    Source(String),
}

dial::from_dial_error!(ImapError);

impl From<std::io::Error> for ImapError {
    /// The bounded reader refuses with `InvalidData` (the server spoke out of bounds).
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::InvalidData {
            Self::Protocol(e.to_string())
        } else {
            Self::Unreachable(e.to_string())
        }
    }
}

impl From<async_imap::error::Error> for ImapError {
    fn from(e: async_imap::error::Error) -> Self {
        use async_imap::error::Error as E;
        match e {
            E::No(m) | E::Bad(m) => Self::Refused(m),
            E::Io(e) => Self::from(e),
            E::ConnectionLost => Self::Unreachable("connection lost".into()),
            other => Self::Protocol(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, ImapError>;

pub type Session = async_imap::Session<Guarded>;

/// Runs one network step under the deadline.
pub(crate) async fn timed<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    tokio::time::timeout(step_timeout(), f)
        .await
        .unwrap_or_else(|_| {
            Err(ImapError::Unreachable(format!(
                "{what}: no answer within {} s",
                step_timeout().as_secs_f32()
            )))
        })
}

/// Connects and logs in as `user_id`'s session. A refused login is [`ImapError::Login`]
/// with the server's words; a host `[email] allow_private_hosts` does not allow is
/// [`ImapError::NotAllowed`] (checked after resolution, and the connection goes to the
/// checked address); no free session place within the deadline is `Unreachable`.
pub async fn connect(ep: &Endpoint, cfg: &EmailConfig, user_id: &str) -> Result<Session> {
    let deadline = cfg.timeout();
    STEP_TIMEOUT_MS.store(deadline.as_millis() as u64, Ordering::Relaxed);
    let permit = sessions::acquire(
        user_id,
        cfg.max_sessions as usize,
        cfg.max_sessions_per_user as usize,
        deadline,
    )
    .await
    .ok_or_else(|| {
        ImapError::Unreachable(
            "too many IMAP sessions are open on this server; try again later".into(),
        )
    })?;
    let addrs = dial::resolve_for(
        &ep.host,
        ep.port,
        &cfg.allow_private_hosts,
        ep.security == Security::None,
    )
    .await?;
    let at = format!("{}:{}", ep.host, ep.port);
    let tcp = timed("connect", async {
        TcpStream::connect(&addrs[..])
            .await
            .map_err(|e| ImapError::Unreachable(format!("{at}: {e}")))
    })
    .await?;
    let limits = guard::Limits::for_literal(cfg.max_message_bytes() as usize);
    let stream = match ep.security {
        Security::Tls => timed("TLS handshake", tls(&ep.host, tcp)).await?,
        _ => MailStream::Plain(tcp),
    };
    let mut client = async_imap::Client::new(Guarded::new(stream, limits, Some(permit)));
    timed("greeting", greeting(&mut client)).await?;
    if ep.security == Security::Starttls {
        timed("STARTTLS", async {
            Ok(client.run_command_and_check_ok("STARTTLS", None).await?)
        })
        .await?;
        let (MailStream::Plain(tcp), limits, permit) = client.into_inner().into_parts() else {
            unreachable!("STARTTLS starts from a plain stream")
        };
        let tls = timed("TLS handshake", tls(&ep.host, tcp)).await?;
        client = async_imap::Client::new(Guarded::new(tls, limits, permit));
    }
    timed("login", async {
        client
            .login(&ep.username, &ep.password)
            .await
            .map_err(|(e, _)| match e {
                async_imap::error::Error::No(m) | async_imap::error::Error::Bad(m) => {
                    ImapError::Login(m)
                }
                other => ImapError::from(other),
            })
    })
    .await
}

async fn greeting(client: &mut async_imap::Client<Guarded>) -> Result<()> {
    match client.read_response().await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ImapError::Unreachable("closed before the greeting".into())),
        Err(e) => Err(ImapError::from(e)),
    }
}

/// Extensions the sync uses when offered.
#[derive(Debug, Clone, Copy, Default)]
pub struct Caps {
    pub idle: bool,
    pub condstore: bool,
    pub mv: bool,
    pub uidplus: bool,
}

pub async fn capabilities(s: &mut Session) -> Result<Caps> {
    let caps = timed("CAPABILITY", async { Ok(s.capabilities().await?) }).await?;
    Ok(Caps {
        idle: caps.has_str("IDLE"),
        condstore: caps.has_str("CONDSTORE") || caps.has_str("QRESYNC"),
        mv: caps.has_str("MOVE"),
        uidplus: caps.has_str("UIDPLUS"),
    })
}

/// A mailbox of the account and its SPECIAL-USE role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailboxInfo {
    pub name: String,
    /// `inbox`, `sent`, `drafts`, `trash`, `junk`, `archive`; `None` for the user's own.
    pub special: Option<&'static str>,
}

/// Longer mailbox names are not synced (no honest server needs them; a hostile one could
/// send a literal of megabytes as a name).
const MAX_MAILBOX_NAME: usize = 1000;

/// The account's selectable mailboxes, at most `max` of them (INBOX always among them;
/// the rest of a longer list is read and dropped as it streams).
pub async fn list_mailboxes(s: &mut Session, max: usize) -> Result<Vec<MailboxInfo>> {
    let mut names = timed("LIST", async { Ok(s.list(Some(""), Some("*")).await?) }).await?;
    let mut out: Vec<MailboxInfo> = Vec::new();
    while let Some(n) = timed("LIST", async { Ok(names.try_next().await?) }).await? {
        {
            if n.attributes()
                .iter()
                .any(|a| matches!(a, NameAttribute::NoSelect))
                || n.name().len() > MAX_MAILBOX_NAME
            {
                continue;
            }
            let special = if n.name().eq_ignore_ascii_case("INBOX") {
                Some("inbox")
            } else {
                n.attributes().iter().find_map(|a| match a {
                    NameAttribute::Sent => Some("sent"),
                    NameAttribute::Drafts => Some("drafts"),
                    NameAttribute::Trash => Some("trash"),
                    NameAttribute::Junk => Some("junk"),
                    NameAttribute::Archive => Some("archive"),
                    _ => None,
                })
            };
            if out.len() < max || special == Some("inbox") {
                out.push(MailboxInfo {
                    name: n.name().to_owned(),
                    special,
                });
            }
        }
    }
    if out.len() > max {
        // INBOX came after the others filled the places: it takes the last one.
        out.sort_by_key(|m| m.special != Some("inbox"));
        out.truncate(max);
    }
    Ok(out)
}

/// What SELECT told about a mailbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selected {
    pub uid_validity: u32,
    pub exists: u32,
    pub uid_next: Option<u32>,
    pub highest_modseq: Option<u64>,
}

impl Selected {
    /// Whether the mailbox may have changed between two SELECTs: another UIDVALIDITY,
    /// message count or UIDNEXT (mail added or expunged), or a higher mod-sequence
    /// (CONDSTORE: any flag change). What a server leaves out is not compared.
    pub fn differs_from(&self, before: &Selected) -> bool {
        let known_differ =
            |a: Option<u64>, b: Option<u64>| matches!((a, b), (Some(a), Some(b)) if a != b);
        self.uid_validity != before.uid_validity
            || self.exists != before.exists
            || known_differ(self.uid_next.map(u64::from), before.uid_next.map(u64::from))
            || known_differ(self.highest_modseq, before.highest_modseq)
    }
}

pub async fn select(s: &mut Session, name: &str, condstore: bool) -> Result<Selected> {
    timed("SELECT", async {
        let mb = if condstore {
            s.select_condstore(name).await?
        } else {
            s.select(name).await?
        };
        Ok(Selected {
            uid_validity: mb.uid_validity.unwrap_or(0),
            exists: mb.exists,
            uid_next: mb.uid_next,
            highest_modseq: mb.highest_modseq,
        })
    })
    .await
}
