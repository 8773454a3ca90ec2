//! The AI service (`[ai]`): an OpenAI-compatible chat-completions client that scores one
//! incoming message, and the background [`Scorer`] that applies its answers.
//!
//! When it is configured, the AI service decides importance, category and question
//! detection. Ingest cannot wait for it (the sync transaction stays fast and the
//! service may be slow or down), so every message is first stored with the heuristic of
//! `services::importance`, and the scorer refines it afterwards; see that module for the
//! whole flow. The caller names the categories a verdict may carry.
//!
//! Wire protocol: `POST {url}/chat/completions` with `Authorization: Bearer <api_key>`
//! when a key is set, a system prompt that asks for one JSON object, the message facts as
//! JSON in the user message, `temperature: 0` and `response_format: json_object` (Ollama,
//! llama.cpp, vLLM and OpenAI all accept it). The answer is
//! `choices[0].message.content` = `{"importance": 0..1, "category": "...", "isQuestion":
//! bool}`; importance is clamped to `[0, 1]`, and anything else (unknown category,
//! missing field, not JSON) is an [`AiError::Malformed`], never a guess.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::config::{AiConfig, Secret};

/// How long one scoring request may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Larger answers are refused unread (one verdict is a few hundred bytes).
const MAX_ANSWER_BYTES: usize = 256 * 1024;

pub mod assist;

const SYSTEM_PROMPT: &str = "You triage chat messages for a unified inbox. You get one \
incoming message as JSON: its text, its Matrix msgtype, whether the room is a direct \
(one-to-one) chat and whether the reader is mentioned. Rate how much the reader's attention \
it needs. Answer with one JSON object and nothing else: {\"importance\": number from 0 \
(noise) to 1 (needs attention now), \"category\": one of \"urgent\" (time-critical or an \
emergency), \"mention\" (addresses the reader), \"question\" (asks the reader something), \
\"media\" (mainly a photo, video, audio or file), \"direct\" (an ordinary direct-chat \
message), \"general\" (anything else), \"isQuestion\": true if the message asks a \
question, else false}.";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AiError {
    /// Connection refused, DNS or TLS failure, connection reset.
    #[error("the AI service is unreachable: {0}")]
    Unreachable(String),
    /// No complete answer within [`REQUEST_TIMEOUT`].
    #[error("the AI service did not answer within {0} s")]
    Timeout(u64),
    /// The service answered with an error status.
    #[error("the AI service answered HTTP {status}: {detail}")]
    Http { status: u16, detail: String },
    /// A success status whose body is not the expected completion or verdict.
    #[error("unexpected answer from the AI service: {0}")]
    Malformed(String),
}

/// The service's verdict on one message.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// In `[0, 1]`, three decimals.
    pub importance: f64,
    /// One of the categories the caller allowed.
    pub category: &'static str,
    pub is_question: bool,
}

/// What the AI service is told about one incoming message.
#[derive(Debug, Clone, Copy)]
pub struct ScoreRequest<'a> {
    pub text: &'a str,
    pub msgtype: &'a str,
    pub is_direct: bool,
    /// As the caller's heuristic decides it.
    pub mentions_reader: bool,
    /// The categories a verdict may name; any other is [`AiError::Malformed`].
    pub categories: &'static [&'static str],
}

/// A client of one configured AI service.
#[derive(Clone)]
pub struct AiClient {
    http: reqwest::Client,
    endpoint: String,
    model: String,
    embedding_model: String,
    api_key: Option<Secret>,
    /// Bound of one AI route's calls in all (`[ai] timeout`).
    assist_timeout: Duration,
}

impl AiClient {
    /// Uses the shared outbound client (`state.http`), with [`REQUEST_TIMEOUT`] per request.
    pub fn new(config: &AiConfig, http: reqwest::Client) -> Self {
        Self {
            http,
            endpoint: format!("{}/chat/completions", config.url.trim_end_matches('/')),
            model: config.model.clone(),
            embedding_model: config
                .embedding_model
                .clone()
                .unwrap_or_else(|| config.model.clone()),
            api_key: config.api_key.clone(),
            assist_timeout: config.timeout.0,
        }
    }

    /// Asks for the score of one message.
    pub async fn score(&self, facts: &ScoreRequest<'_>) -> Result<Verdict, AiError> {
        let mut request = self
            .http
            .post(&self.endpoint)
            .timeout(REQUEST_TIMEOUT)
            .json(&request_body(&self.model, facts));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let resp = request.send().await.map_err(transport)?;
        let status = resp.status();
        let body = resp.bytes().await.map_err(transport)?;
        if !status.is_success() {
            return Err(AiError::Http {
                status: status.as_u16(),
                detail: snippet(&body),
            });
        }
        if body.len() > MAX_ANSWER_BYTES {
            return Err(AiError::Malformed(format!(
                "answer of {} bytes is too large",
                body.len()
            )));
        }
        parse_completion(&body, facts.categories)
    }
}

/// The chat-completions request for one message.
pub fn request_body(model: &str, facts: &ScoreRequest<'_>) -> Value {
    let message = json!({
        "text": facts.text,
        "msgtype": facts.msgtype,
        "directChat": facts.is_direct,
        "mentionsReader": facts.mentions_reader,
    });
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": message.to_string()},
        ],
        "temperature": 0,
        "response_format": {"type": "json_object"},
    })
}

/// Reads the verdict out of a chat-completions response body.
pub fn parse_completion(
    body: &[u8],
    categories: &'static [&'static str],
) -> Result<Verdict, AiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| AiError::Malformed(format!("the response is not JSON: {e}")))?;
    let content = value["choices"][0]["message"]["content"]
        .as_str()
        .ok_or_else(|| AiError::Malformed("no choices[0].message.content".into()))?;
    parse_verdict(content, categories)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireVerdict {
    importance: f64,
    category: String,
    is_question: bool,
}

/// Parses the model's JSON verdict: importance clamped to `[0, 1]` (three decimals), the
/// category one of `categories`.
pub fn parse_verdict(
    content: &str,
    categories: &'static [&'static str],
) -> Result<Verdict, AiError> {
    let malformed = |e: serde_json::Error| {
        AiError::Malformed(format!("the verdict is not the expected JSON object: {e}"))
    };
    let value: Value = serde_json::from_str(strip_code_fence(content)).map_err(malformed)?;
    if !value.is_object() {
        return Err(AiError::Malformed(
            "the verdict is not a JSON object".into(),
        ));
    }
    let verdict: WireVerdict = serde_json::from_value(value).map_err(malformed)?;
    let wanted = verdict.category.trim().to_ascii_lowercase();
    let category = categories
        .iter()
        .copied()
        .find(|c| *c == wanted)
        .ok_or_else(|| AiError::Malformed(format!("unknown category {:?}", verdict.category)))?;
    Ok(Verdict {
        importance: (verdict.importance.clamp(0.0, 1.0) * 1000.0).round() / 1000.0,
        category,
        is_question: verdict.is_question,
    })
}

/// Some local models wrap JSON in a Markdown code fence even in JSON mode.
fn strip_code_fence(content: &str) -> &str {
    let trimmed = content.trim();
    let Some(inner) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

fn transport(e: reqwest::Error) -> AiError {
    if e.is_timeout() {
        AiError::Timeout(REQUEST_TIMEOUT.as_secs())
    } else {
        AiError::Unreachable(e.to_string())
    }
}

/// The start of an error body, for the log.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None if text.is_empty() => "(empty body)".to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
