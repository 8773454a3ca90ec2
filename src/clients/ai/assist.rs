//! The AI routes' calls to the service: free-form chat completions (summaries,
//! translations) and embeddings (AI search). Each request, and a route's calls together
//! ([`AiClient::within`]), are bounded by `[ai] timeout` (30 s by default): a service that
//! accepts the connection and never answers costs one timeout, then 502.
//!
//! Wire protocol: `POST {url}/chat/completions` as for scoring, and `POST {url}/embeddings`
//! `{model, input: [texts]}` → `{data: [{index, embedding: [numbers]}]}` (OpenAI, Ollama,
//! llama.cpp, vLLM).

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

use super::{snippet, AiClient, AiError, MAX_ANSWER_BYTES};

/// Larger embedding answers are refused unread (64 inputs × 4096 dimensions fit).
const MAX_EMBEDDING_BYTES: usize = 16 * 1024 * 1024;

impl AiClient {
    /// The chat model's name (reported as `model`).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The embedding model's name.
    pub fn embedding_model(&self) -> &str {
        &self.embedding_model
    }

    /// How long a route may wait for the service in all (`[ai] timeout`).
    pub fn timeout(&self) -> Duration {
        self.assist_timeout
    }

    /// Runs a route's calls to the service under one deadline of [`Self::timeout`], so
    /// several sequential requests (AI search embeds in batches) cannot add up past it.
    pub async fn within<T>(
        &self,
        work: impl Future<Output = Result<T, AiError>>,
    ) -> Result<T, AiError> {
        tokio::time::timeout(self.assist_timeout, work)
            .await
            .unwrap_or_else(|_| Err(AiError::Timeout(self.assist_timeout.as_secs())))
    }

    /// One chat completion: `system` and `user` messages; the answer's text. With
    /// `json_mode` the service is asked for a JSON object.
    pub async fn complete(
        &self,
        system: &str,
        user: &str,
        json_mode: bool,
    ) -> Result<String, AiError> {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
        });
        if json_mode {
            body["response_format"] = json!({"type": "json_object"});
        }
        let value = self.post(&self.endpoint, &body, MAX_ANSWER_BYTES).await?;
        value["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AiError::Malformed("no choices[0].message.content".into()))
    }

    /// Embeddings of `inputs`, in order.
    pub async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>, AiError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let body = json!({"model": self.embedding_model, "input": inputs});
        let value = self
            .post(&self.embeddings_endpoint(), &body, MAX_EMBEDDING_BYTES)
            .await?;
        parse_embeddings(&value, inputs.len())
    }

    fn embeddings_endpoint(&self) -> String {
        let base = self
            .endpoint
            .strip_suffix("/chat/completions")
            .unwrap_or(&self.endpoint);
        format!("{base}/embeddings")
    }

    async fn post(&self, url: &str, body: &Value, max_bytes: usize) -> Result<Value, AiError> {
        let limit = self.assist_timeout;
        let mut request = self.http.post(url).timeout(limit).json(body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key.expose());
        }
        let timeout = |e: reqwest::Error| {
            if e.is_timeout() {
                AiError::Timeout(limit.as_secs())
            } else {
                AiError::Unreachable(e.to_string())
            }
        };
        let resp = request.send().await.map_err(timeout)?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(timeout)?;
        if !status.is_success() {
            return Err(AiError::Http {
                status: status.as_u16(),
                detail: snippet(&bytes),
            });
        }
        if bytes.len() > max_bytes {
            return Err(AiError::Malformed(format!(
                "answer of {} bytes is too large",
                bytes.len()
            )));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| AiError::Malformed(format!("the response is not JSON: {e}")))
    }
}

/// `data[i].embedding` ordered by `index`; every vector the same non-zero length.
pub fn parse_embeddings(value: &Value, want: usize) -> Result<Vec<Vec<f32>>, AiError> {
    let data = value["data"]
        .as_array()
        .ok_or_else(|| AiError::Malformed("no data array".into()))?;
    if data.len() != want {
        return Err(AiError::Malformed(format!(
            "{} embeddings for {want} inputs",
            data.len()
        )));
    }
    let mut out: Vec<(u64, Vec<f32>)> = Vec::with_capacity(want);
    for (i, item) in data.iter().enumerate() {
        let index = item["index"].as_u64().unwrap_or(i as u64);
        let vector: Option<Vec<f32>> = item["embedding"]
            .as_array()
            .map(|xs| xs.iter().map(|x| x.as_f64().map(|f| f as f32)).collect())
            .and_then(|v: Option<Vec<f32>>| v);
        let vector = vector
            .filter(|v| !v.is_empty())
            .ok_or_else(|| AiError::Malformed(format!("data[{i}].embedding is not numbers")))?;
        out.push((index, vector));
    }
    out.sort_by_key(|(i, _)| *i);
    let dims = out[0].1.len();
    if out.iter().any(|(_, v)| v.len() != dims) {
        return Err(AiError::Malformed("embeddings of different lengths".into()));
    }
    Ok(out.into_iter().map(|(_, v)| v).collect())
}
