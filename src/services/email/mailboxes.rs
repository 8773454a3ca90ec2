//! Mailbox (label) names at rest (issue #21, migration 0020). A name such as
//! "Lawyer – divorce" or "Job applications/Acme" says as much as a subject, so the
//! database never holds it in clear:
//! - `name_enc`: the name sealed under the owner's data key (XChaCha20-Poly1305, AAD
//!   `email_mailboxes` / `name` / row id), opened when a label, thread or message is read
//!   and before every IMAP command that names the mailbox;
//! - `name_hash`: HMAC-SHA256 of the exact name (IMAP names are case-sensitive) under a
//!   sub-key derived (HKDF-SHA256, label [`NAME_KEY_LABEL`]) from the data key. It is what
//!   SQL compares (a thread list's `label`), groups (the label list merges the user's
//!   accounts by name) and keeps unique per account. Per user: the same name gives other
//!   users other hashes, and `DELETE /api/keys` (which drops the accounts) shreds it.
//!
//! The API is unchanged: a label's `id` is still its name, hashed at request time.
//! Rows written before are sealed once at start ([`seal_legacy_at_start`]; then the WAL is
//! truncated, so no frame keeps the old plain names), and again, as a backstop, when an
//! account's sync loads it ([`ensure_sealed`]), like the ref-hash rehash
//! (super::rekey).

use std::collections::HashMap;

use hmac::{Hmac, KeyInit, Mac};
use rusqlite::Connection;
use sha2::Sha256;

use crate::clients::mail::imap::MailboxInfo;
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;
use crate::store::email::{self as store, messages as mstore, ListedMailbox, MailboxRow};

pub const T_MAILBOXES: &str = "email_mailboxes";

/// HKDF label of the name-hash key (its own sub-key: the data key itself only seals).
pub const NAME_KEY_LABEL: &str = "switchboard-email-mailbox-name-v1";

/// A mailbox of an account with its name opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mailbox {
    pub id: String,
    pub account_id: String,
    pub name: String,
    pub special_use: Option<String>,
    pub uid_validity: Option<i64>,
    pub last_uid: i64,
    pub highest_modseq: Option<i64>,
}

/// The keyed hash of a mailbox name for this user (exact bytes: `Work` ≠ `work`).
pub fn name_hash(dek: &DataKey, name: &str) -> String {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&dek.derive(NAME_KEY_LABEL))
        .expect("HMAC takes any key length");
    mac.update(name.as_bytes());
    hex::encode(&mac.finalize().into_bytes()[..16])
}

fn seal_name(dek: &DataKey, id: &str, name: &str) -> Vec<u8> {
    dek.seal_str(name, &Aad::new(T_MAILBOXES, "name", id))
}

/// The row's name: opened, or the plain name of a row not sealed yet.
pub fn open_row(dek: &DataKey, row: MailboxRow) -> AppResult<Mailbox> {
    let name = match &row.name_enc {
        Some(sealed) => dek.open_string(sealed, &Aad::new(T_MAILBOXES, "name", &row.id))?,
        None => row.legacy_name,
    };
    Ok(Mailbox {
        id: row.id,
        account_id: row.account_id,
        name,
        special_use: row.special_use,
        uid_validity: row.uid_validity,
        last_uid: row.last_uid,
        highest_modseq: row.highest_modseq,
    })
}

/// The account's mailboxes, by name.
pub fn of_account(c: &Connection, dek: &DataKey, account_id: &str) -> AppResult<Vec<Mailbox>> {
    let mut out = store::mailboxes(c, account_id)?
        .into_iter()
        .map(|r| open_row(dek, r))
        .collect::<AppResult<Vec<_>>>()?;
    out.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    Ok(out)
}

/// Names of the mailboxes with these ids (a mailbox whose name cannot be opened is left out).
pub fn names(c: &Connection, dek: &DataKey, ids: &[String]) -> AppResult<HashMap<String, String>> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    Ok(store::mailboxes_by_ids(c, &ids)?
        .into_iter()
        .filter_map(|r| open_row(dek, r).ok())
        .map(|m| (m.id, m.name))
        .collect())
}

/// Makes the account's cached mailboxes those the server listed (see
/// [`store::replace_mailboxes`]); returns them by name.
pub fn replace(
    c: &Connection,
    dek: &DataKey,
    account_id: &str,
    found: &[MailboxInfo],
) -> AppResult<Vec<Mailbox>> {
    let listed: Vec<ListedMailbox<'_>> = found
        .iter()
        .map(|m| {
            let id = uuid::Uuid::new_v4().to_string();
            ListedMailbox {
                name_enc: seal_name(dek, &id, &m.name),
                name_hash: name_hash(dek, &m.name),
                special: m.special,
                id,
            }
        })
        .collect();
    store::replace_mailboxes(c, account_id, &listed)?;
    of_account(c, dek, account_id)
}

/// `(message id, mailbox name, uid)` of every location of these messages, by name and UID.
pub fn locations(
    c: &Connection,
    dek: &DataKey,
    message_ids: &[String],
) -> AppResult<Vec<(String, String, i64)>> {
    let rows = mstore::locations_of(c, message_ids)?;
    let ids: Vec<String> = rows.iter().map(|(_, b, _)| b.clone()).collect();
    let names = names(c, dek, &ids)?;
    let mut out: Vec<(String, String, i64)> = rows
        .into_iter()
        .filter_map(|(m, b, uid)| Some((m, names.get(&b)?.clone(), uid)))
        .collect();
    out.sort_by(|a, b| (&a.1, a.2).cmp(&(&b.1, b.2)));
    Ok(out)
}

/// Seals the account's mailboxes still named in clear (in the caller's transaction);
/// returns how many.
pub fn seal_legacy(c: &Connection, dek: &DataKey, account_id: &str) -> AppResult<usize> {
    let rows = store::unsealed_mailboxes(c, account_id)?;
    for r in &rows {
        let sealed = seal_name(dek, &r.id, &r.legacy_name);
        store::seal_mailbox_name(c, &r.id, &name_hash(dek, &r.legacy_name), &sealed)?;
    }
    Ok(rows.len())
}

/// Seals the account's names left in clear, in one write transaction (a no-op read when
/// there are none, which is always after the pass at start).
pub async fn ensure_sealed(state: &Context, account_id: &str, dek: &DataKey) -> AppResult<()> {
    let (aid, dek) = (account_id.to_owned(), dek.clone());
    let sealed = state
        .db(move |c| {
            if store::unsealed_mailboxes(c, &aid)?.is_empty() {
                return Ok(0);
            }
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let n = seal_legacy(&tx, &dek, &aid)?;
            tx.commit()?;
            Ok(n)
        })
        .await?;
    if sealed > 0 {
        tracing::info!(account = %account_id, sealed, "mailbox names sealed");
    }
    Ok(())
}

/// The one-time pass at start: seals the mailbox names of every account written before
/// migration 0020, one write transaction per account, then truncates the WAL so its frames
/// no longer hold the plain names (SQLite's `secure_delete` zeroes them in the file).
/// An account whose owner deleted their keys is left alone, as the ref-hash rehash does
/// (their accounts are dropped with the keys, so there is none in practice); one whose key
/// cannot be opened is logged and sealed by its sync when it can ([`ensure_sealed`]).
pub async fn seal_legacy_at_start(state: &Context) {
    if let Err(e) = seal_all(state).await {
        tracing::warn!(error = %e, "sealing the mailbox names of earlier versions failed");
    }
}

async fn seal_all(state: &Context) -> AppResult<()> {
    let todo = state
        .store
        .run(|c| Ok::<_, AppError>(store::accounts_with_unsealed_mailboxes(c)?))
        .await?;
    if todo.is_empty() {
        return Ok(());
    }
    let mut sealed = 0usize;
    for (account_id, user_id) in todo {
        let user = match crate::services::users::load(state, &user_id).await {
            Ok(u) if !u.keys_shredded => u,
            _ => continue,
        };
        let dek = match crate::services::users::data_key(&state.master, &user) {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(account = %account_id, error = %e, "mailbox names left unsealed: the data key cannot be opened");
                continue;
            }
        };
        let aid = account_id.clone();
        sealed += state
            .db(move |c| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let n = seal_legacy(&tx, &dek, &aid)?;
                tx.commit()?;
                Ok(n)
            })
            .await?;
    }
    let truncated = state
        .store
        .run(|c| Ok::<_, AppError>(crate::store::checkpoint_truncate(c)?))
        .await?;
    if !truncated {
        tracing::warn!("WAL checkpoint after sealing mailbox names was blocked; the WAL may hold the old names until its frames are reused");
    }
    tracing::info!(sealed, "mailbox names of an earlier version sealed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, crate::store::Store) {
        let (dir, store) = crate::store::Store::open_temp();
        store
            .conn()
            .unwrap()
            .execute_batch(
                "INSERT INTO users (id, email_index, email_enc, dek_wrapped, created_at, updated_at) \
                   VALUES ('u', x'01', x'01', x'01', 0, 0);
                 INSERT INTO email_accounts (id, user_id, email_enc, settings_enc, created_at) \
                   VALUES ('a', 'u', x'01', x'01', 0);",
            )
            .unwrap();
        (dir, store)
    }

    #[test]
    fn hashes_are_keyed_per_user_and_exact() {
        let (a, b) = (DataKey::from_bytes([1; 32]), DataKey::from_bytes([2; 32]));
        assert_eq!(name_hash(&a, "Work"), name_hash(&a, "Work"));
        assert_ne!(
            name_hash(&a, "Work"),
            name_hash(&a, "work"),
            "IMAP names are exact"
        );
        assert_ne!(name_hash(&a, "Work"), name_hash(&b, "Work"), "per user");
        assert_ne!(
            name_hash(&a, "mid"),
            super::super::ref_hash(&a, "mid", ""),
            "a key of its own"
        );
    }

    #[test]
    fn plain_names_of_an_earlier_version_are_sealed_once_and_kept_with_their_mail() {
        let (_dir, store) = fixture();
        let c = store.conn().unwrap();
        let dek = DataKey::from_bytes([9; 32]);
        // Rows as an earlier version wrote them: the plain name, no hash, a location.
        c.execute_batch(
            "INSERT INTO email_mailboxes (id, account_id, name, special_use, last_uid) \
               VALUES ('b1', 'a', 'INBOX', 'inbox', 7), ('b2', 'a', 'Lawyer – divorce', NULL, 3);
             INSERT INTO email_threads (id, account_id, user_id, last_message_at) VALUES ('t', 'a', 'u', 0);
             INSERT INTO email_messages (id, account_id, thread_id, key_hash, date, header_enc, snippet_enc, body_enc) \
               VALUES ('m', 'a', 't', 'k', 0, x'01', x'01', x'01');
             INSERT INTO email_locations (mailbox_id, uid, message_id) VALUES ('b2', 3, 'm');",
        )
        .unwrap();
        assert_eq!(
            store::accounts_with_unsealed_mailboxes(&c).unwrap().len(),
            1
        );
        assert_eq!(seal_legacy(&c, &dek, "a").unwrap(), 2);
        assert_eq!(seal_legacy(&c, &dek, "a").unwrap(), 0, "once");
        assert!(store::accounts_with_unsealed_mailboxes(&c)
            .unwrap()
            .is_empty());
        // No plain name is left in any column; the ids, positions and mail stay.
        let plain: i64 = c
            .query_row(
                "SELECT COUNT(*) FROM email_mailboxes WHERE name != id OR name_enc IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(plain, 0);
        let boxes = of_account(&c, &dek, "a").unwrap();
        let got: Vec<(&str, &str, i64)> = boxes
            .iter()
            .map(|b| (b.id.as_str(), b.name.as_str(), b.last_uid))
            .collect();
        assert_eq!(got, vec![("b1", "INBOX", 7), ("b2", "Lawyer – divorce", 3)]);
        assert_eq!(
            locations(&c, &dek, &["m".into()]).unwrap(),
            vec![("m".into(), "Lawyer – divorce".into(), 3)]
        );
        // The thread filter and the label list find them by hash.
        let h = name_hash(&dek, "Lawyer – divorce");
        assert_eq!(
            mstore::thread_page(&c, "u", Some(&h), None, 10)
                .unwrap()
                .len(),
            1
        );
        let labels = mstore::label_counts(&c, "u").unwrap();
        assert_eq!(labels.len(), 2);
        assert!(labels.contains(&("b2".into(), None, 1, 1)), "{labels:?}");
        // The next LIST keeps the sealed rows (matched by hash), adds and drops by it.
        let listed = |name: &str, special| MailboxInfo {
            name: name.into(),
            special,
        };
        let after = replace(
            &c,
            &dek,
            "a",
            &[
                listed("Lawyer – divorce", None),
                listed("Job applications/Acme", None),
            ],
        )
        .unwrap();
        let names: Vec<(&str, &str)> = after
            .iter()
            .map(|b| (b.name.as_str(), b.id.as_str()))
            .collect();
        assert_eq!(names[1], ("Lawyer – divorce", "b2"), "{names:?}");
        assert_eq!(names[0].0, "Job applications/Acme");
        assert_eq!(after.len(), 2, "INBOX is gone from the server");
    }

    #[test]
    fn a_name_sealed_for_one_row_does_not_open_as_another() {
        let (_dir, store) = fixture();
        let c = store.conn().unwrap();
        let dek = DataKey::from_bytes([3; 32]);
        replace(
            &c,
            &dek,
            "a",
            &[MailboxInfo {
                name: "Secret".into(),
                special: None,
            }],
        )
        .unwrap();
        let row = store::mailboxes(&c, "a").unwrap().remove(0);
        let moved = MailboxRow {
            id: "other".into(),
            ..row
        };
        assert!(open_row(&dek, moved).is_err(), "the AAD names the row");
    }
}
