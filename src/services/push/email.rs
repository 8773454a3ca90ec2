//! Pushes for mail: one per new thread in an inbox (`type: "email"`), under the same
//! rules as messages where they apply (previews; a thread already seen is not pushed).
//!
//! "New" is a thread of one unseen message in INBOX, dated within the last hour (a first
//! sync of an old mailbox must not push its history); each thread is pushed once per run
//! of the server.

use std::time::{Duration, Instant};

use super::payload::{topic, Payload, TTL_SECS};
use super::queue::enqueue;
use super::{now_ms, open, Opened};
use crate::clients::webpush::{Delivery, Urgency};
use crate::services::email::{Header, T_MESSAGES};
use crate::services::Context;
use crate::store::push_subscriptions as store;

/// Mail older than this (by its date) is not pushed.
const MAX_AGE_MS: i64 = 3600 * 1000;

pub(crate) fn seen_threads() -> moka::sync::Cache<String, ()> {
    moka::sync::Cache::builder()
        .max_capacity(100_000)
        .time_to_live(Duration::from_secs(24 * 3600))
        .build()
}

/// A new mail thread as its push needs it.
struct NewMail {
    date: i64,
    header: Header,
    subs: Vec<Opened>,
    previews: bool,
    unread: i64,
}

/// The thread's lone unseen INBOX message and the user's subscriptions, opened; `None`
/// when there is nothing to push.
fn load(
    state: &Context,
    c: &rusqlite::Connection,
    uid: &str,
    aid: &str,
    tid: &str,
) -> crate::error::AppResult<Option<NewMail>> {
    let rows = store::list(c, uid)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let Some((id, date, header_enc)) = store::lone_unseen_inbox_message(c, uid, aid, tid)? else {
        return Ok(None);
    };
    let Some(user) = crate::store::users::find(c, uid)? else {
        return Ok(None);
    };
    let dek = crate::services::users::data_key(&state.master, &user)?;
    let header: Header =
        crate::services::email::open_json(&dek, &header_enc, T_MESSAGES, "header", &id)
            .unwrap_or_default();
    Ok(Some(NewMail {
        date,
        header,
        subs: rows.iter().filter_map(|r| open(&dek, r)).collect(),
        previews: store::previews(c, uid)?.unwrap_or(true),
        unread: store::unread_total(c, uid)?,
    }))
}

pub async fn on_thread(state: &Context, user_id: &str, account_id: &str, thread_id: &str) {
    let since = Instant::now();
    let key = format!("{user_id}/{thread_id}");
    if state.web_push.pushed_threads.contains_key(&key) {
        return;
    }
    let (uid, aid, tid, st) = (
        user_id.to_owned(),
        account_id.to_owned(),
        thread_id.to_owned(),
        state.clone(),
    );
    let mail = match state.db(move |c| load(&st, c, &uid, &aid, &tid)).await {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a new mail thread for its push");
            return;
        }
    };
    if now_ms() - mail.date > MAX_AGE_MS || mail.subs.is_empty() {
        return;
    }
    state.web_push.pushed_threads.insert(key, ());
    // With previews the sender's name (else address) and the subject; else a generic text.
    let (title, body) = if mail.previews {
        let from = mail
            .header
            .from
            .map(|p| p.name.filter(|n| !n.trim().is_empty()).unwrap_or(p.email))
            .unwrap_or_default();
        (from, mail.header.subject)
    } else {
        ("Switchboard".to_owned(), "New email".to_owned())
    };
    let payload = Payload {
        kind: "email",
        room_id: None,
        event_id: None,
        account_id: Some(account_id.to_owned()),
        thread_id: Some(thread_id.to_owned()),
        title,
        body,
        unread: mail.unread,
    }
    .to_bytes();
    let delivery = Delivery {
        ttl: TTL_SECS,
        urgency: Urgency::Normal,
        topic: Some(topic(thread_id)),
    };
    enqueue(state, user_id, mail.subs, &payload, &delivery, None, since);
}
