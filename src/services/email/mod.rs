//! E-mail (docs/design.md): the user's own mailboxes over IMAP and SMTP.
//!
//! The cache (store::email) is what lists and reads come from; actions go to the IMAP
//! server first and then re-sync the touched mailboxes into the cache. Everything the
//! messages say (addresses, subject, snippet, bodies) and the account credentials are
//! sealed under the user's data key with AAD naming table, column and row. Threading uses
//! keyed hashes of the Message-IDs (HMAC under a key derived from the data key), so the
//! database holds no plaintext ids either, and `DELETE /api/keys` shreds them too.
//! Mailbox (label) names are sealed the same way and compared by their own keyed hash
//! ([`mailboxes`]); the API still names a label by its name.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::clients::mail::imap::Endpoint;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::conversations::require_readable;
use crate::services::users;
use crate::services::Context;

pub mod accounts;
pub mod actions;
pub mod addresses;
pub mod backfill;
pub mod budget;
pub mod compose;
pub mod deliver;
pub mod draft_save;
pub mod draft_send;
pub mod drafts;
pub mod fetch;
pub mod file_parts;
pub mod forward;
pub mod html;
mod ingest;
pub mod mailboxes;
pub mod mime;
pub mod outbox;
mod outline;
pub mod parse;
pub mod part_decode;
pub mod rekey;
pub mod send;
pub mod signatures;
pub mod spool;
pub mod sync;
pub mod thread_query;
pub mod threads;
pub mod uploads;
pub mod wire;

/// A sync's failure: the mail server's (which says how the account stands) or ours.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Imap(#[from] crate::clients::mail::imap::ImapError),
    #[error(transparent)]
    App(#[from] AppError),
}

impl From<SyncError> for AppError {
    fn from(e: SyncError) -> Self {
        match e {
            SyncError::Imap(e) => crate::services::upstream::imap_error(e),
            SyncError::App(e) => e,
        }
    }
}

/// Process-wide e-mail state: the sync supervisor's wake-up, per-account locks and
/// wake-ups, the progress of fetches and what older mail the server still holds. Every
/// per-account entry goes with [`Runtime::forget`] when the account is removed.
#[derive(Default)]
pub struct Runtime {
    /// Wakes the mailbox sync supervisor (a new account).
    pub wakeup: tokio::sync::Notify,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Wakes one account's sync task (removed, or asked to re-sync).
    pokes: Mutex<HashMap<String, Arc<tokio::sync::Notify>>>,
    progress: Mutex<HashMap<String, (u64, u64)>>,
    /// Per account, per mailbox id: messages on the server older than what is cached (left
    /// by the bounded first sync), as the last sync of that mailbox counted them.
    older: Mutex<HashMap<String, HashMap<String, u64>>>,
    /// Per account: back-fills done so far, so pagers that waited for one skip their own.
    backfills: Mutex<HashMap<String, u64>>,
    /// Per account: large messages `(mailbox id, UIDVALIDITY, UID)` whose reading from the
    /// structure failed on the connection (a response the IMAP parser refused ends the
    /// session); the next sync fetches them whole. At most [`WHOLE_ONLY_MAX`] per account.
    whole_only: Mutex<HashMap<String, std::collections::HashSet<MailAt>>>,
}

/// A message's place on the server: `(mailbox id, UIDVALIDITY, UID)`.
pub type MailAt = (String, i64, u32);

/// Large messages per account remembered as to be fetched whole (past it the list starts
/// over: a message would then take the structure path once more).
const WHOLE_ONLY_MAX: usize = 10_000;

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    /// The account's lock (see `sync::account_lock`).
    pub fn lock_handle(&self, account_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        locked(&self.locks)
            .entry(account_id.to_owned())
            .or_default()
            .clone()
    }

    pub fn poke_handle(&self, account_id: &str) -> Arc<tokio::sync::Notify> {
        locked(&self.pokes)
            .entry(account_id.to_owned())
            .or_default()
            .clone()
    }

    /// Wakes the account's sync task, if one is running (never adds an entry).
    pub fn poke(&self, account_id: &str) {
        if let Some(p) = locked(&self.pokes).get(account_id) {
            p.notify_one();
        }
    }

    pub fn set_progress(&self, account_id: &str, done: u64, total: u64) {
        if total == 0 {
            return;
        }
        locked(&self.progress).insert(account_id.to_owned(), (done, total));
    }

    pub fn clear_progress(&self, account_id: &str) {
        locked(&self.progress).remove(account_id);
    }

    /// `(fetched, to fetch)` of a mailbox being synced right now.
    pub fn progress(&self, account_id: &str) -> Option<(u64, u64)> {
        locked(&self.progress).get(account_id).copied()
    }

    pub fn set_older(&self, account_id: &str, mailbox_id: &str, count: u64) {
        locked(&self.older)
            .entry(account_id.to_owned())
            .or_default()
            .insert(mailbox_id.to_owned(), count);
    }

    /// Keeps only these mailboxes of the account (the others are gone from the server).
    pub fn retain_mailboxes(&self, account_id: &str, ids: &[String]) {
        if let Some(m) = locked(&self.older).get_mut(account_id) {
            m.retain(|id, _| ids.contains(id));
        }
    }

    /// Older messages left on the server in the mailbox (0 when unknown).
    pub fn older(&self, account_id: &str, mailbox_id: &str) -> u64 {
        locked(&self.older)
            .get(account_id)
            .and_then(|m| m.get(mailbox_id))
            .copied()
            .unwrap_or(0)
    }

    pub fn backfills(&self, account_id: &str) -> u64 {
        locked(&self.backfills)
            .get(account_id)
            .copied()
            .unwrap_or(0)
    }

    pub fn backfill_done(&self, account_id: &str) {
        *locked(&self.backfills)
            .entry(account_id.to_owned())
            .or_default() += 1;
    }

    /// Remembers that message `at` is to be fetched whole.
    pub fn mark_whole_only(&self, account_id: &str, at: MailAt) {
        let mut all = locked(&self.whole_only);
        let set = all.entry(account_id.to_owned()).or_default();
        if set.len() >= WHOLE_ONLY_MAX {
            set.clear();
        }
        set.insert(at);
    }

    pub fn is_whole_only(&self, account_id: &str, at: &MailAt) -> bool {
        locked(&self.whole_only)
            .get(account_id)
            .is_some_and(|s| s.contains(at))
    }

    /// Drops every entry of a removed account.
    pub fn forget(&self, account_id: &str) {
        locked(&self.whole_only).remove(account_id);
        locked(&self.locks).remove(account_id);
        locked(&self.pokes).remove(account_id);
        locked(&self.progress).remove(account_id);
        locked(&self.older).remove(account_id);
        locked(&self.backfills).remove(account_id);
    }

    /// Whether any entry of the account is kept.
    pub fn tracks(&self, account_id: &str) -> bool {
        locked(&self.locks).contains_key(account_id)
            || locked(&self.pokes).contains_key(account_id)
            || locked(&self.progress).contains_key(account_id)
            || locked(&self.older).contains_key(account_id)
            || locked(&self.backfills).contains_key(account_id)
            || locked(&self.whole_only).contains_key(account_id)
    }
}

/// A name and an address, as in `From`, `To`, `Cc`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Person {
    pub name: Option<String>,
    pub email: String,
}

/// The sealed header document of a cached message.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Header {
    pub from: Option<Person>,
    pub to: Vec<Person>,
    pub cc: Vec<Person>,
    pub subject: String,
    pub message_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub references: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttachmentMeta {
    pub index: u32,
    pub filename: Option<String>,
    pub content_type: String,
    pub size: u64,
}

/// The sealed body document of a cached message.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Body {
    pub text: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<AttachmentMeta>,
    /// Only the header and the first part of the body are cached: the mail is larger
    /// than `[email] max_message_mb`.
    #[serde(default)]
    pub truncated: bool,
}

/// IMAP and SMTP settings of an account, sealed as one document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub imap: Endpoint,
    pub smtp: Endpoint,
}

pub const T_ACCOUNTS: &str = "email_accounts";
/// What the mailbox sync, sending and actions need to know about one account.
#[derive(Clone)]
pub struct AccountCtx {
    pub account_id: String,
    pub user_id: String,
    pub dek: DataKey,
    pub settings: Settings,
}

pub const T_MESSAGES: &str = "email_messages";

pub fn seal_json<T: Serialize>(dek: &DataKey, v: &T, table: &str, col: &str, id: &str) -> Vec<u8> {
    let json = serde_json::to_vec(v).unwrap_or_default();
    dek.seal(&json, &Aad::new(table, col, id))
}

pub fn open_json<T: for<'a> Deserialize<'a>>(
    dek: &DataKey,
    sealed: &[u8],
    table: &str,
    col: &str,
    id: &str,
) -> AppResult<T> {
    let json = dek.open(sealed, &Aad::new(table, col, id))?;
    serde_json::from_slice(&json).map_err(AppError::internal)
}

/// Keyed hash of a Message-ID or thread key: stable for the user, meaningless without
/// their data key. The HMAC key is a sub-key derived from the data key (HKDF, its own
/// label), so the AEAD key itself keys nothing else (version 2; [`rekey`] moves hashes
/// made before).
pub fn ref_hash(dek: &DataKey, kind: &str, value: &str) -> String {
    ref_hash_with(&dek.derive(REF_KEY_LABEL), kind, value)
}

const REF_KEY_LABEL: &str = "switchboard-email-ref-v2";

fn ref_hash_with(key: &[u8], kind: &str, value: &str) -> String {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(b"switchboard-email-ref-v1\0");
    mac.update(kind.as_bytes());
    mac.update(b"\0");
    mac.update(value.trim().to_lowercase().as_bytes());
    hex::encode(&mac.finalize().into_bytes()[..16])
}

/// The user's data key for a route (409 `NO_SIGNING_KEY` after `DELETE /api/keys`).
pub async fn user_key(state: &Context, user_id: &str) -> AppResult<DataKey> {
    let user = users::load(state, user_id).await?;
    require_readable(&user)?;
    users::data_key(&state.master, &user)
}

pub fn now_ms() -> i64 {
    crate::services::scheduled::now_ms()
}

/// A UUID path parameter; an id that is not one cannot name anything: 404.
pub fn parse_id(what: &str, id: &str) -> AppResult<String> {
    uuid::Uuid::parse_str(id.trim())
        .map(|u| u.to_string())
        .map_err(|_| AppError::not_found(what))
}

/// Publishes `email.updated` `{accountId, threadId}`.
pub fn announce(state: &Context, user_id: &str, account_id: &str, thread_id: &str) {
    state.events.publish(
        user_id,
        crate::events::ChangeEvent::EmailUpdated {
            account_id: account_id.to_owned(),
            thread_id: thread_id.to_owned(),
        },
    );
}
