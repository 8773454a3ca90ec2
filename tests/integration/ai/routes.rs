//! `/api/ai/*` against the real binary and Synapse: without `[ai]` (extractive summary,
//! keyword search, translation 503) and against the OpenAI-protocol stand-in
//! (`common::ai`), whose recorded requests show what left the server.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Value};
use switchboard::crypto::{open_envelope, Envelope};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::common::ai::{self as standin, AiStandIn, Answer};
use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;
use crate::search::{me_on_matrix, wait_for_results};

pub(crate) async fn room_with(me: &Session, texts: &[&str]) -> (String, MatrixUser) {
    let bob = mx::register("aibob").await;
    let room = me_on_matrix(me)
        .create_room(None, &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    for t in texts {
        bob.send_text(&room, t).await;
    }
    (room, bob)
}

pub(crate) async fn post(
    app: &TestApp,
    bearer: &str,
    path: &str,
    body: Value,
) -> reqwest::Response {
    app.post_json(path, Some(bearer), body).await
}

pub(crate) async fn register_key(app: &TestApp, me: &Session) -> StaticSecret {
    let mut bytes = [5u8; 32];
    bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    let secret = StaticSecret::from(bytes);
    let public = STANDARD.encode(PublicKey::from(&secret).as_bytes());
    expect_json(
        post(
            app,
            &me.access_token,
            "/api/keys/register",
            json!({"publicKey": public}),
        )
        .await,
        200,
    )
    .await;
    secret
}

pub(crate) fn open_text(secret: &StaticSecret, e: &Value) -> String {
    let env = Envelope::from_base64(
        e["ephemeralPubkey"].as_str().unwrap(),
        e["nonce"].as_str().unwrap(),
        e["ciphertext"].as_str().unwrap(),
    )
    .unwrap();
    String::from_utf8(open_envelope(secret, &env).expect("opens with the key")).unwrap()
}

/// The newest chat completion whose system prompt starts with `prefix` (the background
/// scorer sends its own completions for each incoming message too).
pub(crate) fn last_with_prompt(ai: &AiStandIn, prefix: &str) -> standin::Recorded {
    ai.completions()
        .into_iter()
        .rev()
        .find(|r| {
            r.body["messages"][0]["content"]
                .as_str()
                .unwrap_or("")
                .starts_with(prefix)
        })
        .unwrap_or_else(|| panic!("no completion with a {prefix:?} prompt"))
}

const TALK: [&str; 5] = [
    "hi there",
    "ok",
    "Can you pay the invoice before Friday?",
    "sure",
    "thanks",
];

#[tokio::test]
async fn without_ai_summaries_are_extractive_search_is_keyword_and_translation_is_503() {
    let app = TestApp::start_with_mail().await;
    let me = app.sign_up("ai.none").await;
    let jwt = me.access_token.clone();
    let (room, _bob) = room_with(&me, &TALK).await;
    wait_for_results(&app, &jwt, "q=thanks", 1).await;

    let s = expect_json(
        post(&app, &jwt, "/api/ai/summarize", json!({"roomId": room})).await,
        200,
    )
    .await;
    assert_eq!(s["model"], "extractive", "{s}");
    assert_eq!(s["messageCount"], 5);
    let summary = s["summary"].as_str().unwrap();
    assert!(
        summary.contains("Can you pay the invoice before Friday?"),
        "{s}"
    );
    assert_eq!(summary.lines().count(), 1, "one of five messages: {s}");

    let page = expect_json(
        post(&app, &jwt, "/api/ai/search", json!({"query": "invoice"})).await,
        200,
    )
    .await;
    assert_eq!(page["model"], "keyword");
    assert_eq!(
        page["results"][0]["snippet"],
        "Can you pay the invoice before Friday?"
    );
    assert_eq!(page["results"][0]["roomId"], room.as_str());

    expect_error(
        post(
            &app,
            &jwt,
            "/api/ai/translate",
            json!({"text": "Hallo", "targetLanguage": "en"}),
        )
        .await,
        503,
        "ai_not_configured",
    )
    .await;

    // Bad input is 400 before anything else; unknown rooms 404.
    for (path, body) in [
        ("/api/ai/summarize", json!({})),
        (
            "/api/ai/summarize",
            json!({"roomId": room, "threadId": "t"}),
        ),
        (
            "/api/ai/summarize",
            json!({"roomId": room, "since": "soon"}),
        ),
        ("/api/ai/translate", json!({"targetLanguage": "en"})),
        (
            "/api/ai/translate",
            json!({"text": "x", "messageId": "m", "targetLanguage": "en"}),
        ),
        (
            "/api/ai/translate",
            json!({"text": "x", "targetLanguage": "<script>"}),
        ),
        ("/api/ai/search", json!({"query": "  "})),
        ("/api/ai/search", json!({"query": "x", "limit": 51})),
    ] {
        expect_error(post(&app, &jwt, path, body).await, 400, "invalid_request").await;
    }
    expect_error(
        post(
            &app,
            &jwt,
            "/api/ai/summarize",
            json!({"roomId": "!nope:localhost"}),
        )
        .await,
        404,
        "not_found",
    )
    .await;

    // Personal tokens: AI features are not on their allowlist.
    let token = personal_token(&app, &me).await;
    for path in ["/api/ai/summarize", "/api/ai/translate", "/api/ai/search"] {
        expect_error(
            post(&app, &token, path, json!({"roomId": room})).await,
            403,
            "forbidden_for_api_token",
        )
        .await;
    }

    // With a registered key the summary is sealed to it.
    let secret = register_key(&app, &me).await;
    let s = expect_json(
        post(&app, &jwt, "/api/ai/summarize", json!({"roomId": room})).await,
        200,
    )
    .await;
    assert!(s.get("summary").is_none(), "{s}");
    assert_eq!(open_text(&secret, &s["encryptedSummary"]), summary);
}

#[tokio::test]
async fn against_an_openai_stand_in_requests_are_minimal_and_answers_sealed() {
    let ai = AiStandIn::start(Answer::Text("Bob asked for the invoice to be paid.".into())).await;
    let app = TestApp::start_with_mail_and(ai.config_section()).await;
    let me = app.sign_up("ai.standin").await;
    let jwt = me.access_token.clone();
    let (room, bob) = room_with(
        &me,
        &[
            "my car broke down at the garage",
            "the puppy needs a walk",
            "let's get pizza for dinner",
            "please pay the invoice",
        ],
    )
    .await;
    wait_for_results(&app, &jwt, "q=invoice", 1).await;
    a_summary_sends_only_the_text_with_labels(&app, &ai, &jwt, &room, &bob).await;
    a_translation_sends_only_the_text(&app, &ai, &jwt).await;
    let (message_id, embedded) = search_by_meaning_finds_the_nearest(&app, &ai, &jwt).await;
    keyword_hits_merge_in_and_vectors_are_sealed_once(&app, &ai, &jwt, embedded).await;
    upstream_failures_are_502(&app, &ai, &jwt, &room, &message_id).await;
    answers_are_sealed_to_a_registered_key(&app, &ai, &me, &message_id).await;
}

/// Summary: the conversation's text with senders as labels, nothing else.
async fn a_summary_sends_only_the_text_with_labels(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
    room: &str,
    bob: &MatrixUser,
) {
    let s = expect_json(
        post(app, jwt, "/api/ai/summarize", json!({"roomId": room})).await,
        200,
    )
    .await;
    assert_eq!(s["summary"], "Bob asked for the invoice to be paid.", "{s}");
    assert_eq!(s["model"], standin::MODEL);
    assert_eq!(s["messageCount"], 4);
    let req = last_with_prompt(ai, "You summarize");
    assert_eq!(
        req.authorization.as_deref(),
        Some(format!("Bearer {}", standin::API_KEY).as_str())
    );
    assert_eq!(req.body["model"], standin::MODEL);
    let sent = req.body["messages"][1]["content"].as_str().unwrap();
    assert_eq!(
        sent,
        "p1: my car broke down at the garage\np1: the puppy needs a walk\n\
         p1: let's get pizza for dinner\np1: please pay the invoice"
    );
    assert!(
        !sent.contains(&bob.user_id) && !sent.contains('@'),
        "{sent}"
    );
}

/// Translation: only the text, JSON mode.
async fn a_translation_sends_only_the_text(app: &TestApp, ai: &AiStandIn, jwt: &str) {
    ai.set_answer(Answer::Text(
        json!({"translation": "Hello", "detectedLanguage": "de"}).to_string(),
    ));
    let t = expect_json(
        post(
            app,
            jwt,
            "/api/ai/translate",
            json!({"text": "Hallo", "targetLanguage": "en"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        t,
        json!({"translation": "Hello", "detectedLanguage": "de", "model": standin::MODEL})
    );
    let req = last_with_prompt(ai, "You translate");
    assert_eq!(req.body["response_format"]["type"], "json_object");
    assert_eq!(
        req.user_message(),
        json!({"targetLanguage": "en", "text": "Hallo"})
    );
}

/// Search by meaning: "automobile" is in no message; the car message is nearest; the
/// messages and the query are embedded. Returns the car message's id and how many
/// embedding requests were made.
async fn search_by_meaning_finds_the_nearest(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
) -> (String, usize) {
    let page = expect_json(
        post(app, jwt, "/api/ai/search", json!({"query": "automobile"})).await,
        200,
    )
    .await;
    assert_eq!(page["model"], standin::MODEL, "{page}");
    assert_eq!(
        page["results"][0]["snippet"], "my car broke down at the garage",
        "{page}"
    );
    let message_id = page["results"][0]["id"].as_str().unwrap().to_owned();
    let embeds = ai.requests_to("/v1/embeddings");
    let inputs: Vec<&str> = embeds
        .iter()
        .flat_map(|r| {
            r.body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
        })
        .collect();
    assert!(
        inputs.contains(&"please pay the invoice") && inputs.contains(&"automobile"),
        "{inputs:?}"
    );
    (message_id, embeds.len())
}

/// Keyword hits merge in: the invoice message ranks first for "invoice"; vectors are
/// stored, sealed, once per message (only the query is embedded again).
async fn keyword_hits_merge_in_and_vectors_are_sealed_once(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
    embedded: usize,
) {
    let page = expect_json(
        post(
            app,
            jwt,
            "/api/ai/search",
            json!({"query": "invoice", "limit": 2}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        page["results"][0]["snippet"], "please pay the invoice",
        "{page}"
    );
    assert_eq!(page["results"].as_array().unwrap().len(), 2);
    // Vectors are stored, sealed, once per message.
    let db = rusqlite::Connection::open(app.data_dir().join("switchboard.db")).unwrap();
    let (n, lens): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), MIN(length(vector_enc)) FROM search_vectors",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(n, 4);
    assert!(lens > 5 * 4, "sealed: nonce and tag around the floats");
    assert_eq!(
        ai.requests_to("/v1/embeddings").len(),
        embedded + 1,
        "only the query is embedded again"
    );
}

/// Upstream failures are 502 ai_unavailable.
async fn upstream_failures_are_502(
    app: &TestApp,
    ai: &AiStandIn,
    jwt: &str,
    room: &str,
    message_id: &str,
) {
    ai.set_embeddings_status(Some(500));
    expect_error(
        post(app, jwt, "/api/ai/search", json!({"query": "dog"})).await,
        502,
        "ai_unavailable",
    )
    .await;
    ai.set_answer(Answer::Status(500));
    expect_error(
        post(app, jwt, "/api/ai/summarize", json!({"roomId": room})).await,
        502,
        "ai_unavailable",
    )
    .await;
    expect_error(
        post(
            app,
            jwt,
            "/api/ai/translate",
            json!({"messageId": message_id, "targetLanguage": "de"}),
        )
        .await,
        502,
        "ai_unavailable",
    )
    .await;
}

/// With a registered key, text answers are sealed to it.
async fn answers_are_sealed_to_a_registered_key(
    app: &TestApp,
    ai: &AiStandIn,
    me: &Session,
    message_id: &str,
) {
    let jwt = &me.access_token;
    let secret = register_key(app, me).await;
    ai.set_answer(Answer::Text(
        json!({"translation": "Mein Auto ist kaputt", "detectedLanguage": "en"}).to_string(),
    ));
    let t = expect_json(
        post(
            app,
            jwt,
            "/api/ai/translate",
            json!({"messageId": message_id, "targetLanguage": "German"}),
        )
        .await,
        200,
    )
    .await;
    assert!(t.get("translation").is_none(), "{t}");
    assert_eq!(
        open_text(&secret, &t["encryptedTranslation"]),
        "Mein Auto ist kaputt"
    );
    assert_eq!(
        last_with_prompt(ai, "You translate").user_message()["text"],
        "my car broke down at the garage"
    );
}
