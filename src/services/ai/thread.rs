//! `POST /api/ai/summarize` for an e-mail thread: its cached mails, newest
//! [`SUMMARY_WINDOW`] after `since`, summarized like a room.
//!
//! - The thread must be the caller's (404 otherwise, also for an id that is not one).
//! - Sent to the service: the thread's subject and, per mail, its text part without the
//!   quoted lines of earlier mails (`> …`), senders replaced by labels (`me` for the
//!   mailbox's own address, `p1`, `p2`, … for the others); no addresses, no headers.
//! - Without `[ai]`: the extractive summary, scored by the chat heuristic (questions,
//!   urgency words; the user's own mails count for nothing).

use rusqlite::Connection;

use super::{keys_of, summarize_lines, Line, Summary, SUMMARY_WINDOW};
use crate::crypto::{Aad, DataKey};
use crate::error::{AppError, AppResult};
use crate::services::email::{parse_id, T_ACCOUNTS};
use crate::services::importance::{self, MessageFacts, Reader};
use crate::services::search::open_email_doc;
use crate::services::Context;
use crate::store::email::messages as mstore;
use crate::store::search_index;

/// Characters of one mail's text used at most (long newsletters, pasted logs).
const MAIL_MAX_CHARS: usize = 4_000;

const THREAD_PROMPT: &str = "You summarize an e-mail thread for its reader, who is \
labelled \"me\"; other senders are labelled p1, p2, …. The first line is the thread's \
subject, then one line per mail, oldest first. Answer with a short plain-text summary (at \
most five sentences) in the thread's main language: what was discussed, decided or asked \
of the reader.";

/// `POST /api/ai/summarize` with `threadId`.
pub async fn summarize_thread(
    state: &Context,
    user_id: &str,
    thread_id: &str,
    since: Option<i64>,
) -> AppResult<Summary> {
    let tid = parse_id("thread", thread_id)?;
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let (lines, subject, me, recipient) = state
        .store
        .run(move |c| {
            let (_, dek, recipient) = keys_of(c, &master, &uid)?;
            let thread =
                mstore::find_thread(c, &uid, &tid)?.ok_or_else(|| AppError::not_found("thread"))?;
            let me = account_address(c, &dek, &thread.account_id)?;
            let docs = search_index::thread_emails(c, &tid, since, SUMMARY_WINDOW)?;
            let mut subject = String::new();
            let mut lines: Vec<Line> = Vec::new();
            for doc in docs.iter().rev() {
                let Some((header, text)) = open_email_doc(&dek, doc) else {
                    continue;
                };
                if subject.is_empty() {
                    subject = header.subject.trim().to_owned();
                }
                let text = unquoted(&text);
                if text.is_empty() {
                    continue;
                }
                let sender = header
                    .from
                    .map(|p| p.email.trim().to_lowercase())
                    .unwrap_or_default();
                let is_mine = me.as_deref() == Some(sender.as_str());
                lines.push(mail_line(sender, text, is_mine));
            }
            Ok::<_, AppError>((lines, subject, me, recipient))
        })
        .await?;
    let heading = (!subject.is_empty()).then(|| format!("Subject: {subject}"));
    summarize_lines(
        state,
        lines,
        me.as_deref(),
        THREAD_PROMPT,
        heading,
        recipient,
    )
    .await
}

/// The mailbox's own address (lowercase), to label the user's own mails `me`.
fn account_address(c: &Connection, dek: &DataKey, account_id: &str) -> AppResult<Option<String>> {
    let Some(account) = crate::store::email::account_by_id(c, account_id)? else {
        return Ok(None);
    };
    Ok(dek
        .open_string(
            &account.email_enc,
            &Aad::new(T_ACCOUNTS, "email", &account.id),
        )
        .ok()
        .map(|e| e.trim().to_lowercase()))
}

fn mail_line(sender: String, text: String, is_mine: bool) -> Line {
    let score = importance::score(
        &Reader::default(),
        &MessageFacts {
            body: &text,
            msgtype: "m.text",
            is_mine,
            is_direct: false,
            mentioned_ids: &[],
        },
    );
    Line {
        sender,
        text,
        importance: score.importance,
        is_question: score.is_question,
    }
}

/// A mail's own words: quoted lines (`>`) and the "On … wrote:" line above them dropped,
/// whitespace collapsed, at most [`MAIL_MAX_CHARS`].
fn unquoted(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with('>') {
            continue;
        }
        let next_quoted = lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('>'));
        if next_quoted && t.ends_with("wrote:") {
            continue;
        }
        if !t.is_empty() {
            kept.push(t);
        }
    }
    kept.join(" ").chars().take(MAIL_MAX_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_replies_leave_only_the_mails_own_words() {
        let text = "Yes, Friday works.\n\nOn Tue, Dana wrote:\n> Can we meet Friday?\n> \
                    Thanks\n";
        assert_eq!(unquoted(text), "Yes, Friday works.");
        assert_eq!(unquoted("a\n\n  b  \n"), "a b");
        assert_eq!(unquoted(&"x".repeat(5_000)).len(), MAIL_MAX_CHARS);
    }

    #[test]
    fn the_users_own_mails_count_for_nothing_in_the_extractive_pick() {
        let mine = mail_line("me@example.org".into(), "Can you send it?".into(), true);
        let theirs = mail_line("dana@example.org".into(), "Can you send it?".into(), false);
        assert_eq!(mine.importance, 0.0);
        assert!(theirs.importance > 0.0 && theirs.is_question);
    }
}
