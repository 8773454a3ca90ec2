//! Unit tests of the importance heuristic.

use super::*;

fn reader() -> Reader {
    Reader::new("@sb_alice:example.org", Some("Alice Smith"))
}

fn facts<'a>(body: &'a str) -> MessageFacts<'a> {
    MessageFacts {
        body,
        msgtype: "m.text",
        is_mine: false,
        is_direct: false,
        mentioned_ids: &[],
    }
}

#[test]
fn a_plain_group_message_is_general_with_the_base_score() {
    let s = score(&reader(), &facts("lunch was nice"));
    assert_eq!(s.category, "general");
    assert_eq!(s.importance, BASE);
    assert!(!s.is_question);
}

#[test]
fn own_messages_score_zero() {
    let mut f = facts("URGENT: what now?");
    f.is_mine = true;
    let s = score(&reader(), &f);
    assert_eq!(s.importance, 0.0);
    assert!(s.is_question);
}

#[test]
fn questions_are_detected_by_question_mark_or_leading_word() {
    assert!(is_question("are you coming"));
    assert!(is_question("dinner at 8?"));
    assert!(is_question("  How's it going"));
    assert!(!is_question("this is fine"));
    assert!(!is_question("island trip"));
    let s = score(&reader(), &facts("Where are you"));
    assert_eq!(s.category, "question");
    assert!(s.is_question);
}

#[test]
fn mentions_match_the_id_localpart_or_display_name_as_words() {
    for body in [
        "hey @sb_alice:example.org look",
        "ping sb_alice",
        "thanks alice smith!",
        "ALICE SMITH, hi",
    ] {
        assert_eq!(score(&reader(), &facts(body)).category, "mention", "{body}");
    }
    for body in ["malice smithers", "sb_alicex"] {
        assert_ne!(score(&reader(), &facts(body)).category, "mention", "{body}");
    }
    let ids = ["@sb_alice:example.org"];
    let mut f = facts("see this");
    f.mentioned_ids = &ids;
    assert_eq!(score(&reader(), &f).category, "mention");
}

#[test]
fn urgency_words_dominate_the_category_and_scores_are_capped() {
    let mut f = facts("Alice Smith, urgent: can you check the deadline asap?");
    f.is_direct = true;
    let s = score(&reader(), &f);
    assert_eq!(s.category, "urgent");
    assert_eq!(s.importance, 1.0);
}

#[test]
fn direct_chats_and_media_raise_the_score() {
    let mut f = facts("hi");
    f.is_direct = true;
    let direct = score(&reader(), &f);
    assert_eq!(direct.category, "direct");
    assert!(direct.importance > BASE);
    let mut m = facts("photo.jpg");
    m.msgtype = "m.image";
    assert_eq!(score(&reader(), &m).category, "media");
}

#[test]
fn room_importance_is_the_max_unread_or_the_direct_baseline() {
    let fresh = |max_importance| {
        Some(Unread {
            max_importance,
            waiting_secs: 60,
        })
    };
    assert_eq!(room_importance(false, None), 0.0);
    assert_eq!(room_importance(true, None), DIRECT_BASELINE);
    assert_eq!(room_importance(true, fresh(0.9)), 0.9);
    assert_eq!(room_importance(true, fresh(0.1)), DIRECT_BASELINE);
}

#[test]
fn unread_messages_gain_up_to_0_2_as_they_wait_from_1_to_24_hours() {
    let waited = |secs| {
        room_importance(
            false,
            Some(Unread {
                max_importance: 0.5,
                waiting_secs: secs,
            }),
        )
    };
    assert_eq!(waited(0), 0.5);
    assert_eq!(waited(AGE_FROM_SECS), 0.5);
    assert_eq!(
        waited(AGE_FROM_SECS + (AGE_FULL_SECS - AGE_FROM_SECS) / 2),
        0.6
    );
    assert_eq!(waited(AGE_FULL_SECS), 0.7);
    assert_eq!(waited(30 * AGE_FULL_SECS), 0.7, "no more after a day");
    let urgent_and_old = Some(Unread {
        max_importance: 0.95,
        waiting_secs: AGE_FULL_SECS,
    });
    assert_eq!(room_importance(true, urgent_and_old), 1.0, "capped");
    // A quiet direct chat keeps its baseline; nothing unread means nothing ages.
    assert_eq!(room_importance(true, None), DIRECT_BASELINE);
}
