//! An AI service that accepts the connection, reads the request and never answers (the
//! OpenAI-protocol stand-in in its hang mode): every AI route answers 502
//! `ai_unavailable` within `[ai] timeout` (2 s here), never hangs and never 500s.

use std::time::{Duration, Instant};

use serde_json::json;

use super::routes::{post, room_with};
use crate::common::ai::{AiStandIn, Answer};
use crate::common::*;
use crate::search::wait_for_results;

const TIMEOUT: Duration = Duration::from_secs(2);

/// Requests the stand-in received that carry `marker` (a system prompt's start, or the
/// embeddings path), as the positive sign that the route reached the service.
fn reached(ai: &AiStandIn, marker: &str) -> usize {
    ai.requests()
        .iter()
        .filter(|r| {
            r.path == marker
                || r.body["messages"][0]["content"]
                    .as_str()
                    .is_some_and(|p| p.starts_with(marker))
        })
        .count()
}

#[tokio::test]
async fn a_service_that_never_answers_is_502_within_the_configured_timeout() {
    let ai = AiStandIn::start(Answer::Text("A short summary.".into())).await;
    let app =
        TestApp::start_with_mail_and(format!("{}timeout = \"2s\"\n", ai.config_section())).await;
    let me = app.sign_up("ai.hang").await;
    let jwt = me.access_token.clone();
    let (room, _bob) = room_with(&me, &["please pay the invoice", "is it done?"]).await;
    wait_for_results(&app, &jwt, "q=invoice", 1).await;
    // Answering, the route works: the timeout is what the next calls hit.
    let ok = expect_json(
        post(&app, &jwt, "/api/ai/summarize", json!({"roomId": room})).await,
        200,
    )
    .await;
    assert_eq!(ok["summary"], "A short summary.", "{ok}");

    ai.set_hang(true);
    for (path, body, marker) in [
        (
            "/api/ai/summarize",
            json!({"roomId": room}),
            "You summarize",
        ),
        (
            "/api/ai/translate",
            json!({"text": "Hallo", "targetLanguage": "en"}),
            "You translate",
        ),
        (
            "/api/ai/search",
            json!({"query": "invoice"}),
            "/v1/embeddings",
        ),
    ] {
        let before = reached(&ai, marker);
        let started = Instant::now();
        let resp = post(&app, &jwt, path, body).await;
        let took = started.elapsed();
        let err = expect_error(resp, 502, "ai_unavailable").await;
        assert!(
            reached(&ai, marker) > before,
            "{path}: the request never reached the stand-in"
        );
        assert!(
            took >= TIMEOUT - Duration::from_millis(100) && took < TIMEOUT + Duration::from_secs(4),
            "{path}: answered after {took:?}, the timeout is {TIMEOUT:?}"
        );
        assert_eq!(
            err["message"], "the AI service did not answer within 2 s",
            "{path}"
        );
    }
}
