//! Request and response shapes of the e-mail routes.

use chrono::{DateTime, Utc};
use poem_openapi::{Enum, Object};

use crate::services::email::accounts::Account;
use crate::services::email::threads::{Message, Thread};
use crate::services::email::{AttachmentMeta, Person};
use crate::services::scheduled::to_time;

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "EmailSecurity", rename_all = "lowercase")]
pub enum Security {
    /// Implicit TLS (IMAP 993, SMTP 465).
    Tls,
    /// Plain connection upgraded with STARTTLS (IMAP 143, SMTP 587).
    Starttls,
    /// No TLS: for a server on the same host or a trusted network only.
    None,
}

impl Security {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tls => "tls",
            Self::Starttls => "starttls",
            Self::None => "none",
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailServer", rename_all = "camelCase")]
pub struct ServerRequest {
    /// Host name or IP address.
    pub host: String,
    /// 1 to 65535.
    pub port: u16,
    pub security: Security,
    /// Login name (required for IMAP; for SMTP, absent or empty means no AUTH).
    pub username: Option<String>,
    /// Stored sealed under the user's data key; never returned.
    pub password: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAccountCreateRequest", rename_all = "camelCase")]
pub struct AccountCreateRequest {
    /// The mailbox's address (the `From` of what is sent with it).
    pub email: String,
    /// Up to 255 characters.
    pub display_name: Option<String>,
    pub imap: ServerRequest,
    pub smtp: ServerRequest,
}

#[derive(Debug, Clone, Copy, Enum)]
#[oai(rename = "EmailAccountStatus", rename_all = "snake_case")]
pub enum AccountStatus {
    /// The last sync succeeded.
    Ok,
    /// The server refused the stored credentials (see `error`).
    AuthFailed,
    /// The server could not be reached (see `error`); cached mail stays readable.
    Unreachable,
    /// The first sync, or a fetch of older mail a client paged into, is running (see
    /// `progress`).
    Syncing,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailSyncProgress")]
pub struct SyncProgress {
    /// Messages fetched so far in the mailbox being synced.
    pub fetched: u64,
    /// Messages to fetch in it (at most `[email] first_sync_limit` on a first sync).
    pub total: u64,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAccount", rename_all = "camelCase")]
pub struct AccountView {
    pub id: String,
    pub email: String,
    pub display_name: Option<String>,
    pub status: AccountStatus,
    /// End of the last successful sync; null before the first.
    pub last_sync_at: Option<DateTime<Utc>>,
    /// The last failure, in the server's words; null when the last sync succeeded.
    pub error: Option<String>,
    /// Present while a mailbox is being fetched.
    pub progress: Option<SyncProgress>,
    /// The user's mail storage on this server (every account together): new mail beyond
    /// `limitBytes` (`[email] quota_mb`) is left on the mail server and `error` says so.
    pub quota: MailQuota,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailQuota", rename_all = "camelCase")]
pub struct MailQuota {
    /// Bytes of mail cached for the user.
    pub used_bytes: u64,
    pub limit_bytes: u64,
}

impl From<Account> for AccountView {
    fn from(a: Account) -> Self {
        Self {
            status: match a.status.as_str() {
                "ok" => AccountStatus::Ok,
                "auth_failed" => AccountStatus::AuthFailed,
                "unreachable" => AccountStatus::Unreachable,
                _ => AccountStatus::Syncing,
            },
            id: a.id,
            email: a.email,
            display_name: a.display_name,
            last_sync_at: a.last_sync_at.map(to_time),
            error: a.error,
            progress: a
                .progress
                .map(|(fetched, total)| SyncProgress { fetched, total }),
            quota: MailQuota {
                used_bytes: a.quota.0,
                limit_bytes: a.quota.1,
            },
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAccountList")]
pub struct AccountList {
    pub accounts: Vec<AccountView>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailPerson")]
pub struct PersonView {
    /// Display name; null when the header gives none.
    pub name: Option<String>,
    pub email: String,
}

impl From<Person> for PersonView {
    fn from(p: Person) -> Self {
        Self {
            name: p.name,
            email: p.email,
        }
    }
}

fn people(p: Vec<Person>) -> Vec<PersonView> {
    p.into_iter().map(Into::into).collect()
}

#[derive(Debug, Object)]
#[oai(rename = "EmailThread", rename_all = "camelCase")]
pub struct ThreadView {
    /// Switchboard's own id, stable across restarts and re-syncs.
    pub id: String,
    pub account_id: String,
    /// The subject of the first message.
    pub subject: String,
    /// The start of the latest message's text.
    pub snippet: String,
    /// Everyone in From, To and Cc of its messages, once each.
    pub participants: Vec<PersonView>,
    pub message_count: u32,
    /// Oldest first.
    pub message_ids: Vec<String>,
    /// Whether a message lacks `\Seen`.
    pub unread: bool,
    /// Whether a message has `\Flagged`.
    pub starred: bool,
    /// Ids of the labels (mailboxes) holding its messages.
    pub labels: Vec<String>,
    pub last_message_at: DateTime<Utc>,
}

impl From<Thread> for ThreadView {
    fn from(t: Thread) -> Self {
        Self {
            message_count: t.message_ids.len() as u32,
            id: t.id,
            account_id: t.account_id,
            subject: t.subject,
            snippet: t.snippet,
            participants: people(t.participants),
            message_ids: t.message_ids,
            unread: t.unread,
            starred: t.starred,
            labels: t.labels,
            last_message_at: to_time(t.last_message_at),
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailThreadList", rename_all = "camelCase")]
pub struct ThreadList {
    /// Latest activity first.
    pub threads: Vec<ThreadView>,
    /// Pass as `cursor` for the next page; null on the last.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "EmailAttachment", rename_all = "camelCase")]
pub struct AttachmentView {
    /// Position for `GET /api/email/messages/{id}/attachments/{index}`.
    pub index: u32,
    pub filename: Option<String>,
    pub content_type: String,
    /// Bytes, decoded.
    pub size: u64,
}

impl From<AttachmentMeta> for AttachmentView {
    fn from(a: AttachmentMeta) -> Self {
        Self {
            index: a.index,
            filename: a.filename,
            content_type: a.content_type,
            size: a.size,
        }
    }
}

#[derive(Debug, Object)]
#[oai(rename = "EmailMessage", rename_all = "camelCase")]
pub struct MessageView {
    pub id: String,
    pub thread_id: String,
    pub account_id: String,
    pub from: Option<PersonView>,
    pub to: Vec<PersonView>,
    pub cc: Vec<PersonView>,
    pub subject: String,
    /// From the `Date` header (the time it was cached when absent).
    pub date: DateTime<Utc>,
    /// The text/plain body; null when there is none.
    pub text: Option<String>,
    /// The text/html body, sanitised: no scripts, event handlers, forms, frames, objects,
    /// `<style>` blocks or `javascript:`/`data:` URLs; inline styles keep typographic and
    /// box properties only; links carry `rel="noopener noreferrer"`. Remote images are
    /// kept (loading them tells the sender the mail was opened: load them on request).
    /// Null when the mail has no HTML part.
    pub html: Option<String>,
    pub labels: Vec<String>,
    pub unread: bool,
    pub starred: bool,
    pub attachments: Vec<AttachmentView>,
    /// True when the mail is larger than `[email] max_message_mb`: only its header and
    /// the first part of its body (256 KiB) are cached and shown, and attachments beyond
    /// that part cannot be downloaded.
    pub truncated: bool,
}

impl From<Message> for MessageView {
    fn from(m: Message) -> Self {
        Self {
            id: m.id,
            thread_id: m.thread_id,
            account_id: m.account_id,
            from: m.header.from.map(Into::into),
            to: people(m.header.to),
            cc: people(m.header.cc),
            subject: m.header.subject,
            date: to_time(m.date),
            text: m.body.text,
            html: m.body.html,
            labels: m.labels,
            unread: m.unread,
            starred: m.starred,
            truncated: m.body.truncated,
            attachments: m.body.attachments.into_iter().map(Into::into).collect(),
        }
    }
}

#[path = "views_requests.rs"]
mod requests;
pub use requests::*;
