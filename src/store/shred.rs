//! What `DELETE /api/keys` removes besides the key record: every stored value of the user
//! that is sealed under the data key being destroyed (and the scheduled bodies, which are
//! message text the server can read). Ciphertext the new key cannot open would otherwise
//! stay in the file forever, readable by anyone holding an older copy of the wrapped key
//! and `master.key`.
//!
//! Rows whose only sealed column is optional keep their metadata with the column set to
//! NULL (a room stays listed, without its name); rows that are nothing but content go.

use rusqlite::Connection;

/// How many rows of each kind were deleted or cleared.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Shredded {
    pub messages: usize,
    pub rooms: usize,
    pub reminders: usize,
    pub scheduled: usize,
    pub linked_groups: usize,
    pub bridge_logins: usize,
    /// Connected mailboxes (their cached mail goes with them) and signatures.
    pub email_accounts: usize,
    pub email_signatures: usize,
    /// Search index documents and AI vectors (blinded and sealed under the old key).
    pub search_docs: usize,
}

/// Deletes or clears, in the caller's transaction, everything of `user_id` sealed under its
/// data key except the identity columns and push tokens (re-sealed by the caller).
pub fn content_of(conn: &Connection, user_id: &str) -> rusqlite::Result<Shredded> {
    let run = |sql: &str| conn.execute(sql, [user_id]);
    // Before the messages: their delete trigger would otherwise remove these one by one.
    let search_docs = super::search_index::remove_user(conn, user_id)?;
    // Reaction keys are sealed like message content and go with it (counted as messages'
    // annotations, not separately).
    run("DELETE FROM reactions WHERE user_id = ?1")?;
    // Members' display names and avatars, sealed like the room names (the messages' own
    // sealed sender goes with the messages).
    run("DELETE FROM member_profiles WHERE user_id = ?1")?;
    // Drafts are sealed under the data key too (counted with nothing: they were drafts).
    super::conversation::delete_all_drafts(conn, user_id)?;
    Ok(Shredded {
        search_docs,
        messages: run("DELETE FROM messages WHERE user_id = ?1")?,
        rooms: run(
            "UPDATE rooms SET name_enc = NULL, avatar_enc = NULL, topic_enc = NULL, \
             recipient_name_enc = NULL WHERE user_id = ?1 AND (name_enc IS NOT NULL \
             OR avatar_enc IS NOT NULL OR topic_enc IS NOT NULL \
             OR recipient_name_enc IS NOT NULL)",
        )?,
        reminders: run("DELETE FROM reminders WHERE user_id = ?1")?,
        // Sealed to the server key rather than the data key, but they are message text the
        // server can read: "delete all my messages" includes them.
        scheduled: run("DELETE FROM scheduled_messages WHERE user_id = ?1")?,
        linked_groups: run(
            "UPDATE linked_groups SET name_enc = NULL WHERE user_id = ?1 AND name_enc IS NOT NULL",
        )?,
        bridge_logins: run(
            "UPDATE bridge_logins SET remote_name_enc = NULL, remote_profile_enc = NULL \
             WHERE user_id = ?1 AND (remote_name_enc IS NOT NULL OR remote_profile_enc IS NOT NULL)",
        )?,
        // The credentials and every cached message are sealed under the old key: the
        // accounts go (cascading to mailboxes, threads and messages); the user connects
        // them again. Their sync tasks stop when they find their account gone.
        email_accounts: run("DELETE FROM email_accounts WHERE user_id = ?1")?,
        email_signatures: run("DELETE FROM email_signatures WHERE user_id = ?1")?,
    })
}
