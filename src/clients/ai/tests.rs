use super::*;

const CATEGORIES: &[&str] = &[
    "urgent", "mention", "question", "media", "direct", "general",
];

fn completion(content: &str) -> Vec<u8> {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
    })
    .to_string()
    .into_bytes()
}

#[test]
fn a_good_answer_becomes_the_score() {
    let body = completion(r#"{"importance": 0.8125, "category": "question", "isQuestion": true}"#);
    assert_eq!(
        parse_completion(&body, CATEGORIES).unwrap(),
        Verdict {
            importance: 0.813,
            category: "question",
            is_question: true,
        }
    );
    let fenced =
        "```json\n{\"importance\": 0.2, \"category\": \"Media\", \"isQuestion\": false}\n```";
    let s = parse_verdict(fenced, CATEGORIES).unwrap();
    assert_eq!((s.importance, s.category), (0.2, "media"));
}

#[test]
fn importance_is_clamped_to_zero_and_one() {
    let high = parse_verdict(
        r#"{"importance": 7, "category": "urgent", "isQuestion": false}"#,
        CATEGORIES,
    );
    assert_eq!(high.unwrap().importance, 1.0);
    let low = parse_verdict(
        r#"{"importance": -0.5, "category": "general", "isQuestion": false}"#,
        CATEGORIES,
    );
    assert_eq!(low.unwrap().importance, 0.0);
}

#[test]
fn an_unknown_category_is_an_error() {
    let e = parse_verdict(
        r#"{"importance": 0.5, "category": "spam", "isQuestion": false}"#,
        CATEGORIES,
    )
    .unwrap_err();
    assert!(
        matches!(&e, AiError::Malformed(m) if m.contains("spam")),
        "{e}"
    );
}

#[test]
fn malformed_answers_are_errors() {
    for content in [
        "not json at all",
        r#"{"importance": "high", "category": "urgent", "isQuestion": false}"#,
        r#"{"importance": 0.5, "category": "urgent"}"#,
        r#"[0.5, "urgent", false]"#,
        "",
    ] {
        assert!(
            matches!(
                parse_verdict(content, CATEGORIES),
                Err(AiError::Malformed(_))
            ),
            "{content:?}"
        );
    }
    for body in [
        b"<html>oops</html>".to_vec(),
        json!({"choices": []}).to_string().into_bytes(),
        json!({"choices": [{"message": {"content": null}}]})
            .to_string()
            .into_bytes(),
    ] {
        assert!(matches!(
            parse_completion(&body, CATEGORIES),
            Err(AiError::Malformed(_))
        ));
    }
}

#[test]
fn the_request_names_the_model_and_asks_for_json() {
    let facts = ScoreRequest {
        text: "are you coming?",
        msgtype: "m.text",
        is_direct: true,
        mentions_reader: false,
        categories: CATEGORIES,
    };
    let body = request_body("llama3.1", &facts);
    assert_eq!(body["model"], "llama3.1");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["messages"][0]["role"], "system");
    let user: Value =
        serde_json::from_str(body["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        user,
        json!({"text": "are you coming?", "msgtype": "m.text", "directChat": true, "mentionsReader": false})
    );
}

#[test]
fn error_bodies_are_shortened_for_the_log() {
    assert_eq!(snippet(b"  "), "(empty body)");
    assert_eq!(snippet("é".repeat(300).as_bytes()).chars().count(), 201);
}
