//! AI routes (native sessions only): summaries, translations and AI search.
//!
//! - With `[ai]`: the OpenAI-compatible service of the config does the work. Only the
//!   minimum text leaves the server, and only to that endpoint: message bodies, with the
//!   senders replaced by labels ("me", "p1", "p2", …) for summaries of rooms and e-mail
//!   threads ([`thread`]); the one text to translate; message and mail texts and the query
//!   for embeddings. Upstream failures are 502 `ai_unavailable`, never a hang or a 500:
//!   each route's calls are bounded together by `[ai] timeout` ([`AiClient::within`]).
//! - Without `[ai]`: summaries are extractive (the most important messages by the
//!   heuristic's scores, `model: "extractive"`), AI search is keyword search
//!   (`model: "keyword"`), translation is 503 `ai_not_configured`.
//! - Text answers are sealed to the user's registered X25519 key like history
//!   (`encryptedSummary`, `encryptedTranslation`), plain when no key is registered.

use std::collections::HashMap;

use rusqlite::Connection;
use serde::Deserialize;

use crate::clients::ai::{AiClient, AiError};
use crate::crypto::{self, DataKey};
use crate::error::{AppError, AppResult, ErrorCode};
use crate::services::conversations;
use crate::services::public_key::validate_public_key;
use crate::services::session::Principal;
use crate::services::users;
use crate::services::Context;
use crate::store::messages::{self as stored, MessageRow, PageStart};
use crate::store::user_keys;
use crate::store::users::UserRow;

pub mod semantic;
pub mod thread;

/// Messages a summary reads at most (the newest since `since`).
pub const SUMMARY_WINDOW: i64 = 200;
/// Characters of conversation sent for an AI summary at most (the newest that fit).
const SUMMARY_MAX_CHARS: usize = 16_000;
/// Longest text to translate, in characters.
pub const MAX_TRANSLATE_CHARS: usize = 10_000;

const SUMMARY_PROMPT: &str = "You summarize a chat conversation for its reader, who is \
labelled \"me\"; other participants are labelled p1, p2, …. Answer with a short plain-text \
summary (at most five sentences) in the conversation's main language: what was discussed, \
decided or asked of the reader.";

const TRANSLATE_PROMPT: &str = "You translate text. The user message is JSON: \
{\"targetLanguage\": ..., \"text\": ...}. Answer with one JSON object and nothing else: \
{\"translation\": the text translated into targetLanguage, \"detectedLanguage\": the \
ISO 639-1 code of the text's language}.";

/// A text answer: sealed to the user's key when one is registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerText {
    Plain(String),
    Sealed(crypto::Envelope),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub summary: AnswerText,
    pub message_count: usize,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translation {
    pub translation: AnswerText,
    pub detected_language: Option<String>,
    pub model: String,
}

/// AI features are for native sessions (docs/api.md); the gate refuses tokens already.
pub fn require_native(principal: &Principal) -> AppResult<&str> {
    match principal {
        Principal::User { user_id, .. } => Ok(user_id),
        Principal::ApiToken { .. } => Err(AppError::forbidden(
            ErrorCode::ForbiddenForApiToken,
            "AI features are for native sessions only",
        )),
    }
}

/// The configured service, if any.
pub fn client(state: &Context) -> Option<AiClient> {
    state
        .config
        .ai
        .as_ref()
        .map(|c| AiClient::new(c, state.http.clone()))
}

/// Any failure of the service, as the AI routes answer it.
pub fn unavailable(e: AiError) -> AppError {
    tracing::warn!(error = %e, "AI service request failed");
    AppError::BadGateway {
        code: ErrorCode::AiUnavailable,
        message: match e {
            AiError::Timeout(_) => e.to_string(),
            AiError::Unreachable(_) => "the AI service is unreachable".to_owned(),
            _ => format!("the AI service failed: {e}"),
        },
    }
}

/// The user, their data key and (if registered) their public key.
pub(crate) fn keys_of(
    c: &Connection,
    state_master: &crypto::MasterKey,
    user_id: &str,
) -> AppResult<(UserRow, DataKey, Option<[u8; 32]>)> {
    let user = crate::services::users::load_row(c, user_id)?;
    conversations::require_readable(&user)?;
    let dek = users::data_key(state_master, &user)?;
    let recipient = user_keys::find(c, user_id)?
        .map(|k| validate_public_key(&k.public_key))
        .transpose()
        .map_err(|_| AppError::internal("stored public key is malformed"))?;
    Ok((user, dek, recipient))
}

fn seal(text: String, recipient: Option<[u8; 32]>) -> AppResult<AnswerText> {
    match recipient {
        Some(r) => crypto::seal_to(&r, text.as_bytes())
            .map(AnswerText::Sealed)
            .map_err(|_| AppError::internal("cannot seal to the key")),
        None => Ok(AnswerText::Plain(text)),
    }
}

/// A readable message of the conversation being summarized: who sent it (a Matrix ID or
/// an e-mail address) and the heuristic's view of it.
pub(crate) struct Line {
    pub sender: String,
    pub text: String,
    pub importance: f64,
    pub is_question: bool,
}

/// `POST /api/ai/summarize` for a room.
pub async fn summarize(
    state: &Context,
    user_id: &str,
    room_id: &str,
    since: Option<i64>,
) -> AppResult<Summary> {
    let master = state.master.clone();
    let (uid, room) = (user_id.to_owned(), room_id.to_owned());
    let (lines, recipient, me) = state
        .store
        .run(move |c| {
            let (user, dek, recipient) = keys_of(c, &master, &uid)?;
            stored::room_platform(c, &uid, &room)?.ok_or_else(|| AppError::not_found("room"))?;
            let rows = stored::room_page(c, &uid, &room, &PageStart::newest(), SUMMARY_WINDOW)?;
            let mut lines: Vec<Line> = rows
                .into_iter()
                .filter(|r| since.is_none_or(|s| r.ts > s) && !r.redacted)
                .filter(|r| r.msgtype != "m.room.encrypted")
                .filter_map(|row| {
                    let body = conversations::open_message(&dek, &row.id, &row.content_enc)
                        .ok()?
                        .body;
                    (!body.trim().is_empty()).then(|| line_of(&row, body))
                })
                .collect();
            lines.reverse(); // oldest first
            Ok::<_, AppError>((lines, recipient, user.matrix_user_id))
        })
        .await?;
    summarize_lines(state, lines, me.as_deref(), SUMMARY_PROMPT, None, recipient).await
}

fn line_of(row: &MessageRow, text: String) -> Line {
    Line {
        sender: row.sender_id.clone(),
        text,
        importance: row.importance,
        is_question: row.is_question,
    }
}

/// The summary of `lines` (oldest first): by the service when one is configured (with
/// `heading` above the conversation), otherwise extractive; sealed to `recipient`.
pub(crate) async fn summarize_lines(
    state: &Context,
    lines: Vec<Line>,
    me: Option<&str>,
    prompt: &str,
    heading: Option<String>,
    recipient: Option<[u8; 32]>,
) -> AppResult<Summary> {
    let message_count = lines.len();
    let (text, model) = match client(state) {
        Some(ai) if !lines.is_empty() => {
            let mut conversation = conversation_text(&lines, me);
            if let Some(h) = heading {
                conversation = format!("{h}\n\n{conversation}");
            }
            let text = ai
                .within(ai.complete(prompt, &conversation, false))
                .await
                .map_err(unavailable)?;
            (text.trim().to_owned(), ai.model().to_owned())
        }
        _ => (extractive(&lines), "extractive".to_owned()),
    };
    Ok(Summary {
        summary: seal(text, recipient)?,
        message_count,
        model,
    })
}

/// The conversation as sent to the service: one `label: text` line per message, senders
/// pseudonymised, the newest lines that fit [`SUMMARY_MAX_CHARS`].
fn conversation_text(lines: &[Line], me: Option<&str>) -> String {
    let mut labels: HashMap<&str, String> = HashMap::new();
    let mut out: Vec<String> = Vec::new();
    let mut used = 0;
    for line in lines.iter().rev() {
        let n = labels.len();
        let label = if me.is_some_and(|m| line.sender.eq_ignore_ascii_case(m)) {
            "me".to_owned()
        } else {
            labels
                .entry(line.sender.as_str())
                .or_insert_with(|| format!("p{}", n + 1))
                .clone()
        };
        let entry = format!("{label}: {}", line.text.replace('\n', " "));
        used += entry.chars().count() + 1;
        if used > SUMMARY_MAX_CHARS && !out.is_empty() {
            break;
        }
        out.push(entry);
    }
    out.reverse();
    out.join("\n")
}

/// The most important messages by the heuristic's scores (importance, questions, some
/// length), in conversation order: up to five, a quarter of the conversation at least one.
pub(crate) fn extractive_pick(scores: &[(f64, bool, usize)]) -> Vec<usize> {
    let want = (scores.len() / 4).clamp(1, 5).min(scores.len());
    let mut ranked: Vec<(usize, f64)> = scores
        .iter()
        .enumerate()
        .map(|(i, &(importance, question, chars))| {
            let len = (chars as f64 / 400.0).min(0.2);
            (i, importance + if question { 0.15 } else { 0.0 } + len)
        })
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut picked: Vec<usize> = ranked.into_iter().take(want).map(|(i, _)| i).collect();
    picked.sort_unstable();
    picked
}

fn extractive(lines: &[Line]) -> String {
    let scores: Vec<(f64, bool, usize)> = lines
        .iter()
        .map(|l| (l.importance, l.is_question, l.text.chars().count()))
        .collect();
    extractive_pick(&scores)
        .into_iter()
        .map(|i| {
            let text: String = lines[i].text.chars().take(300).collect();
            format!("{}: {}", lines[i].sender, text.replace('\n', " "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What `POST /api/ai/translate` translates.
#[derive(Debug, Clone)]
pub enum TranslateSource {
    Message(String),
    Text(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TranslateAnswer {
    translation: String,
    #[serde(default)]
    detected_language: Option<String>,
}

/// `POST /api/ai/translate`.
pub async fn translate(
    state: &Context,
    user_id: &str,
    source: TranslateSource,
    target: &str,
) -> AppResult<Translation> {
    let ai = client(state).ok_or_else(|| AppError::Unavailable {
        code: ErrorCode::AiNotConfigured,
        message: "translation needs an AI service: configure [ai]".to_owned(),
        retry_after_secs: None,
    })?;
    let master = state.master.clone();
    let uid = user_id.to_owned();
    let (text, recipient) = state
        .store
        .run(move |c| {
            let (_, dek, recipient) = keys_of(c, &master, &uid)?;
            let text = match source {
                TranslateSource::Text(t) => t,
                TranslateSource::Message(id) => {
                    let row = crate::store::search_index::message_by_id(c, &uid, &id)?
                        .ok_or_else(|| AppError::not_found("message"))?;
                    conversations::open_message(&dek, &row.id, &row.content_enc)
                        .map_err(|_| AppError::not_found("message"))?
                        .body
                }
            };
            Ok::<_, AppError>((text, recipient))
        })
        .await?;
    if text.trim().is_empty() {
        return Err(AppError::invalid("messageId", "the message has no text"));
    }
    let request = serde_json::json!({"targetLanguage": target, "text": text}).to_string();
    let answer = ai
        .within(ai.complete(TRANSLATE_PROMPT, &request, true))
        .await
        .map_err(unavailable)?;
    let parsed: TranslateAnswer = serde_json::from_str(strip_fence(&answer)).map_err(|e| {
        unavailable(AiError::Malformed(format!(
            "the translation is not the expected JSON object: {e}"
        )))
    })?;
    Ok(Translation {
        translation: seal(parsed.translation, recipient)?,
        detected_language: parsed.detected_language,
        model: ai.model().to_owned(),
    })
}

fn strip_fence(content: &str) -> &str {
    let t = content.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extractive_summaries_keep_the_most_important_messages_in_order() {
        let scores = [
            (0.1, false, 10),
            (0.9, false, 10),
            (0.1, true, 10),
            (0.2, false, 10),
            (0.8, false, 10),
            (0.1, false, 10),
            (0.1, false, 10),
            (0.1, false, 10),
        ];
        assert_eq!(extractive_pick(&scores), vec![1, 4]);
        assert_eq!(extractive_pick(&[(0.0, false, 1)]), vec![0]);
        assert!(extractive_pick(&[]).is_empty());
    }
}
