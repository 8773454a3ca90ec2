//! Message importance, category and question detection: the built-in heuristic.
//!
//! Every ingested message gets a score in `[0, 1]`, one category and an `is_question`
//! flag. The heuristic is deterministic and cheap (it runs inside the sync ingest, for
//! every message):
//!
//! | Signal | Adds |
//! |---|---|
//! | every incoming message (base) | 0.10 |
//! | the room is a direct chat | 0.30 |
//! | the user is mentioned: Matrix ID, localpart or display name as a word, or listed in `m.mentions.user_ids` | 0.35 |
//! | a question: ends with `?`, or starts with who/what/when/where/why/how/can/could/would/will/is/are/do/does | 0.20 |
//! | an urgency word: urgent(ly), asap, emergency, important, deadline | 0.30 |
//! | media (any msgtype other than m.text, m.notice, m.emote) | 0.05 |
//!
//! The sum is capped at 1.0. The user's own messages always score 0 (they never need
//! attention); `is_question` is still set for them. The category is the strongest signal,
//! in this order: `urgent`, `mention`, `question`, `media`, `direct`, `general`.
//!
//! A room's importance ([`room_importance`]) is the highest score among its unread
//! messages, and at least [`DIRECT_BASELINE`] for direct chats, so a quiet direct chat
//! still ranks above a quiet group.
//!
//! Unread age: a room whose oldest unread message has waited more than [`AGE_FROM_SECS`]
//! (1 h) gains up to [`AGE_MAX_BONUS`] (0.2), growing linearly until [`AGE_FULL_SECS`]
//! (24 h), capped at 1.0. It is applied whenever a room's importance is computed (ingest,
//! AI rescoring) and every [`crate::workers::scheduler::aging::EVERY`] by the scheduler for rooms
//! with unread messages, so a message left waiting rises in the importance order.
//!
//! AI scoring: when `[ai]` is configured, [`crate::clients::ai`] refines these values
//! after the fact. Ingest always stores the heuristic score first (in the ingest
//! transaction, so a message is never unscored); once the sync batch is committed and
//! published, the new incoming messages (not the user's own, not redacted) go to one
//! background task that asks the AI service for `importance`, `category` and
//! `isQuestion`, a few messages at a time. Each answer replaces the message's values,
//! unless the message was edited or redacted meanwhile, and the room's importance is
//! recomputed with [`unread_room_importance`], as ingest does; the room is then announced
//! with `room.updated`. Whenever the AI service is slow, down, or answers something that
//! is not the expected JSON, the heuristic values simply stay. The text of each incoming
//! message (with whether the room is direct and whether the reader is mentioned) is sent
//! to the configured service, which is why it should be a self-hosted one.
//!
//! Pushes for important messages (`services::devices`) fire on `message.created`, that
//! is with the ingest-time (heuristic) score: they are not delayed for the AI's answer.

use rusqlite::Connection;

use crate::store::messages;
use crate::store::rooms::RoomRow;

/// The categories a message can have, strongest first.
pub const CATEGORIES: &[&str] = &[
    "urgent", "mention", "question", "media", "direct", "general",
];

/// Importance of a direct chat with nothing unread.
pub const DIRECT_BASELINE: f64 = 0.3;

const BASE: f64 = 0.10;
const DIRECT: f64 = 0.30;
const MENTION: f64 = 0.35;
const QUESTION: f64 = 0.20;
const URGENT: f64 = 0.30;
const MEDIA: f64 = 0.05;

const QUESTION_WORDS: &[&str] = &[
    "who", "what", "when", "where", "why", "how", "can", "could", "would", "will", "is", "are",
    "do", "does",
];
const URGENT_WORDS: &[&str] = &[
    "urgent",
    "urgently",
    "asap",
    "emergency",
    "important",
    "deadline",
];

/// Who the reader is, for mention detection.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    /// Full Matrix ID, e.g. `@sb_abc:example.org`.
    pub matrix_user_id: String,
    /// The localpart (`sb_abc`).
    pub localpart: String,
    /// The user's display name, if any.
    pub display_name: Option<String>,
}

impl Reader {
    pub fn new(matrix_user_id: &str, display_name: Option<&str>) -> Self {
        let localpart = matrix_user_id
            .trim_start_matches('@')
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        Self {
            matrix_user_id: matrix_user_id.to_owned(),
            localpart,
            display_name: display_name
                .map(str::trim)
                .filter(|n| n.chars().count() >= 2)
                .map(str::to_owned),
        }
    }
}

/// One message as the heuristic sees it.
#[derive(Debug, Clone, Copy)]
pub struct MessageFacts<'a> {
    pub body: &'a str,
    pub msgtype: &'a str,
    /// Sent by the reader.
    pub is_mine: bool,
    /// The room is a direct chat.
    pub is_direct: bool,
    /// Matrix IDs in the event's `m.mentions.user_ids`.
    pub mentioned_ids: &'a [&'a str],
}

#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    pub importance: f64,
    pub category: &'static str,
    pub is_question: bool,
}

impl From<crate::clients::ai::Verdict> for Score {
    fn from(v: crate::clients::ai::Verdict) -> Self {
        Self {
            importance: v.importance,
            category: v.category,
            is_question: v.is_question,
        }
    }
}

/// Scores one message.
pub fn score(reader: &Reader, m: &MessageFacts<'_>) -> Score {
    let lower = m.body.to_lowercase();
    let is_question = is_question_lower(&lower);
    if m.is_mine {
        return Score {
            importance: 0.0,
            category: "general",
            is_question,
        };
    }
    let mentioned = is_mention(reader, &lower, m.mentioned_ids);
    let urgent = words(&lower).any(|w| URGENT_WORDS.contains(&w));
    let media = !matches!(m.msgtype, "m.text" | "m.notice" | "m.emote");
    let mut importance = BASE;
    for (on, weight) in [
        (m.is_direct, DIRECT),
        (mentioned, MENTION),
        (is_question, QUESTION),
        (urgent, URGENT),
        (media, MEDIA),
    ] {
        if on {
            importance += weight;
        }
    }
    let category = if urgent {
        "urgent"
    } else if mentioned {
        "mention"
    } else if is_question {
        "question"
    } else if media {
        "media"
    } else if m.is_direct {
        "direct"
    } else {
        "general"
    };
    Score {
        importance: round_score(importance.min(1.0)),
        category,
        is_question,
    }
}

/// Unread messages start to age after waiting this long …
pub const AGE_FROM_SECS: i64 = 3_600;
/// … and reach the full bonus after this long.
pub const AGE_FULL_SECS: i64 = 24 * 3_600;
/// The most an old unread message adds to its room's importance.
pub const AGE_MAX_BONUS: f64 = 0.2;

/// What waiting unread messages add: 0 up to [`AGE_FROM_SECS`], then linear up to
/// [`AGE_MAX_BONUS`] at [`AGE_FULL_SECS`].
pub fn unread_age_bonus(waiting_secs: i64) -> f64 {
    let span = (AGE_FULL_SECS - AGE_FROM_SECS) as f64;
    let aged = ((waiting_secs - AGE_FROM_SECS) as f64 / span).clamp(0.0, 1.0);
    AGE_MAX_BONUS * aged
}

/// What a room's importance is computed from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Unread {
    /// Highest score among the unread messages.
    pub max_importance: f64,
    /// How long the oldest unread message has waited, in seconds.
    pub waiting_secs: i64,
}

/// A room's importance: the highest unread score plus [`unread_age_bonus`], at least
/// [`DIRECT_BASELINE`] for direct chats, at most 1.
pub fn room_importance(is_direct: bool, unread: Option<Unread>) -> f64 {
    let baseline = if is_direct { DIRECT_BASELINE } else { 0.0 };
    let score = match unread {
        Some(u) => u.max_importance + unread_age_bonus(u.waiting_secs),
        None => 0.0,
    };
    round_score(score.max(baseline).min(1.0))
}

/// [`room_importance`] of a stored room at `now` (Unix seconds): its unread messages are
/// the others' messages after the read marker when that is a stored message, else the
/// newest `unread_count`; read in the caller's connection or transaction.
pub fn unread_room_importance(conn: &Connection, row: &RoomRow, now: i64) -> rusqlite::Result<f64> {
    let unread = if row.unread_count <= 0 {
        None
    } else {
        let read_ts = match &row.last_read_event_id {
            Some(id) => messages::ts_of_event(conn, &row.user_id, id)?,
            None => None,
        };
        let found = match read_ts {
            Some(ts) => messages::unread_after(conn, &row.user_id, &row.room_id, ts)?,
            None => messages::unread_of_latest(conn, &row.user_id, &row.room_id, row.unread_count)?,
        };
        found.map(|(max_importance, oldest_ts_ms)| Unread {
            max_importance,
            waiting_secs: now - oldest_ts_ms / 1000,
        })
    };
    Ok(room_importance(row.is_direct, unread))
}

/// `m.mentions.user_ids` of an event content (empty when absent).
pub fn mentioned_ids(content: &serde_json::Value) -> Vec<&str> {
    content["m.mentions"]["user_ids"]
        .as_array()
        .map(|ids| ids.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `body` (or `m.mentions.user_ids`) mentions the reader, as [`score`] decides it.
pub fn is_mentioned(reader: &Reader, body: &str, mentioned_ids: &[&str]) -> bool {
    is_mention(reader, &body.to_lowercase(), mentioned_ids)
}

/// Ends with `?`, or its first word is a question word.
pub fn is_question(text: &str) -> bool {
    is_question_lower(&text.to_lowercase())
}

fn is_question_lower(lower: &str) -> bool {
    let trimmed = lower.trim();
    if trimmed.ends_with('?') {
        return true;
    }
    words(trimmed)
        .next()
        .is_some_and(|w| QUESTION_WORDS.contains(&w))
}

fn is_mention(reader: &Reader, lower: &str, mentioned_ids: &[&str]) -> bool {
    if reader.matrix_user_id.is_empty() {
        return false;
    }
    if mentioned_ids.contains(&reader.matrix_user_id.as_str()) {
        return true;
    }
    if lower.contains(&reader.matrix_user_id.to_lowercase()) {
        return true;
    }
    if !reader.localpart.is_empty() && contains_phrase(lower, &reader.localpart.to_lowercase()) {
        return true;
    }
    reader
        .display_name
        .as_deref()
        .is_some_and(|name| contains_phrase(lower, &name.to_lowercase()))
}

/// Words: maximal runs of alphanumeric characters and underscores ("how's" starts with
/// "how").
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Whether `needle` occurs in `haystack` with no word character directly before or after.
fn contains_phrase(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let is_word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut start = 0;
    while let Some(pos) = haystack[start..].find(needle) {
        let at = start + pos;
        let end = at + needle.len();
        if !is_word(haystack[..at].chars().next_back()) && !is_word(haystack[end..].chars().next())
        {
            return true;
        }
        start = at + haystack[at..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Scores are kept to three decimals.
pub fn round_score(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A message the homeserver sync just stored (what the AI scorer is handed).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMessage {
    pub room_id: String,
    pub event_id: String,
    pub message_id: String,
    /// Someone else's message with content: worth scoring again (by the AI service).
    pub scorable: bool,
}

/// Refines the scores of newly stored messages off the sync path (the AI scorer in
/// `workers::scorer`); the sync hands each committed batch over and never waits.
pub trait Rescorer: Send + Sync {
    fn submit(
        &self,
        ctx: &crate::services::Context,
        user_id: &str,
        reader: &Reader,
        new: &[NewMessage],
    );
}

#[cfg(test)]
mod tests;
