//! Edits and redactions: they change the stored original, never add a row.

use super::*;

#[test]
fn an_edit_rewrites_the_original_and_adds_no_row() {
    let mut f = Fixture::new();
    f.ingest(joined("s1", ROOM, vec![], vec![text("$1", BOB, 1, "helo")]));
    let edit = json!({"type": "m.room.message", "event_id": "$e", "sender": BOB, "origin_server_ts": 2,
        "content": {"msgtype": "m.text", "body": "* hello?", "m.new_content": {"msgtype": "m.text", "body": "hello?"},
                    "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}});
    let out = f.ingest(joined("s2", ROOM, vec![], vec![edit]));
    assert!(out.new_messages.is_empty());
    assert_eq!(out.updated_messages, 1);
    assert_eq!(f.message_count(), 1);
    let (row, content) = f.message("$1");
    assert!(row.edited && row.is_question);
    assert_eq!(content.body, "hello?");
    assert_eq!(content.content["body"], "hello?");
}

#[test]
fn an_edit_by_someone_else_is_ignored() {
    let mut f = Fixture::new();
    f.ingest(joined("s1", ROOM, vec![], vec![text("$1", BOB, 1, "mine")]));
    let edit = json!({"type": "m.room.message", "event_id": "$e", "sender": "@eve:test", "origin_server_ts": 2,
        "content": {"body": "* pwned", "m.new_content": {"msgtype": "m.text", "body": "pwned"},
                    "m.relates_to": {"rel_type": "m.replace", "event_id": "$1"}}});
    f.ingest(joined("s2", ROOM, vec![], vec![edit]));
    let (row, content) = f.message("$1");
    assert!(!row.edited);
    assert_eq!(content.body, "mine");
}

#[test]
fn a_redaction_empties_the_original_and_marks_it_redacted() {
    let mut f = Fixture::new();
    f.ingest(joined(
        "s1",
        ROOM,
        vec![],
        vec![text("$1", BOB, 1, "secret")],
    ));
    let redaction = json!({"type": "m.room.redaction", "event_id": "$r", "sender": BOB,
                           "origin_server_ts": 2, "redacts": "$1", "content": {}});
    let out = f.ingest(joined("s2", ROOM, vec![], vec![redaction]));
    assert_eq!(out.updated_messages, 1);
    let (row, content) = f.message("$1");
    assert!(row.redacted);
    assert_eq!(
        content,
        MessageContent {
            body: String::new(),
            content: json!({})
        }
    );
    // Room version 11 puts `redacts` in the content.
    f.ingest(joined("s3", ROOM, vec![], vec![text("$2", BOB, 3, "x")]));
    let v11 = json!({"type": "m.room.redaction", "event_id": "$r2", "sender": BOB,
                     "origin_server_ts": 4, "content": {"redacts": "$2"}});
    f.ingest(joined("s4", ROOM, vec![], vec![v11]));
    assert!(f.message("$2").0.redacted);
}

#[test]
fn a_message_that_arrives_redacted_is_stored_empty() {
    let mut f = Fixture::new();
    let ev = json!({"type": "m.room.message", "event_id": "$1", "sender": BOB, "origin_server_ts": 1,
                    "content": {}, "unsigned": {"redacted_because": {"type": "m.room.redaction"}}});
    f.ingest(joined("s1", ROOM, vec![], vec![ev]));
    let (row, content) = f.message("$1");
    assert!(row.redacted);
    assert_eq!(content.body, "");
}
