//! `/api/ai/*`: summaries, translations and AI search (native sessions only).

use poem::web::Data;
use poem_openapi::payload::Json;
use poem_openapi::{Object, OpenApi};

use super::messages::EncryptedContent;
use super::search::{SearchPageView, SearchResultView};
use super::security::NativeAuth;
use super::ApiTags;
use crate::crypto::Envelope;
use crate::error::AppError;
use crate::services::ai::{self, semantic, AnswerText, TranslateSource};
use crate::state::AppState;

#[derive(Debug, Object)]
#[oai(rename = "AiSummarizeRequest", rename_all = "camelCase")]
pub struct SummarizeRequest {
    /// The room to summarize (or `threadId`, not both).
    pub room_id: Option<String>,
    /// A cached e-mail thread to summarize (its id in `GET /api/email/threads`).
    pub thread_id: Option<String>,
    /// Only messages after this time: milliseconds or RFC 3339. Default: the newest 200.
    pub since: Option<String>,
}

#[derive(Debug, Object)]
#[oai(rename = "AiSummary", rename_all = "camelCase")]
pub struct SummaryView {
    /// The summary as text (users without a registered key).
    #[oai(skip_serializing_if_is_none)]
    pub summary: Option<String>,
    /// The summary (UTF-8 text) sealed to the user's registered key, like message content.
    #[oai(skip_serializing_if_is_none)]
    pub encrypted_summary: Option<EncryptedContent>,
    /// Messages the summary covers.
    pub message_count: u64,
    /// The AI model, or `extractive` without an AI service.
    pub model: String,
}

#[derive(Debug, Object)]
#[oai(rename = "AiTranslateRequest", rename_all = "camelCase")]
pub struct TranslateRequest {
    /// A stored message to translate (or `text`, not both).
    pub message_id: Option<String>,
    /// Text to translate, 1 to 10000 characters.
    pub text: Option<String>,
    /// Language to translate into, e.g. `en`, `de` or `Brazilian Portuguese`.
    pub target_language: String,
}

#[derive(Debug, Object)]
#[oai(rename = "AiTranslation", rename_all = "camelCase")]
pub struct TranslationView {
    #[oai(skip_serializing_if_is_none)]
    pub translation: Option<String>,
    /// The translation (UTF-8 text) sealed to the user's registered key.
    #[oai(skip_serializing_if_is_none)]
    pub encrypted_translation: Option<EncryptedContent>,
    /// ISO 639-1 code of the source text, as the model detected it.
    pub detected_language: Option<String>,
    pub model: String,
}

#[derive(Debug, Object)]
#[oai(rename = "AiSearchRequest", rename_all = "camelCase")]
pub struct AiSearchRequest {
    /// What to look for, in words (1 to 500 characters).
    pub query: String,
    /// 1 to 50, default 20.
    pub limit: Option<i64>,
}

#[derive(Debug, Object)]
#[oai(rename = "AiSearchResult", rename_all = "camelCase")]
pub struct AiSearchView {
    /// Best first; the shape of `GET /api/search` results.
    pub results: Vec<SearchResultView>,
    /// The embedding model, or `keyword` without an AI service.
    pub model: String,
}

fn text_fields(t: AnswerText) -> (Option<String>, Option<EncryptedContent>) {
    match t {
        AnswerText::Plain(s) => (Some(s), None),
        AnswerText::Sealed(e) => (None, Some(envelope(&e))),
    }
}

fn envelope(e: &Envelope) -> EncryptedContent {
    let (ephemeral_pubkey, nonce, ciphertext) = e.to_base64();
    EncryptedContent {
        ephemeral_pubkey,
        nonce,
        ciphertext,
    }
}

fn one_of(a: &Option<String>, b: &Option<String>, names: &str) -> Result<(), AppError> {
    if a.is_some() == b.is_some() {
        return Err(AppError::invalid(names, "give exactly one of them"));
    }
    Ok(())
}

pub struct AiApi;

#[OpenApi(prefix_path = "/api/ai", tag = "ApiTags::Ai")]
impl AiApi {
    /// Summarize a conversation
    ///
    /// Native sessions only (personal tokens: 403 `forbidden_for_api_token`). A room
    /// (`roomId`) or a cached e-mail thread (`threadId`). With an AI service (`[ai]`), the
    /// newest messages or mails (up to 200, after `since`) are sent to it as text with the
    /// senders replaced by labels (a thread: its subject and each mail's text without the
    /// quoted earlier mails); without one, the summary is extractive: the most important
    /// messages by the built-in scores (`model: "extractive"`). Sealed to the user's
    /// registered key (`encryptedSummary`) when one is registered. 400 for neither or both
    /// of `roomId`/`threadId`; 404 unknown room or thread (also another user's); 502
    /// `ai_unavailable` when the service fails or does not answer within `[ai] timeout`
    /// (30 s by default).
    #[oai(path = "/summarize", method = "post", operation_id = "ai_summarize")]
    async fn summarize(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<SummarizeRequest>,
    ) -> Result<Json<SummaryView>, AppError> {
        let user_id = ai::require_native(&auth.0)?;
        one_of(&body.room_id, &body.thread_id, "roomId, threadId")?;
        let since = crate::services::search::run::parse_time("since", body.since.as_deref())?;
        let s = match (&body.room_id, &body.thread_id) {
            (Some(room), _) => {
                let room = crate::services::messages::parse_room_id("roomId", room)?;
                ai::summarize(&state, user_id, &room, since).await?
            }
            (_, Some(thread)) => {
                ai::thread::summarize_thread(&state, user_id, thread, since).await?
            }
            _ => unreachable!("checked by one_of"),
        };
        let (summary, encrypted_summary) = text_fields(s.summary);
        Ok(Json(SummaryView {
            summary,
            encrypted_summary,
            message_count: s.message_count as u64,
            model: s.model,
        }))
    }

    /// Translate a message or a text
    ///
    /// Native sessions only. Needs an AI service: 503 `ai_not_configured` without `[ai]`.
    /// Only the text to translate is sent to it. The translation is sealed to the user's
    /// registered key (`encryptedTranslation`) when one is registered. 400 for neither or
    /// both of `messageId`/`text`, an empty or too long text, or a bad `targetLanguage`;
    /// 404 unknown message; 502 `ai_unavailable` when the service fails or does not answer
    /// within `[ai] timeout` (30 s by default).
    #[oai(path = "/translate", method = "post", operation_id = "ai_translate")]
    async fn translate(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<TranslateRequest>,
    ) -> Result<Json<TranslationView>, AppError> {
        let user_id = ai::require_native(&auth.0)?;
        let body = body.0;
        one_of(&body.message_id, &body.text, "messageId, text")?;
        let target = body.target_language.trim();
        let n = target.chars().count();
        if !(2..=40).contains(&n)
            || !target
                .chars()
                .all(|c| c.is_alphabetic() || " -_".contains(c))
        {
            return Err(AppError::invalid(
                "targetLanguage",
                "must be a language name or code of 2 to 40 letters",
            ));
        }
        let source = match (body.message_id, body.text) {
            (Some(id), _) => TranslateSource::Message(id),
            (_, Some(t)) => {
                let n = t.chars().count();
                if t.trim().is_empty() || n > ai::MAX_TRANSLATE_CHARS {
                    return Err(AppError::invalid(
                        "text",
                        format!("must be 1 to {} characters", ai::MAX_TRANSLATE_CHARS),
                    ));
                }
                TranslateSource::Text(t)
            }
            _ => unreachable!("checked by one_of"),
        };
        let t = ai::translate(&state, user_id, source, target).await?;
        let (translation, encrypted_translation) = text_fields(t.translation);
        Ok(Json(TranslationView {
            translation,
            encrypted_translation,
            detected_language: t.detected_language,
            model: t.model,
        }))
    }

    /// Search by meaning
    ///
    /// Native sessions only. Chat messages and cached e-mail (`kind: "email"` with
    /// `threadId`). With an AI service, the user's newest 5,000 indexed items are ranked by
    /// meaning (embeddings from its `/embeddings` endpoint, stored sealed under the user's
    /// data key; up to 256 new items are embedded per search) and merged with keyword hits
    /// of the encrypted index over everything; without one, this is keyword search
    /// (`model: "keyword"`). Results have the shape of `GET /api/search` (snippets sealed
    /// to a registered key). 400 for an empty `query` or a `limit` outside 1 to 50; 502
    /// `ai_unavailable` when the service fails or does not answer within `[ai] timeout`.
    #[oai(path = "/search", method = "post", operation_id = "ai_search")]
    async fn search(
        &self,
        state: Data<&AppState>,
        auth: NativeAuth,
        body: Json<AiSearchRequest>,
    ) -> Result<Json<AiSearchView>, AppError> {
        let user_id = ai::require_native(&auth.0)?;
        let found = semantic::search(&state, user_id, &body.query, body.limit).await?;
        let page: SearchPageView = found.page.into();
        Ok(Json(AiSearchView {
            results: page.results,
            model: found.model,
        }))
    }
}
