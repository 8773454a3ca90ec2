//! A stand-in for an OpenAI-compatible AI service (Ollama, llama.cpp, vLLM, OpenAI).
//!
//! A real HTTP server (poem) on 127.0.0.1:0 inside the test process that speaks the
//! OpenAI wire protocol under `/v1`: `GET /v1/models` lists the one model, and
//! `POST /v1/chat/completions` answers an OpenAI-shaped `chat.completion` whose
//! `choices[0].message.content` is the scripted [`Answer`]. Every request is recorded
//! (method, path, `Authorization`, JSON body) so tests can check what switchboard sent.
//! [`AiStandIn::set_hang`] makes it a service that takes a request and never answers.

use std::sync::{Arc, Mutex};

use poem::http::StatusCode;
use poem::{Request, Response};
use serde_json::{json, Value};
use tokio::sync::oneshot;

pub const MODEL: &str = "standin-llama";
pub const API_KEY: &str = "standin-ai-key-0123456789";

/// What the next chat completions answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A well-formed verdict.
    Score {
        importance: f64,
        category: String,
        is_question: bool,
    },
    /// An error status with a short body.
    Status(u16),
    /// HTTP 200 whose message content is not the expected JSON.
    Garbage,
    /// HTTP 200 with this message content (summaries, translations).
    Text(String),
}

impl Answer {
    pub fn score(importance: f64, category: &str, is_question: bool) -> Self {
        Self::Score {
            importance,
            category: category.to_owned(),
            is_question,
        }
    }
}

/// One request as the stand-in received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

impl Recorded {
    /// The user message of a chat completion request, parsed (switchboard sends JSON).
    pub fn user_message(&self) -> Value {
        let content = self.body["messages"][1]["content"].as_str().unwrap_or("");
        serde_json::from_str(content).unwrap_or(Value::Null)
    }
}

struct Inner {
    answer: Mutex<Answer>,
    /// Status `/v1/embeddings` answers with instead of vectors (None: vectors).
    embeddings_status: Mutex<Option<u16>>,
    /// Requests to completions and embeddings are read, recorded and never answered.
    hang: std::sync::atomic::AtomicBool,
    requests: Mutex<Vec<Recorded>>,
}

/// Concepts of the stand-in's embeddings: a text's vector counts, per concept, the words of
/// it the text contains, so texts about the same thing are near whatever their words.
pub const CONCEPTS: &[&[&str]] = &[
    &["car", "automobile", "vehicle", "garage", "mechanic"],
    &["dog", "puppy", "leash", "vet"],
    &["dinner", "restaurant", "pizza", "pasta", "lunch"],
    &["invoice", "payment", "bill", "money"],
];

/// The stand-in's embedding of one text (one dimension per concept, plus a constant).
pub fn concept_vector(text: &str) -> Vec<f64> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut v: Vec<f64> = CONCEPTS
        .iter()
        .map(|c| words.iter().filter(|w| c.contains(w)).count() as f64)
        .collect();
    v.push(0.05);
    v
}

/// A running stand-in; stopped on drop.
pub struct AiStandIn {
    pub base: String,
    inner: Arc<Inner>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl AiStandIn {
    pub async fn start(answer: Answer) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind AI stand-in");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let inner = Arc::new(Inner {
            answer: Mutex::new(answer),
            embeddings_status: Mutex::new(None),
            hang: std::sync::atomic::AtomicBool::new(false),
            requests: Mutex::new(Vec::new()),
        });
        let app = {
            let inner = inner.clone();
            poem::endpoint::make(move |req: Request| {
                let inner = inner.clone();
                async move { inner.handle(req).await }
            })
        };
        let (tx, _task) = super::serve_standin(listener, app);
        Self {
            base: format!("http://127.0.0.1:{port}"),
            inner,
            shutdown: Some(tx),
        }
    }

    /// The `[ai]` section pointing at this stand-in, with its model and key.
    pub fn config_section(&self) -> String {
        format!(
            "[ai]\nurl = \"{}/v1\"\nmodel = \"{MODEL}\"\napi_key = \"{API_KEY}\"\n\n",
            self.base
        )
    }

    pub fn set_answer(&self, answer: Answer) {
        *self.inner.answer.lock().unwrap() = answer;
    }

    /// Makes `/v1/embeddings` answer `status` (None: vectors again).
    pub fn set_embeddings_status(&self, status: Option<u16>) {
        *self.inner.embeddings_status.lock().unwrap() = status;
    }

    /// Makes completions and embeddings accept the request and never answer (a stuck
    /// model server); `false` answers again.
    pub fn set_hang(&self, hang: bool) {
        self.inner
            .hang
            .store(hang, std::sync::atomic::Ordering::SeqCst);
    }

    /// The requests received at `path` (e.g. `/v1/embeddings`).
    pub fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.requests.lock().unwrap().clone()
    }

    /// The chat completion requests received so far.
    pub fn completions(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path == "/v1/chat/completions")
            .collect()
    }
}

impl Drop for AiStandIn {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl Inner {
    async fn handle(&self, mut req: Request) -> Response {
        let method = req.method().to_string();
        let path = req.uri().path().to_owned();
        let authorization = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = req.take_body().into_vec().await.unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        self.requests.lock().unwrap().push(Recorded {
            method: method.clone(),
            path: path.clone(),
            authorization: authorization.clone(),
            body: body.clone(),
        });
        if authorization.as_deref() != Some(&format!("Bearer {API_KEY}")) {
            return error(401, "invalid_api_key", "Incorrect API key provided");
        }
        let answering = matches!(path.as_str(), "/v1/chat/completions" | "/v1/embeddings");
        if answering && self.hang.load(std::sync::atomic::Ordering::SeqCst) {
            // Connection open, request read, no answer: longer than any test waits.
            tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        }
        match (method.as_str(), path.as_str()) {
            ("GET", "/v1/models") => json_response(
                200,
                json!({"object": "list", "data": [
                    {"id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "standin"}
                ]}),
            ),
            ("POST", "/v1/chat/completions") => self.complete(&body),
            ("POST", "/v1/embeddings") => self.embed(&body),
            _ => error(404, "not_found", "Unknown endpoint"),
        }
    }

    fn complete(&self, body: &Value) -> Response {
        if body["model"] != MODEL {
            return error(404, "model_not_found", "The model does not exist");
        }
        let answer = self.answer.lock().unwrap().clone();
        let content = match answer {
            Answer::Score {
                importance,
                category,
                is_question,
            } => json!({"importance": importance, "category": category, "isQuestion": is_question})
                .to_string(),
            Answer::Garbage => "Sure! This message looks fairly important to me.".to_owned(),
            Answer::Text(text) => text,
            Answer::Status(status) => {
                return error(status, "server_error", "The server had an error")
            }
        };
        json_response(
            200,
            json!({
                "id": "chatcmpl-standin",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": MODEL,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }],
                "usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100},
            }),
        )
    }
}

impl Inner {
    /// OpenAI `/v1/embeddings`: `{model, input: string | [string]}` →
    /// `{object: "list", data: [{object: "embedding", index, embedding}], model, usage}`.
    fn embed(&self, body: &Value) -> Response {
        if body["model"] != MODEL {
            return error(404, "model_not_found", "The model does not exist");
        }
        if let Some(status) = *self.embeddings_status.lock().unwrap() {
            return error(status, "server_error", "The server had an error");
        }
        let inputs: Vec<String> = match &body["input"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            _ => return error(400, "invalid_input", "input must be a string or an array"),
        };
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(
                |(i, t)| json!({"object": "embedding", "index": i, "embedding": concept_vector(t)}),
            )
            .collect();
        json_response(
            200,
            json!({"object": "list", "data": data, "model": MODEL,
                   "usage": {"prompt_tokens": 8, "total_tokens": 8}}),
        )
    }
}

fn json_response(status: u16, body: Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .content_type("application/json")
        .body(body.to_string())
}

/// An OpenAI-style error body.
fn error(status: u16, code: &str, message: &str) -> Response {
    json_response(
        status,
        json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}}),
    )
}
