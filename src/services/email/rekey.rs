//! Moving an account's keyed hashes to version 2 (see [`super::ref_hash`]): version 1
//! keyed the HMAC with the data key itself. The hashes are recomputed from the sealed
//! headers, once per account, in one write transaction, when its sync (or an action)
//! next loads the account. The same pass seals an account failure still kept in clear.

use rusqlite::{params, Connection, OptionalExtension};

use super::parse::thread_subject;
use super::{open_json, ref_hash, ref_hash_with, Header, T_ACCOUNTS, T_MESSAGES};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::Context;

/// The hash version new rows are written with.
pub const CURRENT: i64 = 2;

fn version(c: &Connection, account_id: &str) -> rusqlite::Result<Option<i64>> {
    c.query_row(
        "SELECT refs_version FROM email_accounts WHERE id = ?1",
        [account_id],
        |r| r.get(0),
    )
    .optional()
}

/// Rehashes the account when its hashes are older than [`CURRENT`].
pub async fn ensure(state: &Context, account_id: &str, dek: &DataKey) -> AppResult<()> {
    let aid = account_id.to_owned();
    let fast = aid.clone();
    let current = state
        .store
        .run(move |c| Ok::<_, AppError>(version(c, &fast)?))
        .await?;
    if current.is_none_or(|v| v >= CURRENT) {
        return Ok(());
    }
    let dek = dek.clone();
    state
        .db(move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if version(&tx, &aid)?.is_none_or(|v| v >= CURRENT) {
                return Ok(());
            }
            rehash(&tx, &aid, &dek)?;
            seal_error(&tx, &aid, &dek)?;
            tx.execute(
                "UPDATE email_accounts SET refs_version = ?2 WHERE id = ?1",
                params![aid, CURRENT],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
}

/// Rewrites `key_hash` of every message and rebuilds the account's thread refs, oldest
/// message first (as they were added when cached).
fn rehash(c: &Connection, account_id: &str, dek: &DataKey) -> AppResult<()> {
    let rows: Vec<(String, String, String, Vec<u8>)> = c
        .prepare(
            "SELECT id, thread_id, key_hash, header_enc FROM email_messages \
             WHERE account_id = ?1 ORDER BY date, id",
        )?
        .query_map([account_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    c.execute(
        "DELETE FROM email_thread_refs WHERE account_id = ?1",
        [account_id],
    )?;
    let v1 = |kind: &str, value: &str| ref_hash_with(dek.as_bytes(), kind, value);
    for (id, thread, old_key, header_enc) in rows {
        let Ok(h) = open_json::<Header>(dek, &header_enc, T_MESSAGES, "header", &id) else {
            continue;
        };
        // A message cached under its Message-ID keeps that key; one cached under its
        // location (no Message-ID, or a second mail reusing one) gets a location-style
        // key of its own (it is never looked up by location again).
        let key = match &h.message_id {
            Some(mid) if v1("mid", mid) == old_key => ref_hash(dek, "mid", mid),
            _ => ref_hash(dek, "loc", &format!("cached/{id}")),
        };
        c.execute(
            "UPDATE email_messages SET key_hash = ?2 WHERE id = ?1",
            params![id, key],
        )?;
        let mut refs: Vec<String> = h
            .in_reply_to
            .iter()
            .chain(h.references.iter())
            .map(|r| ref_hash(dek, "mid", r))
            .collect();
        refs.push(key);
        let subject = thread_subject(&h.subject);
        if !subject.is_empty() {
            refs.push(ref_hash(dek, "subject", &subject));
        }
        for r in refs {
            c.execute(
                "INSERT OR IGNORE INTO email_thread_refs (account_id, ref_hash, thread_id) \
                 VALUES (?1, ?2, ?3)",
                params![account_id, r, thread],
            )?;
        }
    }
    Ok(())
}

/// Seals a failure still stored in clear (rows of version 1).
fn seal_error(c: &Connection, account_id: &str, dek: &DataKey) -> AppResult<()> {
    let plain: Option<String> = c.query_row(
        "SELECT error FROM email_accounts WHERE id = ?1",
        [account_id],
        |r| r.get(0),
    )?;
    if let Some(e) = plain {
        let sealed = dek.seal_str(&e, &Aad::new(T_ACCOUNTS, "error", account_id));
        c.execute(
            "UPDATE email_accounts SET error = NULL, error_enc = ?2 WHERE id = ?1",
            params![account_id, sealed],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_key_is_a_sub_key_not_the_data_key() {
        let dek = DataKey::from_bytes([7u8; 32]);
        let v2 = ref_hash(&dek, "mid", "<a@b>");
        assert_ne!(v2, ref_hash_with(dek.as_bytes(), "mid", "<a@b>"));
        assert_eq!(v2, ref_hash(&dek, "mid", " <A@B> "), "normalised");
    }

    #[test]
    fn version_one_hashes_and_a_clear_error_are_moved() {
        let (_dir, store) = crate::store::Store::open_temp();
        let c = store.conn().unwrap();
        let dek = DataKey::from_bytes([9u8; 32]);
        let v1 = |kind: &str, value: &str| ref_hash_with(dek.as_bytes(), kind, value);
        c.execute_batch(
            "INSERT INTO users (id, email_index, email_enc, dek_wrapped, created_at, updated_at) \
               VALUES ('u', x'01', x'01', x'01', 0, 0);
             INSERT INTO email_accounts (id, user_id, email_enc, settings_enc, status, error, created_at) \
               VALUES ('a', 'u', x'01', x'01', 'unreachable', 'the server said: no', 0);
             INSERT INTO email_threads (id, account_id, user_id, last_message_at) VALUES ('t', 'a', 'u', 0);",
        )
        .unwrap();
        let header = Header {
            subject: "Re: Plans".into(),
            message_id: Some("<m2@x>".into()),
            in_reply_to: Some("<m1@x>".into()),
            ..Header::default()
        };
        let sealed = super::super::seal_json(&dek, &header, T_MESSAGES, "header", "m");
        c.execute(
            "INSERT INTO email_messages (id, account_id, thread_id, key_hash, date, header_enc, \
               snippet_enc, body_enc) VALUES ('m', 'a', 't', ?1, 0, ?2, x'01', x'01')",
            params![v1("mid", "<m2@x>"), sealed],
        )
        .unwrap();
        c.execute(
            "INSERT INTO email_thread_refs (account_id, ref_hash, thread_id) VALUES ('a', ?1, 't')",
            [v1("mid", "<m1@x>")],
        )
        .unwrap();
        rehash(&c, "a", &dek).unwrap();
        seal_error(&c, "a", &dek).unwrap();
        let key: String = c
            .query_row(
                "SELECT key_hash FROM email_messages WHERE id = 'm'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(key, ref_hash(&dek, "mid", "<m2@x>"));
        let refs: Vec<String> = c
            .prepare("SELECT ref_hash FROM email_thread_refs WHERE account_id = 'a' ORDER BY 1")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut want = vec![
            ref_hash(&dek, "mid", "<m1@x>"),
            ref_hash(&dek, "mid", "<m2@x>"),
            ref_hash(&dek, "subject", "plans"),
        ];
        want.sort();
        assert_eq!(refs, want, "no version-1 hash is left");
        let (plain, sealed): (Option<String>, Vec<u8>) = c
            .query_row(
                "SELECT error, error_enc FROM email_accounts WHERE id = 'a'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(plain, None);
        assert_eq!(
            dek.open_string(&sealed, &Aad::new(T_ACCOUNTS, "error", "a"))
                .unwrap(),
            "the server said: no"
        );
    }
}
