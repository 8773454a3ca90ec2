//! IMAP client for the user's own mailboxes (async-imap over tokio, TLS by tokio-rustls
//! with the aws-lc-rs provider and the webpki roots). Protocol only: no cache, no HTTP.
//!
//! Every command runs under [`COMMAND_TIMEOUT`], so a server that stops answering turns
//! into an error instead of a hung request or sync task.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_imap::types::{Flag, NameAttribute};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls;

pub use super::uids::uid_set;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

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
}

impl From<async_imap::error::Error> for ImapError {
    fn from(e: async_imap::error::Error) -> Self {
        use async_imap::error::Error as E;
        match e {
            E::No(m) | E::Bad(m) => Self::Refused(m),
            E::Io(e) => Self::Unreachable(e.to_string()),
            E::ConnectionLost => Self::Unreachable("connection lost".into()),
            other => Self::Protocol(other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, ImapError>;

/// A plain or TLS TCP stream.
#[derive(Debug)]
pub enum MailStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for MailStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MailStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

pub type Session = async_imap::Session<MailStream>;

async fn timed<T>(what: &str, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(COMMAND_TIMEOUT, f)
        .await
        .unwrap_or_else(|_| Err(ImapError::Unreachable(format!("{what}: timed out"))))
}

fn tls_connector() -> tokio_rustls::TlsConnector {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("aws-lc-rs supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

async fn tls(host: &str, tcp: TcpStream) -> Result<MailStream> {
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| ImapError::Unreachable(format!("{host}: {e}")))?;
    let stream = tls_connector()
        .connect(name, tcp)
        .await
        .map_err(|e| ImapError::Unreachable(format!("TLS with {host}: {e}")))?;
    Ok(MailStream::Tls(Box::new(stream)))
}

/// Connects and logs in. A refused login is [`ImapError::Login`] with the server's words.
pub async fn connect(ep: &Endpoint) -> Result<Session> {
    let addr = (ep.host.as_str(), ep.port);
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
        .await
        .map_err(|_| ImapError::Unreachable(format!("{}:{}: timed out", ep.host, ep.port)))?
        .map_err(|e| ImapError::Unreachable(format!("{}:{}: {e}", ep.host, ep.port)))?;
    let stream = match ep.security {
        Security::Tls => tls(&ep.host, tcp).await?,
        _ => MailStream::Plain(tcp),
    };
    timed("login", async {
        let mut client = async_imap::Client::new(stream);
        greeting(&mut client).await?;
        if ep.security == Security::Starttls {
            client.run_command_and_check_ok("STARTTLS", None).await?;
            let MailStream::Plain(tcp) = client.into_inner() else {
                unreachable!("STARTTLS starts from a plain stream")
            };
            client = async_imap::Client::new(tls(&ep.host, tcp).await?);
        }
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

async fn greeting(client: &mut async_imap::Client<MailStream>) -> Result<()> {
    match client.read_response().await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ImapError::Unreachable("closed before the greeting".into())),
        Err(e) => Err(ImapError::Unreachable(e.to_string())),
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

pub async fn list_mailboxes(s: &mut Session) -> Result<Vec<MailboxInfo>> {
    timed("LIST", async {
        let names: Vec<_> = s.list(Some(""), Some("*")).await?.try_collect().await?;
        let mut out = Vec::new();
        for n in names {
            if n.attributes()
                .iter()
                .any(|a| matches!(a, NameAttribute::NoSelect))
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
            out.push(MailboxInfo {
                name: n.name().to_owned(),
                special,
            });
        }
        Ok(out)
    })
    .await
}

/// What SELECT told about a mailbox.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selected {
    pub uid_validity: u32,
    pub exists: u32,
    pub highest_modseq: Option<u64>,
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
            highest_modseq: mb.highest_modseq,
        })
    })
    .await
}

/// A message as fetched: UID, flags, size and the whole RFC 5322 text.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
    pub raw: Vec<u8>,
}

/// Flags of one UID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagState {
    pub uid: u32,
    pub seen: bool,
    pub flagged: bool,
}

fn flags_of(f: &async_imap::types::Fetch) -> (bool, bool) {
    let mut seen = false;
    let mut flagged = false;
    for flag in f.flags() {
        match flag {
            Flag::Seen => seen = true,
            Flag::Flagged => flagged = true,
            _ => {}
        }
    }
    (seen, flagged)
}

/// UIDs of every message in the selected mailbox.
pub async fn all_uids(s: &mut Session) -> Result<HashSet<u32>> {
    timed("UID SEARCH", async { Ok(s.uid_search("ALL").await?) }).await
}

/// Whole messages by UID set (`BODY.PEEK[]`: fetching does not mark them read).
pub async fn fetch_messages(s: &mut Session, uid_set: &str) -> Result<Vec<Fetched>> {
    timed("UID FETCH", async {
        let fetches: Vec<_> = s
            .uid_fetch(uid_set, "(UID FLAGS BODY.PEEK[])")
            .await?
            .try_collect()
            .await?;
        Ok(fetches
            .iter()
            .filter_map(|f| {
                let (seen, flagged) = flags_of(f);
                Some(Fetched {
                    uid: f.uid?,
                    seen,
                    flagged,
                    raw: f.body()?.to_vec(),
                })
            })
            .collect())
    })
    .await
}

/// Flags of the messages in `uid_set`; with `changed_since` (CONDSTORE) only those changed
/// after that modification sequence.
pub async fn fetch_flags(
    s: &mut Session,
    uid_set: &str,
    changed_since: Option<u64>,
) -> Result<Vec<FlagState>> {
    let query = match changed_since {
        Some(m) => format!("(UID FLAGS) (CHANGEDSINCE {m})"),
        None => "(UID FLAGS)".to_owned(),
    };
    timed("UID FETCH FLAGS", async {
        let fetches: Vec<_> = s.uid_fetch(uid_set, &query).await?.try_collect().await?;
        Ok(fetches
            .iter()
            .filter_map(|f| {
                let (seen, flagged) = flags_of(f);
                Some(FlagState {
                    uid: f.uid?,
                    seen,
                    flagged,
                })
            })
            .collect())
    })
    .await
}

/// `UID STORE <set> +FLAGS|-FLAGS (<flag>)`.
pub async fn store_flag(s: &mut Session, uid_set: &str, add: bool, flag: &str) -> Result<()> {
    let op = if add {
        "+FLAGS.SILENT"
    } else {
        "-FLAGS.SILENT"
    };
    timed("UID STORE", async {
        let _: Vec<_> = s
            .uid_store(uid_set, format!("{op} ({flag})"))
            .await?
            .try_collect()
            .await?;
        Ok(())
    })
    .await
}

/// Moves messages to another mailbox (MOVE when offered, else COPY + delete).
pub async fn move_uids(s: &mut Session, caps: Caps, uid_set: &str, to: &str) -> Result<()> {
    if caps.mv {
        return timed("UID MOVE", async { Ok(s.uid_mv(uid_set, to).await?) }).await;
    }
    copy_uids(s, uid_set, to).await?;
    expunge_uids(s, caps, uid_set).await
}

pub async fn copy_uids(s: &mut Session, uid_set: &str, to: &str) -> Result<()> {
    timed("UID COPY", async { Ok(s.uid_copy(uid_set, to).await?) }).await
}

/// Deletes messages for good: `\Deleted`, then UID EXPUNGE (UIDPLUS) or EXPUNGE.
pub async fn expunge_uids(s: &mut Session, caps: Caps, uid_set: &str) -> Result<()> {
    store_flag(s, uid_set, true, "\\Deleted").await?;
    timed("EXPUNGE", async {
        if caps.uidplus {
            let _: Vec<_> = s.uid_expunge(uid_set).await?.try_collect().await?;
        } else {
            let _: Vec<_> = s.expunge().await?.try_collect().await?;
        }
        Ok(())
    })
    .await
}

pub async fn append(s: &mut Session, mailbox: &str, flags: &str, raw: &[u8]) -> Result<()> {
    timed("APPEND", async {
        Ok(s.append(mailbox, Some(flags), None, raw).await?)
    })
    .await
}

pub async fn create_mailbox(s: &mut Session, name: &str) -> Result<()> {
    timed("CREATE", async { Ok(s.create(name).await?) }).await?;
    // Subscribing is a courtesy for other clients; a refusal changes nothing here.
    let _ = timed("SUBSCRIBE", async { Ok(s.subscribe(name).await?) }).await;
    Ok(())
}

/// Waits in IDLE on the selected mailbox until the server reports a change (true), the
/// timeout passes or `wake` resolves (false). Returns the session for further commands.
pub async fn idle(
    s: Session,
    timeout: Duration,
    wake: impl std::future::Future<Output = ()>,
) -> Result<(Session, bool)> {
    let mut handle = s.idle();
    timed("IDLE", async { Ok(handle.init().await?) }).await?;
    let changed = {
        let (fut, stop) = handle.wait_with_timeout(timeout);
        tokio::pin!(fut);
        tokio::pin!(wake);
        let res = tokio::select! {
            r = &mut fut => r,
            _ = &mut wake => {
                drop(stop);
                fut.await
            }
        };
        matches!(res?, async_imap::extensions::idle::IdleResponse::NewData(_))
    };
    let s = timed("DONE", async { Ok(handle.done().await?) }).await?;
    Ok((s, changed))
}

pub async fn logout(mut s: Session) {
    let _ = tokio::time::timeout(Duration::from_secs(5), s.logout()).await;
}
