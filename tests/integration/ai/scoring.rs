//! AI scoring (`[ai]`) against the real binary, the test Synapse and a stand-in
//! OpenAI-compatible service (`common::ai`): a second Matrix user writes to the user, the
//! sync worker stores the heuristic score, and the background scorer replaces it with the
//! AI's answer, or keeps it when the service fails.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::ai::{self as standin, AiStandIn, Answer};
use crate::common::matrix::{self as mx, MatrixUser};
use crate::common::*;

/// The heuristic score of a plain group message (`importance::BASE`).
const HEURISTIC_GROUP: f64 = 0.1;

fn me_on_matrix(s: &Session) -> MatrixUser {
    MatrixUser::from_token(
        s.user["matrixUserId"].as_str().expect("matrixUserId"),
        s.matrix_access_token.as_deref().expect("matrix token"),
    )
}

/// A group room the user created with a second Matrix user in it.
async fn room_with_bob(me: &Session, prefix: &str) -> (MatrixUser, String) {
    let bob = mx::register(prefix).await;
    let room = me_on_matrix(me)
        .create_room(Some("ai test"), &[&bob.user_id], false)
        .await;
    bob.join(&room).await;
    (bob, room)
}

async fn stats(app: &TestApp, me: &Session) -> Value {
    expect_json(
        app.get_auth("/api/messages/stats", &me.access_token).await,
        200,
    )
    .await["stats"]
        .clone()
}

/// Polls `probe` every 200 ms until it returns `Some`, failing after `secs` seconds.
async fn eventually<T, F, Fut>(secs: u64, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(last) => assert!(Instant::now() < deadline, "{what}; last seen: {last}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The importance of `room` in the native room list sorted by importance.
async fn room_importance(app: &TestApp, me: &Session, room: &str) -> Option<f64> {
    let list = expect_json(
        app.get_auth("/api/rooms?sortBy=importance", &me.access_token)
            .await,
        200,
    )
    .await;
    list["rooms"]
        .as_array()?
        .iter()
        .find(|r| r["roomId"] == room)?["importance"]
        .as_f64()
}

#[tokio::test]
async fn incoming_messages_are_rescored_by_the_ai_service() {
    let ai = AiStandIn::start(Answer::score(0.92, "urgent", true)).await;
    let app = TestApp::start_with_mail_and(ai.config_section()).await;
    let health = expect_json(app.get("/health").await, 200).await;
    assert_eq!(health["checks"]["ai"]["status"], "ok", "{health}");

    let me = app.sign_up("ai.score").await;
    let (bob, room) = room_with_bob(&me, "aibob").await;
    me_on_matrix(&me).send_text(&room, "on my way").await;
    let text = "lunch was nice";
    bob.send_text(&room, text).await;

    // The stand-in is asked with the configured model and key, about this message.
    let request = eventually(15, "no chat completion reached the AI service", || async {
        ai.completions()
            .into_iter()
            .next()
            .ok_or_else(|| format!("{:?}", ai.requests()))
    })
    .await;
    assert_eq!(
        request.authorization.as_deref(),
        Some(format!("Bearer {}", standin::API_KEY).as_str())
    );
    assert_eq!(request.body["model"], standin::MODEL);
    assert_eq!(request.body["temperature"], 0);
    assert_eq!(request.body["response_format"]["type"], "json_object");
    assert_eq!(request.body["messages"][0]["role"], "system");
    let asked = request.user_message();
    assert_eq!(asked["text"], text, "{}", request.body);
    assert_eq!(asked["directChat"], false);
    assert_eq!(asked["mentionsReader"], false);

    // The stored score is the AI's, not the heuristic's (0.1, general, no question).
    // The user's own message (0, general) is not rescored: the average is (0 + 0.92) / 2.
    let s = eventually(15, "the AI score was not stored", || async {
        let s = stats(&app, &me).await;
        if s["avg_importance"]
            .as_f64()
            .is_some_and(|avg| (avg - 0.46).abs() < 1e-9)
        {
            Ok(s)
        } else {
            Err(s.to_string())
        }
    })
    .await;
    assert_eq!(s["total_messages"], 2, "{s}");
    assert_eq!(s["high_importance_count"], 1, "{s}");
    assert_eq!(s["questions_count"], 1, "{s}");
    assert_eq!(s["all_categories"], json!(["general", "urgent"]), "{s}");
    // The room's importance follows its (unread) message.
    eventually(10, "the room importance did not follow", || async {
        match room_importance(&app, &me, &room).await {
            Some(i) if (i - 0.92).abs() < 1e-9 => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    // The user's own message was never sent to the AI service.
    assert_eq!(ai.completions().len(), 1, "{:?}", ai.completions());
}

#[tokio::test]
async fn heuristic_scores_stay_when_the_ai_service_fails() {
    let ai = AiStandIn::start(Answer::Status(500)).await;
    let app = TestApp::start_with_mail_and(ai.config_section()).await;
    let me = app.sign_up("ai.down").await;
    let (bob, room) = room_with_bob(&me, "aidown").await;

    bob.send_text(&room, "lunch was nice").await;
    eventually(15, "the AI service was not asked", || async {
        match ai.completions().len() {
            0 => Err(format!("{:?}", ai.requests())),
            n => Ok(n),
        }
    })
    .await;
    ai.set_answer(Answer::Garbage);
    bob.send_text(&room, "see you tomorrow").await;
    eventually(15, "the AI service was not asked again", || async {
        let asked = ai.completions();
        if asked
            .iter()
            .any(|r| r.user_message()["text"] == "see you tomorrow")
        {
            Ok(())
        } else {
            Err(format!("{} completions", asked.len()))
        }
    })
    .await;
    // Positive marker: the service answers again, and a message sent after the garbage
    // answer (in another room) gets its AI score stored; a wrongly stored answer for the
    // garbage one would have been stored before.
    ai.set_answer(Answer::score(0.92, "urgent", true));
    let (carol, other_room) = room_with_bob(&me, "aimarker").await;
    carol.send_text(&other_room, "the marker").await;
    let s = eventually(15, "the marker's AI score was not stored", || async {
        let s = stats(&app, &me).await;
        match s["high_importance_count"].as_i64() {
            Some(1) => Ok(s),
            _ => Err(s.to_string()),
        }
    })
    .await;
    // The two failed ones kept the heuristic 0.1 (general, no question); the marker is 0.92.
    assert_eq!(s["total_messages"], 3, "{s}");
    let avg = s["avg_importance"].as_f64().unwrap();
    let want = (2.0 * HEURISTIC_GROUP + 0.92) / 3.0;
    assert!((avg - want).abs() < 1e-9, "{s}");
    assert_eq!(s["questions_count"], 1, "{s}");
    assert_eq!(s["all_categories"], json!(["general", "urgent"]), "{s}");
    let importance = room_importance(&app, &me, &room).await;
    assert_eq!(importance, Some(HEURISTIC_GROUP));

    // Both messages are listed; one warning for the run of failures, no 5xx anywhere.
    let token = personal_token(&app, &me).await;
    let page = expect_json(
        app.get_auth(
            &format!(
                "/api/messages?roomId={}",
                switchboard::clients::matrix::encode(&room)
            ),
            &token,
        )
        .await,
        200,
    )
    .await;
    let texts: Vec<&str> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["text"].as_str())
        .collect();
    assert_eq!(texts, ["see you tomorrow", "lunch was nice"], "{page}");
    let log = app.log();
    assert_eq!(log.matches("AI scoring failed").count(), 1, "{log}");
}
